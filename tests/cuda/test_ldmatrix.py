"""``ldmatrix`` into mma fragments: the address plan simulated in numpy, then the emitted PTX.

The simulation follows the PTX ISA's description of ``ldmatrix.sync.aligned.m8n8``
(lane ``8j + i`` addresses row ``i`` of matrix ``j``; lane ``t`` receives row ``t // 4``,
columns ``2 (t % 4)`` and ``2 (t % 4) + 1``, or the transpose with ``.trans``) and
compares what each lane ends up holding with the ownership of ``dot_operand``.
"""

import numpy as np
import pytest

import tilelab
import tilelab.language as tl
from tilelab.compiler.backends.cuda import find_tool
from tilelab.compiler.backends.cuda.lower_ldmatrix import lane_element, lane_rows, matrix_wavefronts, plan_ldmatrix
from tilelab.compiler.backends.cuda.lower_shared import buffer_places
from tilelab.compiler.layouts import (
    LANE,
    REGISTER,
    WARP,
    dot_operand,
    flat_of,
    mma_m16n8k16_accumulator,
    swizzled_shared,
)
from tilelab.compiler.layouts.distributed import wgmma_accumulator
from tilelab.compiler.passes.assign_layouts import warp_split
from tilelab.compiler.passes.convert_through_shared import mma_operand_shared

HAS_PTXAS = find_tool("ptxas") is not None


@pytest.fixture(autouse=True)
def mma_sync_on_hopper(monkeypatch):
    """ldmatrix feeds mma.sync: Hopper (sm_90a) takes wgmma unless ``TILELAB_CUDA_WGMMA=0``."""
    monkeypatch.setenv("TILELAB_CUDA_WGMMA", "0")


