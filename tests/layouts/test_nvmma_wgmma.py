"""wgmma descriptors against the shared layouts: every operand element is read where ``nvmma_shared`` put it.

No GPU needed: ``operand_address`` models, from the PTX ISA's canonical layouts, which shared
byte a ``wgmma.mma_async`` reads for each element of its A and B slices, given a descriptor.
For every warpgroup, instruction and element, the descriptor the backend builds must land on
the byte where the buffer's ``#nvmma_shared`` layout stores that element; and every
accumulator register must hold the element the PTX D fragment says.
"""

from __future__ import annotations

import numpy as np
import pytest

from tilelab.compiler.backends.cuda.lower_shared import buffer_places
from tilelab.compiler.backends.cuda.lower_wgmma import (
    Descriptor,
    Operand,
    a_fragment_registers,
    operand_address,
    operand_of,
    plan,
    swizzle_address,
    warpgroup_offsets,
)
from tilelab.compiler.ir.types import f16, tensor
from tilelab.compiler.layouts import WARP, blocked, needed_indices, nvmma_shared, registers_holding
from tilelab.compiler.layouts.distributed import wgmma_a_fragment, wgmma_accumulator
from tilelab.compiler.passes.accelerate_dot import operand_shared

BASE = 3 * 1024  # a buffer start aligned to every swizzle repeat


def warp_offsets(bits: list[int], warp: int) -> int:
    return sum(v for b, v in enumerate(bits) if warp >> b & 1)


