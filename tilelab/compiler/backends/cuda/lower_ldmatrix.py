"""Shared memory -> mma fragments with ``ldmatrix``: one instruction per four 8x8 matrices.

Why: ``ldmatrix.sync.aligned.m8n8.x4.shared.b16`` lets the 32 lanes of a warp read
four 8x8 matrices of 16-bit elements in one instruction. Lane ``8j + i`` gives the
address of row ``i`` of matrix ``j`` (16 contiguous bytes); afterwards lane ``t`` holds,
in its 32-bit register ``j``, the two elements at row ``t // 4``, columns
``2 * (t % 4)`` and ``2 * (t % 4) + 1`` of matrix ``j`` (with ``.trans``: rows
``2 * (t % 4) + {0, 1}``, column ``t // 4``). That is exactly how the ``mma.sync
m16n8k16`` fragments are laid out, so A (row-major in shared memory) comes with the
plain form and B (K rows of N) with ``.trans``, instead of one 16-bit load per element.

The plan is found and checked at compile time with numpy: each group of four 32-bit
registers of the destination layout is tried as four matrices, plain then transposed;
the group is accepted only when every row it needs is 8 adjacent, 16-byte aligned
elements of the buffer, and the per-lane row addresses are linear over GF(2) in the
lane and warp bits (so they cost a few XORs). Anything else falls back to ordinary
loads. ``CompileOptions.ldmatrix=False`` (``TILELAB_CUDA_LDMATRIX=0``) turns the path off.

``stmatrix`` (sm_90 on) is the mirror image: lane ``8j + i`` gives the address of row ``i``
of matrix ``j`` and the 32-bit register ``j`` of lane ``t`` is written to row ``t // 4``,
columns ``2 * (t % 4) + {0, 1}``. A tile stored from an mma accumulator (a matmul's f16
result on its way to coalesced global stores) holds just two adjacent elements per row in
each thread: one ``st.shared.b32`` per pair, where one ``stmatrix.x4`` writes four pairs
(the same plan, found the same way, for the stored layout).

    %a = ttg.local_load %buf : tensor<128x32xf16, #dot_op<opIdx=0, ...>>
    ->  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {r0, r1, r2, r3}, [addr];   (per 16x16 tile)
    ttg.local_store %buf, %c : tensor<128x256xf16, #wgmma<...>>
    ->  stmatrix.sync.aligned.m8n8.x4.shared.b16 [addr], {r0, r1, r2, r3};   (per 16x16 tile)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from tilelab.compiler.layouts import LANE, REGISTER, WARP, LinearLayout, flat_of, hardware_grid

from ..common.types import I32
from .context import const_i32, xor_flat
from .hooks import pair_word
from .lower_memory import from_bits, to_bits


@dataclass
class LdmatrixGroup:
    """One ``ldmatrix`` instruction: its matrices' (low, high) register pairs and per-lane row addresses."""

    pairs: list[tuple[int, int]]
    trans: bool
    base: int  # element offset of lane 0 / warp 0's row
    lane_bits: list[int]  # XORed in for each set lane bit
    warp_bits: list[int]  # XORed in for each set warp bit


def ldmatrix_enabled(lw) -> bool:
    """Whether the lowering ``lw`` takes the ``ldmatrix`` path (``CompileOptions.ldmatrix``; off: per-element loads)."""
    options = getattr(lw, "options", None)
    return options is None or options.ldmatrix


def lane_element(trans: bool, row: int, col: int) -> tuple[int, int]:
    """``(lane, half)`` that receives element ``(row, col)`` of an 8x8 matrix, ``row`` being an addressed row.

    >>> lane_element(False, 2, 5)   # plain: lane 4*2 + 5//2, the high half
    (10, 1)
    >>> lane_element(True, 2, 5)    # transposed: lane 4*5 + 2//2, the low half
    (21, 0)
    """
    if trans:
        return 4 * col + row // 2, row % 2
    return 4 * row + col // 2, col % 2