def simulate(groups, buffer: np.ndarray, num_warps: int, num_regs: int) -> np.ndarray:
    """``out[w, t, r]``: what register ``r`` of lane ``t`` in warp ``w`` holds after the ``ldmatrix`` calls."""
    out = np.full((num_warps, 32, num_regs), np.nan)
    for g in groups:
        for w in range(num_warps):
            addr = lane_rows(g, w)
            for j, (lo, hi) in enumerate(g.pairs):
                assert np.all(addr[8 * j : 8 * j + 8] % 8 == 0), "rows must be 16-byte aligned"
                matrix = np.stack([buffer[a : a + 8] for a in addr[8 * j : 8 * j + 8]])
                t = np.arange(32)
                if g.trans:
                    out[w, t, lo], out[w, t, hi] = matrix[2 * (t % 4), t // 4], matrix[2 * (t % 4) + 1, t // 4]
                else:
                    out[w, t, lo], out[w, t, hi] = matrix[t // 4, 2 * (t % 4)], matrix[t // 4, 2 * (t % 4) + 1]
    return out


def owned(dst, values: np.ndarray, num_warps: int) -> np.ndarray:
    """``values`` (row-major) at the element each (warp, lane, register) of ``dst`` owns."""
    w = np.arange(num_warps)[:, None, None]
    t = np.arange(32)[None, :, None]
    r = np.arange(dst.in_size(REGISTER))[None, None, :]
    args = {REGISTER: r, LANE: t, WARP: w}
    coords = dst.apply(**{d: a for d, a in args.items() if d in dst.in_dims})
    return values[np.broadcast_to(flat_of(dst, coords), (num_warps, 32, dst.in_size(REGISTER)))]


CASES = [  # (M, N, K, num_warps)
    (128, 128, 32, 8),
    (64, 64, 32, 4),
    (32, 32, 16, 4),
    (128, 64, 64, 4),
    (16, 64, 32, 1),
]


@pytest.mark.parametrize("m, n, k, num_warps", CASES)
@pytest.mark.parametrize("op_idx", [0, 1])
@pytest.mark.parametrize("buffer_kind", ["mma_swizzle", "row_major", "column_major"])
def test_ldmatrix_plan_delivers_exactly_the_dot_operand_fragments(m, n, k, num_warps, op_idx, buffer_kind, rng):
    acc = mma_m16n8k16_accumulator([m, n], warp_split(m, n, num_warps))
    dst = dot_operand(acc, op_idx, k=k)
    shape = [m, k] if op_idx == 0 else [k, n]
    shared = {
        "mma_swizzle": lambda: mma_operand_shared(shape, 2),
        "row_major": lambda: swizzled_shared(shape, 1, 1, 1, [1, 0]),
        "column_major": lambda: swizzled_shared(shape, 1, 1, 1, [0, 1]),
    }[buffer_kind]()
    places = buffer_places(shared)
    groups = plan_ldmatrix(dst, places, num_warps)
    assert groups is not None
    # A (K fastest) is read plainly from a row-major buffer; B (N fastest) needs the transpose
    assert all(g.trans == ((op_idx == 1) == (buffer_kind != "column_major")) for g in groups)
    values = rng.standard_normal(m * k if op_idx == 0 else k * n)
    buffer = np.full(len(places), np.nan)
    buffer[places] = values
    got = simulate(groups, buffer, num_warps, dst.in_size(REGISTER))
    np.testing.assert_array_equal(got, owned(dst, values, num_warps))


def test_negative_eight_byte_swizzle_cannot_feed_ldmatrix():
    acc = mma_m16n8k16_accumulator([128, 128], [4, 2])
    dst = dot_operand(acc, 0, k=32)
    places = buffer_places(swizzled_shared([128, 32], 4, 1, 8, [1, 0]))  # 16-byte rows split in two
    assert plan_ldmatrix(dst, places, 8) is None


def test_lane_element_matches_the_ptx_fragment_figure():
    # plain: lane t holds row t//4, columns 2(t%4), 2(t%4)+1
    assert [lane_element(False, 3, c) for c in range(8)] == [(12, 0), (12, 1), (13, 0), (13, 1)] + [
        (14, 0),
        (14, 1),
        (15, 0),
        (15, 1),
    ]
    # transposed: lane t holds column t//4, rows 2(t%4), 2(t%4)+1
    assert [lane_element(True, r, 3) for r in range(8)] == [(12, 0), (12, 1), (13, 0), (13, 1)] + [
        (14, 0),
        (14, 1),
        (15, 0),
        (15, 1),
    ]


def test_mma_operand_buffer_spreads_eight_rows_over_all_bank_groups():
    for rows, cols in [(128, 32), (32, 128), (64, 64), (64, 16)]:
        places = buffer_places(mma_operand_shared([rows, cols], 2)).reshape(rows, cols)
        for c in range(0, cols, 8):
            groups = (places[:8, c] * 2 // 16) % 8  # 16-byte bank group of each row's chunk
            assert len(set(groups.tolist())) == 8, (rows, cols, c)


@tilelab.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


def compile_matmul(bm, bn, bk, num_warps):
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K": "i32"}
    constants = {"BM": bm, "BN": bn, "BK": bk}
    return tilelab.compile(
        matmul_kernel, signature=sig, constants=constants, target="cuda:sm_90a", num_warps=num_warps, cache=False
    )


def test_matmul_reads_its_operands_with_ldmatrix():
    ptx = compile_matmul(128, 128, 32, 8).asm["ptx"]
    # per warp (32x64 of C, K=32): A 2x2 tiles of 16x16, B 2x4 pairs of 16x16: 12 x4 loads
    assert ptx.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == 4
    assert ptx.count("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") == 8
    assert "ld.shared.b16" not in ptx and ptx.count("mma.sync") == 32


@pytest.mark.skipif(not HAS_PTXAS, reason="ptxas not found")
def test_large_matmul_tile_assembles_without_spills():
    meta = compile_matmul(128, 128, 32, 8).metadata
    assert 0 < meta["registers"] <= 255 and meta["spills"] == 0


def test_switch_restores_the_per_element_loads(monkeypatch):
    monkeypatch.setenv("TILELAB_CUDA_LDMATRIX", "0")
    ptx = compile_matmul(64, 64, 32, 4).asm["ptx"]
    assert "ldmatrix.sync" not in ptx and "ld.shared.b16" in ptx and "mma.sync" in ptx


@tilelab.jit
def two_dots_kernel(q_ptr, k_ptr, v_ptr, o_ptr, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    k = tl.load(k_ptr + rd[:, None] * BN + rn[None, :])
    v = tl.load(v_ptr + rn[:, None] * D + rd[None, :])
    p = tl.exp(tl.dot(q, k))
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], tl.dot(p.to(tl.float16), v))


def test_chained_dots_split_warps_along_rows_only():
    sig = {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "o_ptr": "*fp32"}
    ck = tilelab.compile(
        two_dots_kernel, signature=sig, constants={"D": 64, "BM": 128, "BN": 64}, target="cuda:sm_90a", cache=False
    )
    dots = [op for op in ck.module.walk() if op.name == "tt.dot"]
    assert len(dots) == 2
    assert [d.result.type.layout.params["warps_per_cta"] for d in dots] == [(4, 1), (4, 1)]
    assert "ldmatrix.sync" in ck.asm["ptx"]


# --------------------------------------------------------------------------- stmatrix


def simulate_stores(groups, values_at, buffer: np.ndarray, num_warps: int) -> np.ndarray:
    """``buffer`` after the ``stmatrix`` calls; ``values_at[w, t, r]`` is register ``r`` of lane ``t`` in warp ``w``.

    Lane ``8j + i`` names row ``i`` of matrix ``j``; its 8 elements come from lanes ``4i .. 4i + 3``, two each
    (``.trans``: the lanes of column ``i``).
    """
    for g in groups:
        for w in range(num_warps):
            addr = lane_rows(g, w)
            for j, pair in enumerate(g.pairs):
                for i in range(8):
                    a = addr[8 * j + i]
                    assert a % 8 == 0, "rows must be 16-byte aligned"
                    for c in range(8):
                        lane, half = lane_element(g.trans, i, c)
                        buffer[a + c] = values_at[w, lane, pair[half]]
    return buffer


STORE_CASES = [  # (layout, num_warps)
    (lambda: wgmma_accumulator([128, 256], [8, 1], 256), 8),  # a 128x256 matmul's C
    (lambda: wgmma_accumulator([64, 64], [4, 1], 64), 4),
    (lambda: wgmma_accumulator([128, 128], [4, 2], 64), 8),  # two warpgroups side by side
    (lambda: mma_m16n8k16_accumulator([128, 64], [4, 2]), 8),  # mma.sync's C
]


@pytest.mark.parametrize("case", range(len(STORE_CASES)))
@pytest.mark.parametrize("swizzle", [(8, 1, 8), (8, 2, 4), (1, 1, 1)])
def test_stmatrix_plan_writes_every_element_of_an_accumulator_once(case, swizzle, rng):
    """The plan's stores, simulated, leave the buffer exactly as element-wise stores would; 8 rows hit 8 bank groups."""
    make, num_warps = STORE_CASES[case]
    src = make()
    shared = swizzled_shared(list(src.shape), *swizzle, [1, 0])
    places = buffer_places(shared)
    groups = plan_ldmatrix(src, places, num_warps)
    assert groups is not None and not any(g.trans for g in groups)
    values = rng.standard_normal(len(places))
    buffer = simulate_stores(groups, owned(src, values, num_warps), np.full(len(places), np.nan), num_warps)
    np.testing.assert_array_equal(buffer[places], values)
    if swizzle[2] == 8:  # 128-byte swizzle: the 8 rows of each matrix in distinct 16-byte bank groups
        for g in groups:
            addr = lane_rows(g, 0)
            for j in range(len(g.pairs)):
                assert len({int(a) * 2 // 16 % 8 for a in addr[8 * j : 8 * j + 8]}) == 8
        assert list(matrix_wavefronts(groups, 2)) == [4] * len(groups)  # one wavefront per matrix
    elif swizzle[2] == 1:  # row-major, rows a multiple of 128 bytes: a matrix's 8 rows in one bank group
        assert list(matrix_wavefronts(groups, 2)) == [32] * len(groups)


@pytest.mark.parametrize("wgmma", ["1", "0"])
def test_matmul_result_goes_to_shared_memory_with_stmatrix_on_hopper(monkeypatch, wgmma):
    """An f16 result on its way to 16-byte global stores: one ``stmatrix.x4`` per four pairs, not a store per pair."""
    monkeypatch.setenv("TILELAB_CUDA_WGMMA", wgmma)
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "K": "i32"}
    ck = tilelab.compile(matmul_kernel, sig, {"BM": 128, "BN": 128, "BK": 32}, target="cuda:sm_90a", num_warps=8)
    ptx = ck.asm["ptx"]
    assert ptx.count("stmatrix.sync.aligned.m8n8.x4.shared.b16") == 128 * 128 // 256 // 8  # 64 elements a thread
    assert "st.shared.b32" not in ptx and "st.shared.v2.b32" not in ptx
    monkeypatch.setenv("TILELAB_CUDA_LDMATRIX", "0")
    off = tilelab.compile(matmul_kernel, sig, {"BM": 128, "BN": 128, "BK": 32}, target="cuda:sm_90a", num_warps=8)
    assert "stmatrix" not in off.asm["ptx"]


def test_negative_no_stmatrix_before_hopper():
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "K": "i32"}
    ck = tilelab.compile(matmul_kernel, sig, {"BM": 64, "BN": 64, "BK": 32}, target="cuda:sm_80", num_warps=4)
    assert "stmatrix" not in ck.asm["ptx"] and "mma.sync" in ck.asm["ptx"]