def addresses(desc: Descriptor, mn_major: bool, mn: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``operand_address`` of every f16 element ``(mn[i], k[i])``."""
    return np.vectorize(lambda i, j: operand_address(desc, mn_major, 2, i, j))(mn, k)


def check_dot(m: int, n: int, k: int, num_warps: int, groups_m: int, b_k_major: bool = False):
    """Build the plan of an ``m x n x k`` f16 dot and check every descriptor and register.

    ``b_k_major``: B loaded with K fastest (``blocked`` order ``[0, 1]``), stored column-major.
    """
    groups_n = num_warps // 4 // groups_m
    instr_n = min(256, n // groups_n)
    acc = wgmma_accumulator([m, n], [4 * groups_m, groups_n], instr_n)
    a_layout = operand_shared(tensor([m, k], f16))
    b_tile = tensor([k, n], f16)
    if b_k_major:
        b_tile = b_tile.with_layout(blocked([k, n], [8, 1], [16, 2], [1, num_warps], [0, 1]))
    b_layout = operand_shared(b_tile, instr_n)
    assert b_layout.params["order"] == ((0, 1) if b_k_major else (1, 0))
    a, b = operand_of(a_layout, (m, k), 2, 0), operand_of(b_layout, (k, n), 2, 1)
    assert b.k_major == b_k_major
    a_places, b_places = buffer_places(a_layout), buffer_places(b_layout)
    a_bits, b_bits = warpgroup_offsets(acc, a, b)
    instructions = plan(acc, a, b)
    assert len(instructions) == (k // 16) * (m // 64 // groups_m) * (n // instr_n // groups_n)
    mn, kk = np.meshgrid(np.arange(64), np.arange(16), indexing="ij")
    for warp in range(0, num_warps, 4):
        wg_row, wg_col = (int(x) for x in acc.apply(warp=warp))
        for ins in instructions:
            r0, c0 = ins.origin[0] + wg_row, ins.origin[1] + wg_col
            da = a.descriptor(BASE + warp_offsets(a_bits, warp) + ins.a_offset)
            got = addresses(da, False, mn, kk)
            want = BASE + 2 * a_places[(r0 + mn) * k + ins.k0 + kk]
            np.testing.assert_array_equal(got, want)
            nn, kb = np.meshgrid(np.arange(instr_n), np.arange(16), indexing="ij")
            db = b.descriptor(BASE + warp_offsets(b_bits, warp) + ins.b_offset)
            got = addresses(db, not b_k_major, nn, kb)
            want = BASE + 2 * b_places[(ins.k0 + kb) * n + c0 + nn]
            np.testing.assert_array_equal(got, want)
            check_fragment(acc, ins, warp, (r0, c0))


def check_fragment(acc, ins, warp: int, origin: tuple[int, int]):
    """Register ``regs[i]`` of lane ``t`` holds the D element the PTX fragment of m64nNk16 names."""
    lanes = np.arange(32)
    for i, reg in enumerate(ins.regs):
        for w in range(4):  # warp w of the warpgroup holds rows 16 * w ...
            got = acc.apply(register=reg, lane=lanes, warp=warp + w + np.zeros_like(lanes))
            row = origin[0] + 16 * w + lanes // 4 + 8 * (i >> 1 & 1)
            col = origin[1] + 8 * (i >> 2) + 2 * (lanes % 4) + (i & 1)
            np.testing.assert_array_equal(got[:, 0], row)
            np.testing.assert_array_equal(got[:, 1], col)


@pytest.mark.parametrize(
    "m, n, k, num_warps, groups_m",
    [
        (64, 64, 32, 4, 1),  # 64B swizzle for A, 128B for B
        (128, 128, 32, 8, 2),  # the benchmark: two warpgroups along M
        (128, 128, 64, 4, 1),  # M repeats in registers; 128B A
        (64, 128, 16, 8, 1),  # two warpgroups along N (n64 each); 32B A
        (128, 256, 32, 8, 2),  # n256 instructions
        (64, 32, 128, 4, 1),  # A rows of two atoms; 64B B
        (64, 16, 16, 4, 1),  # the narrowest: n16, 32B swizzles
    ],
)
def test_descriptors_address_every_operand_element(m, n, k, num_warps, groups_m):
    check_dot(m, n, k, num_warps, groups_m)


@pytest.mark.parametrize(
    "m, n, k, num_warps, groups_m",
    [
        (128, 64, 128, 8, 2),  # attention's q @ k: K = head dim, two atoms per stored row
        (128, 128, 32, 8, 2),  # 64B rows along K
        (64, 128, 16, 8, 1),  # two warpgroups along N; 32B rows
        (64, 256, 64, 4, 1),  # n256 instructions over one 128B atom
    ],
)
def test_k_major_b_descriptors_address_every_element(m, n, k, num_warps, groups_m):
    check_dot(m, n, k, num_warps, groups_m, b_k_major=True)


def test_descriptor_encoding_round_trips():
    d = Descriptor(start=0x1230, lbo=4096, sbo=1024, swizzle=64)
    assert Descriptor.decode(d.encode()) == d
    assert d.encode() >> 62 == 2 and (d.encode() >> 32 & 0x3FFF) == 64


@pytest.mark.parametrize("swizzle", [32, 64, 128])
def test_swizzle_address_matches_the_nvmma_layout(swizzle):
    """The hardware's address-bit XOR is the layout's row-phase XOR, for a buffer on a repeat boundary."""
    width = swizzle // 2
    layout = nvmma_shared([32, width], 2, swizzle)
    places = buffer_places(layout)
    rows, cols = np.meshgrid(np.arange(32), np.arange(width), indexing="ij")
    canonical = BASE + rows * swizzle + cols * 2
    np.testing.assert_array_equal(
        np.vectorize(swizzle_address)(canonical, swizzle), BASE + 2 * places[rows * width + cols]
    )


def test_misaligned_instruction_would_read_other_bytes():
    """The check can fail: shifting A's descriptor by one 16-byte chunk reads the wrong elements."""
    acc = wgmma_accumulator([64, 64], [4, 1], 64)
    a = operand_of(operand_shared(tensor([64, 64], f16)), (64, 64), 2, 0)
    places = buffer_places(operand_shared(tensor([64, 64], f16)))
    d = a.descriptor(BASE + 16)
    assert operand_address(d, False, 2, 1, 0) != BASE + 2 * places[1 * 64]
    assert len(acc.in_bases(WARP)) == 2


# --------------------------------------------------------------------------- A from registers


def isa_a_fragment(warp: int, lane: int, i: int) -> tuple[int, int]:
    """``(row, col)`` of A element ``a_i`` (i < 8) of a 64 x 16 slice, for one thread of a warpgroup.

    PTX ISA, "Register Fragments for wgmma .m64nNk16, A": ``row = 16 * (warp % 4) + lane / 4``,
    plus 8 for ``a2, a3, a6, a7``; ``col = 2 * (lane % 4) + (i % 2)``, plus 8 for ``a4..a7``.
    """
    row = 16 * (warp % 4) + lane // 4 + 8 * (i >> 1 & 1)
    col = 2 * (lane % 4) + (i & 1) + 8 * (i >> 2)
    return row, col


@pytest.mark.parametrize(
    "m, n, k, num_warps, groups_m",
    [(64, 64, 16, 4, 1), (64, 128, 64, 4, 1), (128, 128, 64, 8, 2), (128, 64, 32, 4, 1), (64, 256, 32, 8, 1)],
)
def test_register_a_holds_the_isa_fragment_of_every_instruction(m, n, k, num_warps, groups_m):
    """For every thread and instruction, the registers packed as ``{a0..a3}`` hold the elements the ISA names.

    The instruction at accumulator rows ``r0`` and K step ``k0`` of a warpgroup ``g`` (rows
    ``64 g ..``) must find A element ``(64 g + r0 + row, k0 + col)`` in its ``a_i``.
    """
    acc = wgmma_accumulator(
        [m, n], [4 * groups_m, num_warps // 4 // groups_m], min(256, n // (num_warps // 4 // groups_m))
    )
    frag = wgmma_a_fragment(acc, k=k)
    a_stub = Operand(m, k, 2, 128)
    b_stub = Operand(k, n, 2, 128, k_major=False)
    for ins in plan(acc, a_stub, b_stub):
        regs = a_fragment_registers(frag, ins.origin[0], ins.k0)
        for warp in range(num_warps):
            for lane in range(32):
                got = frag.apply(register=regs, lane=lane, warp=warp).tolist()
                group_row = 64 * ((warp // 4) % groups_m)
                want = [isa_a_fragment(warp, lane, i) for i in range(8)]
                want = [[group_row + ins.origin[0] + r, ins.k0 + c] for r, c in want]
                assert got == want, (warp, lane, ins.origin, ins.k0)


def test_the_accumulator_converts_to_the_a_fragment_in_registers():
    """Attention's ``p`` (the first dot's accumulator, its columns the second dot's K) needs no data movement.

    Negative: warpgroups side by side split its columns, which the A fragment gives to each whole.
    """
    for acc, wanted in (
        (wgmma_accumulator([128, 64], [8, 1], 64), True),
        (wgmma_accumulator([64, 64], [4, 2], 32), False),
    ):
        nw = 1 << len(acc.in_bases(WARP))
        frag = wgmma_a_fragment(
            wgmma_accumulator([acc.shape[0], 128], acc.params["warps_per_cta"], 128 // acc.params["warps_per_cta"][1]),
            k=64,
        )
        held = registers_holding(acc, needed_indices(frag, nw, lambda i: i), nw)
        assert (held is not None) == wanted