def _row_places(dst: LinearLayout, places: np.ndarray, pairs, trans: bool, num_warps: int) -> np.ndarray:
    """``out[w, j, i, c]``: buffer offset of what warp ``w`` expects at row ``i``, col ``c`` of matrix ``j``."""
    grid = hardware_grid(dst, num_warps)
    warp = grid[WARP][:, 0, 0]
    lanes = np.empty((8, 8), np.int64)
    halves = np.empty((8, 8), np.int64)
    for i in range(8):
        for c in range(8):
            lanes[i, c], halves[i, c] = lane_element(trans, i, c)
    regs = np.array(pairs)[:, halves]  # (matrix, row, col)
    args = {REGISTER: regs[None], LANE: lanes[None, None], WARP: warp[:, None, None, None]}
    coords = dst.apply(**{d: a for d, a in args.items() if d in dst.in_dims})
    flats = np.broadcast_to(flat_of(dst, coords), (num_warps, len(pairs), 8, 8))
    return places[flats]


def lane_rows(group: LdmatrixGroup, warp: int = 0) -> np.ndarray:
    """The element offset of the row each of the 32 lanes of ``warp`` names in ``group``'s instruction."""
    lanes = np.arange(32)
    addr = np.full(32, group.base)
    for b, v in enumerate(group.lane_bits):
        addr ^= ((lanes >> b) & 1) * v
    for b, v in enumerate(group.warp_bits):
        addr ^= ((warp >> b) & 1) * v
    return addr


def matrix_wavefronts(groups: list[LdmatrixGroup], elem_bytes: int) -> np.ndarray:
    """Wavefronts of warp 0's ``ldmatrix``/``stmatrix`` instructions, one per group.

    Each matrix is one phase: its 8 rows of 16 bytes, 128 bytes, one wavefront when the rows sit
    in 8 different 16-byte bank groups; rows sharing a group take a wavefront each.
    """
    out = []
    for g in groups:
        rows = lane_rows(g) * elem_bytes // 16
        waves = 0
        for j in range(len(g.pairs)):
            distinct = np.unique(rows[8 * j : 8 * j + 8])
            waves += int(np.bincount(distinct % 8, minlength=8).max())
        out.append(waves)
    return np.array(out)


def _fit_linear(addr: np.ndarray) -> tuple[int, list[int], list[int]] | None:
    """``addr[w, l] == base ^ XOR(lane bits) ^ XOR(warp bits)``: the base and the bits, or None."""
    base = int(addr[0, 0])
    lane_bits = [int(addr[0, 1 << b]) ^ base for b in range(5)]
    warp_bits = [int(addr[1 << b, 0]) ^ base for b in range(addr.shape[0].bit_length() - 1)]
    w, lane = np.arange(addr.shape[0])[:, None], np.arange(32)[None, :]
    model = np.full(addr.shape, base, np.int64)
    for bits, index in ((lane_bits, lane), (warp_bits, w)):
        for b, v in enumerate(bits):
            model ^= ((index >> b) & 1) * v
    return (base, lane_bits, warp_bits) if np.array_equal(model, addr) else None


