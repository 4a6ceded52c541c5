"""Layout conversions through shared memory move runs of adjacent elements as one vector."""

import re

import numpy as np
import pytest

import tilelab
import tilelab.language as tl
from tests.support.llvm_ir import optimized_ir
from tilelab.compiler.layouts import conversion_shared, vector_groups, vector_run


def test_four_adjacent_halves_move_as_one_64_bit_access():
    assert vector_run([0, 1, 2, 3, 64, 65, 66, 67], [4, 8], 16) == 4


def test_runs_stop_at_128_bits():
    assert vector_run(list(range(16)), [16, 32], 32) == 4


def test_negative_a_thread_offset_that_breaks_alignment_gives_scalars():
    assert vector_run([0, 1, 2, 3], [2], 16) == 2
    assert vector_run([0, 1, 2, 3], [1], 16) == 1


def test_negative_non_adjacent_registers_give_scalars():
    assert vector_run([0, 8, 16, 24], [1, 2], 16) == 1


def test_groups_of_neighbours_are_the_runs_vector_run_finds():
    assert vector_groups([0, 1, 2, 3, 64, 65, 66, 67], [4, 8], 16) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert vector_groups([0, 8, 16, 24], [1, 2], 16) == [[0], [1], [2], [3]]


def test_registers_apart_that_sit_side_by_side_move_together():
    """An mma accumulator's registers ``(r, c), (r, c+1), (r+8, c), (r+8, c+1)`` are 0, 1, 2, 3 but a buffer made
    for them may hold 0, 1 and then 4, 5 (register bit 2 at offset 2): one group of four, in buffer order."""
    consts = [0, 1, 64, 65, 2, 3, 66, 67]
    assert vector_groups(consts, [8, 16], 32) == [[0, 1, 4, 5], [2, 3, 6, 7]]
    for group in vector_groups(consts, [8, 16], 32):
        assert [consts[r] for r in group] == list(range(consts[group[0]], consts[group[0]] + 4))


def test_negative_groups_shrink_where_a_thread_or_register_offset_breaks_alignment():
    assert vector_groups([0, 1, 64, 65, 2, 3, 66, 67], [8, 2], 32) == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert vector_groups([0, 1, 66, 67, 2, 3, 64, 65], [8], 32) == [[0, 1], [2, 3], [4, 5], [6, 7]]


def test_negative_registers_not_linear_in_their_number_fall_back_to_neighbours():
    assert vector_groups([0, 1, 2, 3, 4, 5], [8], 32) == [[0, 1], [2, 3], [4, 5]]  # not a power of two
    assert vector_groups([0, 1, 2, 3, 8, 9, 12, 13], [16], 32) == [[0, 1], [2, 3], [4, 5], [6, 7]]


class _IntBuilder:
    """The two llvmlite builder calls ``xor_const`` makes, on Python ints."""

    def xor(self, a, c):
        return a ^ c.constant

    def add(self, a, c):
        return a + c.constant


def test_xor_with_constant_bits_no_thread_sets_is_an_add():
    """``per_thread ^ c`` == ``(per_thread ^ overlap) + rest`` for every thread and constant."""
    from itertools import product

    from tilelab.compiler.backends.cuda.lower_shape import xor_const

    flats = [8, 16, 512, 1024 + 8]  # per-thread bases, one overlapping another
    for picks in product([0, 1], repeat=len(flats)):
        per_thread = 0
        for on, flat in zip(picks, flats):
            per_thread ^= flat * on
        for const in (0, 1, 8, 4096, 4096 + 16 + 3, 2047, 1024):
            assert xor_const(_IntBuilder(), per_thread, flats, const) == per_thread ^ const


def test_shared_vector_loads_stay_vectors_through_o3():
    """A dot's f32 result, converted through shared memory for its store, is read back in 16-byte loads that
    LLVM's O3 keeps whole (split into scalar loads, each is asked about against every shared store before it)."""
    ck = tilelab.compile(
        f32_dot, {"a": "*f32", "b": "*f32", "c": "*f32"}, {"BM": 64, "BN": 128, "BK": 32},
        target="cuda:sm_90a", divisibility={"a": 16, "b": 16, "c": 16}, num_warps=4, num_stages=1, cache=False,
        snapshots=False,
    )  # fmt: skip
    text = optimized_ir(ck)
    shared_loads = re.findall(r"= load ([^,]+), ptr addrspace\(3\)", text)
    assert shared_loads and all(t == "<4 x i32>" for t in shared_loads), shared_loads


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_an_accumulator_crosses_shared_memory_in_16_byte_runs_of_two_rows(arch):
    """The f32 accumulator (mma.sync's or wgmma's: ``(r, c), (r, c+1), (r+8, c), (r+8, c+1)`` in registers) goes
    to the 4-column store layout through a buffer that puts those four side by side: 16-byte shared stores
    (8-byte ones in a swizzled buffer), 16-byte loads, and the global stores stay 16 bytes wide."""
    ck = tilelab.compile(
        f32_dot, {"a": "*f32", "b": "*f32", "c": "*f32"}, {"BM": 64, "BN": 128, "BK": 32}, target=f"cuda:{arch}",
        divisibility={"a": 16, "b": 16, "c": 16}, num_warps=4, num_stages=1, cache=False, snapshots=False,
    )  # fmt: skip
    ptx = ck.asm["ptx"]
    epilogue = ptx[ptx.rindex("mma") :]  # after the last mma: the accumulator's trip and the output stores
    assert "st.shared.v2" not in epilogue and "st.shared.b32" not in epilogue
    assert len(re.findall(r"st\.shared\.v4\.b32", epilogue)) == 64 * 128 // (4 * 128)  # 16 bytes per store
    assert len(re.findall(r"ld\.shared\.v4\.b32", epilogue)) == 16
    assert len(re.findall(r"st\.global\.v4\.b32", epilogue)) == 16


