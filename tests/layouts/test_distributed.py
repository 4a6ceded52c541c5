"""Named distributed layouts against hand-computed cases and index-arithmetic references."""

import itertools

import numpy as np
import pytest

from tilelab.compiler.layouts import (
    blocked,
    default_blocked,
    dot_operand,
    mma_m16n8k16_accumulator,
    slice_layout,
)


def blocked_reference(shape, spt, tpw, wpc, order):
    """Element of (warp, lane, register) by index arithmetic (sizePerThread <= shape)."""
    rank = len(shape)
    cover = [spt[d] * tpw[d] * wpc[d] for d in range(rank)]
    reps = [max(1, shape[d] // cover[d]) for d in range(rank)]

    def split(index, sizes):
        out = [0] * rank
        for d in order:
            out[d], index = index % sizes[d], index // sizes[d]
        return out

    table = {}
    nregs = int(np.prod(spt)) * int(np.prod(reps))
    for w, l, r in itertools.product(range(int(np.prod(wpc))), range(int(np.prod(tpw))), range(nregs)):
        wi, li = split(w, wpc), split(l, tpw)
        ri, rep = split(r % int(np.prod(spt)), spt), split(r // int(np.prod(spt)), reps)
        coord = [(rep[d] * cover[d] + wi[d] * spt[d] * tpw[d] + li[d] * spt[d] + ri[d]) % shape[d] for d in range(rank)]
        table[w, l, r] = coord
    return table


def check_against_reference(shape, spt, tpw, wpc, order):
    L = blocked(shape, spt, tpw, wpc, order)
    coords = L.coords()
    ref = blocked_reference(shape, spt, tpw, wpc, order)
    assert coords.shape[:3] == (int(np.prod(wpc)), int(np.prod(tpw)), len(ref) // int(np.prod(wpc) * np.prod(tpw)))
    for (w, l, r), c in ref.items():
        assert coords[w, l, r].tolist() == c, (w, l, r)


def test_blocked_1d_four_per_thread():
    L = blocked([128], [4], [32], [1], [0])
    assert L.apply(lane=0, register=np.arange(4))[:, 0].tolist() == [0, 1, 2, 3]
    assert L.apply(lane=1, register=np.arange(4))[:, 0].tolist() == [4, 5, 6, 7]
    warp, lane, reg = L.owner_of(np.arange(128)[:, None])
    assert np.array_equal(lane, np.arange(128) // 4) and np.array_equal(reg, np.arange(128) % 4)
    assert not warp.any()


@pytest.mark.parametrize(
    "shape,spt,tpw,wpc,order",
    [
        ([1024], [4], [32], [4], [0]),  # wraps into more registers
        ([64, 64], [1, 4], [4, 8], [2, 2], [1, 0]),
        ([32, 128], [2, 2], [8, 4], [4, 1], [0, 1]),
        ([16, 16], [1, 1], [4, 8], [4, 1], [1, 0]),
        ([64], [1], [32], [4], [0]),  # broadcast: 128 threads, 64 elements
        ([4, 8, 16], [1, 2, 2], [2, 2, 8], [1, 2, 2], [2, 1, 0]),
    ],
)
def test_blocked_matches_index_arithmetic(shape, spt, tpw, wpc, order):
    check_against_reference(shape, spt, tpw, wpc, order)


def test_blocked_2d_row_major_order():
    L = blocked([16, 32], [1, 4], [4, 8], [1, 1], [1, 0])
    # lane 9 = column group 1, row 1 -> row 1, cols 4..7 (then rows + 4, 8, 12 in later registers)
    assert L.apply(lane=9, register=np.arange(4)).tolist() == [[1, 4], [1, 5], [1, 6], [1, 7]]
    assert L.apply(lane=9, register=4).tolist() == [5, 4]
    assert L.in_size("register") == 16


def test_broadcast_copies_share_elements():
    L = blocked([64], [1], [32], [4], [0])  # 128 threads hold 64 elements twice
    coords = L.coords()[..., 0]
    assert np.array_equal(coords[0], coords[2]) and np.array_equal(coords[1], coords[3])
    assert L.in_bases("warp") == ((32,), (0,))
    assert L.owner_of([[40]])[0].tolist() == [1]  # warp 1 (not its copy, warp 3)


def test_size_per_thread_larger_than_tile_drops_registers():
    L = blocked([2], [4], [32], [1], [0])
    assert L.in_size("register") == 2 and set(L.coords()[..., 0].ravel().tolist()) == {0, 1}


def test_slice_of_blocked():
    parent = blocked([32, 64], [1, 4], [4, 8], [4, 1], [1, 0])
    rows = slice_layout(parent, 1)
    assert rows.shape == (32,)
    # every thread of the parent holds rows; the slice gives it the same rows, once
    for w, l in itertools.product(range(4), range(32)):
        parent_rows = set(parent.apply(warp=w, lane=l, register=np.arange(16))[:, 0].tolist())
        assert set(rows.apply(warp=w, lane=l, register=np.arange(rows.in_size("register")))[:, 0].tolist()) == (
            parent_rows
        )
    assert rows.in_size("register") == 2 and str(rows).startswith("#slice<dim=1, parent=#blocked<")
    cols = slice_layout(parent, 0)
    assert cols.in_size("register") == 8 and cols.in_bases("warp") == ((0,), (0,))


def test_mma_accumulator_fragment():
    L = mma_m16n8k16_accumulator([16, 8], [1, 1])
    for t in range(32):
        got = L.apply(lane=t, register=np.arange(4)).tolist()
        g, c = t // 4, 2 * (t % 4)
        assert got == [[g, c], [g, c + 1], [g + 8, c], [g + 8, c + 1]]


def test_mma_accumulator_tiles_warps_and_registers():
    L = mma_m16n8k16_accumulator([64, 32], [2, 2])
    assert L.is_invertible()
    # warp 1 is the next 8 columns, warp 2 the next 16 rows; register 4 the next N tile
    assert L.apply(warp=1, lane=0, register=0).tolist() == [0, 8]
    assert L.apply(warp=2, lane=0, register=0).tolist() == [16, 0]
    assert L.apply(warp=0, lane=0, register=4).tolist() == [0, 16]


def a_fragment_reference(t, i):
    """PTX ISA m16n8k16 .f16 A fragment: register a_i of lane t -> (row, col)."""
    g, c = t // 4, 2 * (t % 4) + (i & 1)
    row = g + 8 if i in (2, 3, 6, 7) else g
    return [row, c + 8 if i >= 4 else c]


def b_fragment_reference(t, i):
    """PTX ISA m16n8k16 .f16 B fragment: register b_i of lane t -> (k, n)."""
    return [2 * (t % 4) + (i & 1) + (8 if i >= 2 else 0), t // 4]


def test_dot_operand_fragments_match_ptx():
    acc = mma_m16n8k16_accumulator([16, 8], [1, 1])
    a, b = dot_operand(acc, 0, 2), dot_operand(acc, 1, 2)
    assert a.shape == (16, 16) and b.shape == (16, 8)
    for t in range(32):
        assert a.apply(lane=t, register=np.arange(8)).tolist() == [a_fragment_reference(t, i) for i in range(8)]
        assert b.apply(lane=t, register=np.arange(4)).tolist() == [b_fragment_reference(t, i) for i in range(4)]


def test_dot_operand_broadcasts_across_the_other_warps():
    acc = mma_m16n8k16_accumulator([32, 16], [2, 2])
    a = dot_operand(acc, 0, 2, k=32)
    assert a.shape == (32, 32) and a.is_surjective() and not a.is_injective()
    assert np.array_equal(a.coords()[0], a.coords()[1])  # warps 0 and 1 share A rows
    with pytest.raises(ValueError, match="mma accumulator"):
        dot_operand(blocked([16, 16], [1, 1], [4, 8], [1, 1], [1, 0]), 0)


def test_default_blocked_spreads_threads_on_the_fast_dim():
    L = default_blocked([64, 64], num_warps=4)
    assert L.params["threads_per_warp"] == (1, 32) and L.params["warps_per_cta"] == (4, 1)
    assert default_blocked([16, 8]).is_surjective()


def test_blocked_errors():
    with pytest.raises(ValueError, match="order"):
        blocked([16, 16], [1, 1], [4, 8], [1, 1], [0, 0])
    with pytest.raises(ValueError, match="power of two"):
        blocked([16], [3], [32], [1], [0])
    with pytest.raises(ValueError, match="entries"):
        blocked([16, 16], [1], [32], [1], [0])