def plan_group(dst, places, pairs, num_warps: int) -> LdmatrixGroup | None:
    """One ``ldmatrix`` for these register pairs (plain, else transposed), or None when neither fits."""
    for trans in (False, True):
        tab = _row_places(dst, places, pairs, trans, num_warps)
        rows_ok = np.all(tab == tab[..., :1] + np.arange(8)) and np.all(tab[..., 0] % 8 == 0)
        if not rows_ok:
            continue
        lane = np.arange(32)
        addr = tab[:, (lane // 8) % len(pairs), lane % 8, 0]
        fit = _fit_linear(addr)
        if fit is not None:
            return LdmatrixGroup(list(pairs), trans, *fit)
    return None


def plan_ldmatrix(dst: LinearLayout, places: np.ndarray, num_warps: int) -> list[LdmatrixGroup] | None:
    """The ``ldmatrix`` instructions that fill every register of ``dst`` from a buffer, or None.

    ``places[i]`` is the buffer offset (in 16-bit elements) of row-major element ``i``.
    Register ``2p`` and ``2p + 1`` form the 32-bit register ``p``; four of those make an ``x4``.
    """
    n = dst.in_size(REGISTER)
    if n % 2:
        return None
    pairs = [(r, r + 1) for r in range(0, n, 2)]
    per = min(4, len(pairs))
    groups = [plan_group(dst, places, pairs[g : g + per], num_warps) for g in range(0, len(pairs), per)]
    return None if any(g is None for g in groups) else groups


def _row_addresses(lw, first: int | ir.Value, groups: list[LdmatrixGroup]):
    """Each group with this lane's row address: an i32 shared-memory address and a constant byte offset.

    The offset holds the group's constant bits that no lane or warp bit sets (``xor_const``):
    written into the instruction (``[%r + 1024]``), groups share their address registers
    instead of each holding its own (a 128x256 epilogue's sixteen ``stmatrix``: one each).
    ``first`` is a constant, or an i32 value (a ring stage chosen at run time).
    """
    b = lw.b
    smem = lw.shared(ir.IntType(16), 0, private=False)
    addresses: dict[tuple, ir.Value] = {}
    first_value = first if isinstance(first, ir.Value) else const_i32(first)
    for g in groups:
        thread_bits = 0
        for flat in g.lane_bits + g.warp_bits:
            thread_bits |= flat
        overlap, rest = g.base & thread_bits, g.base & ~thread_bits
        key = (tuple(g.lane_bits), tuple(g.warp_bits), overlap)
        if key not in addresses:
            per_thread = xor_flat(b, [(lw.lane, g.lane_bits), (lw.warp, g.warp_bits)])
            index = b.add(b.xor(per_thread, const_i32(overlap)) if overlap else per_thread, first_value)
            addresses[key] = b.ptrtoint(lw.smem_elem(smem, index, ir.IntType(16), private=False), I32)
        yield g, addresses[key], 2 * rest


def emit_ldmatrix(lw, first: int | ir.Value, groups: list[LdmatrixGroup], elem) -> list:
    """The registers of the destination tile, loaded by ``groups`` from the buffer at element ``first``."""
    b = lw.b
    regs: dict[int, ir.Value] = {}
    for g, address, offset in _row_addresses(lw, first, groups):
        for (lo, hi), word in zip(g.pairs, _ldmatrix(b, address, offset, len(g.pairs), g.trans)):
            regs[lo] = from_bits(b, b.trunc(word, ir.IntType(16)), elem)
            regs[hi] = from_bits(b, b.trunc(b.lshr(word, const_i32(16)), ir.IntType(16)), elem)
    return [regs[r] for r in range(len(regs))]


def emit_stmatrix(lw, first: int | ir.Value, groups: list[LdmatrixGroup], regs: list, elem) -> None:
    """Store the registers ``regs`` of a tile (16-bit ``elem``) with ``groups`` into the buffer at element ``first``."""
    b = lw.b
    for g, address, offset in _row_addresses(lw, first, groups):
        words = []
        for lo, hi in g.pairs:
            words.append(pair_word(b, to_bits(b, regs[lo], elem), to_bits(b, regs[hi], elem)))
        _stmatrix(b, address, offset, words, g.trans)


def _stmatrix(b, address, offset: int, words: list, trans: bool) -> None:
    """``stmatrix.sync.aligned.m8n8.x{len(words)}[.trans].shared.b16 [address + offset]`` of the 32-bit ``words``."""
    count = len(words)
    ins = ", ".join(f"${i + 1}" for i in range(count))
    text = f"stmatrix.sync.aligned.m8n8.x{count}{'.trans' if trans else ''}.shared.b16 [$0+{offset}], {{{ins}}};"
    ftype = ir.FunctionType(ir.VoidType(), [I32] * (count + 1))
    b.call(ir.InlineAsm(ftype, text, ",".join(["r"] * (count + 1)) + ",~{memory}", True), [address, *words])


def _ldmatrix(b, address, offset: int, count: int, trans: bool) -> list:
    """``count`` 32-bit registers from ``ldmatrix.sync.aligned.m8n8.x{count}[.trans].shared.b16 [address + offset]``."""
    outs = ", ".join(f"${i}" for i in range(count))
    text = f"ldmatrix.sync.aligned.m8n8.x{count}{'.trans' if trans else ''}.shared.b16 {{{outs}}}, [${count}+{offset}];"
    cons = ",".join(["=r"] * count + ["r"])
    ret = I32 if count == 1 else ir.LiteralStructType([I32] * count)
    # side effects: the instruction reads shared memory, so it must stay between its barriers
    res = b.call(ir.InlineAsm(ir.FunctionType(ret, [I32]), text, cons, True), [address])
    return [res] if count == 1 else [b.extract_value(res, i) for i in range(count)]