@tilelab.jit
def f32_dot(a, b, c, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    x = tl.load(a + rm[:, None] * BK + rk[None, :])
    y = tl.load(b + rk[:, None] * BN + rn[None, :])
    tl.store(c + rm[:, None] * BN + rn[None, :], tl.dot(x, y))


def test_a_row_reductions_result_leaves_in_16_byte_stores():
    """A thread holds the sums of rows 4 apart (registers of the reduced layout: a warp per row, 16 rows a
    warp); the store layout holds one row a thread. The buffer puts each thread's sums side by side, four
    to a 16-byte store: four stores, not sixteen 4-byte ones."""
    ck = tilelab.compile(
        row_dots, {"o": "*f32", "do": "*f32", "out": "*f32", "n": "i32"}, {"BM": 64, "D": 128},
        target="cuda:sm_90a", divisibility={"o": 16, "do": 16, "out": 16}, num_warps=4, num_stages=1, cache=False,
        snapshots=False,
    )  # fmt: skip
    stores = re.findall(r"st\.shared(?:\.v\d)?\.b32", ck.asm["ptx"])
    assert stores == ["st.shared.v4.b32"] * 4, stores


@tilelab.jit
def row_dots(o, do, out, n, BM: tl.constexpr, D: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    ptrs = rows[:, None] * D + tl.arange(0, D)[None, :]
    x = tl.load(o + ptrs, mask=rows[:, None] < n, other=0.0)
    y = tl.load(do + ptrs, mask=rows[:, None] < n, other=0.0)
    tl.store(out + rows, tl.sum(x * y, axis=1), mask=rows < n)


def _round_trip(src, dst, shared) -> bool:
    """Simulate ``lower_local_store`` / ``lower_local_load`` on ``shared``: every thread writes its ``src`` registers
    and reads its ``dst`` registers in the groups ``vector_groups`` gives, each group at its first register's
    place plus ``0 .. v-1``; whether every ``dst`` register reads the element it holds."""
    from tilelab.compiler.backends.cuda.lower_shared import buffer_places
    from tilelab.compiler.layouts import LANE, REGISTER, WARP, flat_of

    places = buffer_places(shared)
    memory = np.full(len(places), -1)

    def accesses(layout):
        elements = flat_of(layout, layout.apply(register=np.arange(layout.in_size(REGISTER))))
        consts = [int(places[e]) for e in elements]
        flats = [int(places[layout.flatten(v)]) for d in (LANE, WARP) for v in layout.in_bases(d)]
        for lane in range(layout.in_size(LANE)):
            for warp in range(layout.in_size(WARP)):
                own = flat_of(layout, layout.apply(register=np.arange(len(consts)), lane=lane, warp=warp))
                thread = 0
                for bit, f in enumerate(flats):
                    if (lane | warp << len(layout.in_bases(LANE))) >> bit & 1:
                        thread ^= f
                for group in vector_groups(consts, flats, 32):
                    yield [(thread ^ consts[group[0]]) + j for j in range(len(group))], [int(own[r]) for r in group]

    for at, elements in accesses(src):
        memory[at] = elements
    return all((memory[at] == elements).all() for at, elements in accesses(dst))


def test_groups_move_every_element_to_the_register_that_wants_it(rng):
    """Whatever buffer the pass picks (a swizzle, or one made for the pair with runs across rows), the
    lowering's groups put each element where the reader's register expects it."""
    from tilelab.compiler.layouts import blocked
    from tilelab.compiler.layouts.distributed import wgmma_accumulator
    from tilelab.compiler.passes.convert_through_shared import choose_shared_layout

    pairs = [(wgmma_accumulator([64, 128], [4, 1], 128), blocked([64, 128], [1, 4], [1, 32], [4, 1], [1, 0]))]
    for _ in range(12):
        layouts = []
        for _ in range(2):
            rows, warp_rows = int(rng.choice([1, 2, 4, 8, 16, 32])), int(rng.choice([1, 2, 4]))
            spt = [int(rng.choice([1, 2, 4])), int(rng.choice([1, 2, 4, 8]))]
            layouts.append(blocked([32, 64], spt, [rows, 32 // rows], [warp_rows, 4 // warp_rows], [1, 0]))
        pairs.append(tuple(layouts))
    for src, dst in pairs:
        for shared in {choose_shared_layout(src, dst, 4), conversion_shared(src, dst, 4, writer_runs=True)}:
            assert _round_trip(src, dst, shared), (src, dst, shared)
