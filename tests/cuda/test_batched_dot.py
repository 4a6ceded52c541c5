"""Batched (3-d) ``tl.dot`` on tensor cores: ``mma.sync`` per batch instead of the FMA loop.

A dot of ``[batch, M, K] x [batch, K, N]`` tiles (Triton's 3-d ``tl.dot``) gets the same mma
layouts as a 2-d one with the batch dim in front: warps take whole batches first, more batches
repeat in registers. The kernels are written as users write them: pointers built from
broadcast ``arange``s with runtime strides, a masked K tail, pointers advanced with ``+=``.

What runs without a GPU: the instruction plan of ``lower_mma`` executed on an emulated warp
(each lane's registers filled from the layouts, each ``mma.sync`` computed the way the PTX ISA
defines its fragments), compared with numpy; the compiled PTX (one ``mma.sync`` per 16x8 tile,
batch and K step; no FMA loop), checked by ptxas. The ``gpu`` tests compare with torch.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest

import tilelab
from tests.kernels.support import cdiv
from tests.kernels.test_matmul import bmm_kernel
from tilelab.compiler.backends.cuda import find_tool, lower_mma
from tilelab.compiler.ir.types import f16, f32
from tilelab.compiler.layouts import LANE, REGISTER, WARP, dot_operand, mma_k_width
from tilelab.compiler.layouts.distributed import mma_m16n8k16_accumulator
from tilelab.compiler.layouts.text import parse_layout
from tilelab.compiler.passes.assign_layouts import mma_layout

needs_ptxas = pytest.mark.skipif(find_tool("ptxas") is None, reason="ptxas not found")


# ----------------------------------------------------------------------------- the plan on an emulated warp


def _ptx_fragments(k_width: int):
    """Per lane ``t`` of a warp, the (row, k) of A's, (k, col) of B's and (row, col) of C's elements.

    Straight from the PTX ISA's fragment tables for ``mma.m16n8k{8 * k_width}`` (row.col):
    ``g = t // 4``, ``q = t % 4``; A register ``j`` holds row ``g + 8 * (j % 2)``, K
    ``k_width * q + 4 * k_width * (j // 2)`` onwards; B register ``j`` K ``k_width * q +
    4 * k_width * j`` onwards, column ``g``; C element ``i`` row ``g + 8 * (i // 2)``, column
    ``2 * q + i % 2``. One entry per element, ``k_width`` to a 32-bit register.
    """
    a, b, c = [], [], []
    for t in range(32):
        g, q = t // 4, t % 4
        a.append([(g + 8 * (j % 2), k_width * (q + 4 * (j // 2)) + e) for j in range(4) for e in range(k_width)])
        b.append([(k_width * (q + 4 * j) + e, g) for j in range(2) for e in range(k_width)])
        c.append([(g + 8 * (i // 2), 2 * q + i % 2) for i in range(4)])
    return a, b, c


def _registers(layout, tile, num_warps):
    """``regs[w][t][r]``: the element register ``r`` of lane ``t`` of warp ``w`` holds under ``layout``."""
    n_reg = layout.in_size(REGISTER)
    out = np.empty((num_warps, 32, n_reg), dtype=tile.dtype)
    for w in range(num_warps):
        coords = layout.apply(register=np.arange(n_reg)[None, :], lane=np.arange(32)[:, None], warp=w)
        out[w] = tile[tuple(np.moveaxis(coords, -1, 0))]
    return out


def emulate(a_layout, b_layout, c_layout, a, b, c, k_width, num_warps):
    """Run ``mma_plan``'s instructions on emulated warps; return each thread's C registers afterwards."""
    k = a.shape[-1]
    ra, rb, rc = (_registers(lay, x, num_warps) for lay, x in ((a_layout, a), (b_layout, b), (c_layout, c)))
    fa, fb, fc = _ptx_fragments(k_width)
    step = 8 * k_width
    for a_idx, b_idx, c_idx in lower_mma.mma_plan(a_layout, b_layout, c_layout, k, k_width):
        for w in range(num_warps):
            ta, tb, tc = np.zeros((16, step)), np.zeros((step, 8)), np.zeros((16, 8))
            for t in range(32):  # what the hardware reads from each lane
                for (row, kk), r in zip(fa[t], a_idx):
                    ta[row, kk] = ra[w, t, r]
                for (kk, col), r in zip(fb[t], b_idx):
                    tb[kk, col] = rb[w, t, r]
                for (row, col), r in zip(fc[t], c_idx):
                    tc[row, col] = rc[w, t, r]
            d = ta @ tb + tc
            for t in range(32):
                for (row, col), r in zip(fc[t], c_idx):
                    rc[w, t, r] = d[row, col]
    return rc


CASES = [  # (batch, M, N, K), element bytes, num_warps
    ((4, 32, 32, 32), 2, 4),
    ((8, 16, 16, 16), 2, 4),  # two batches per warp, in registers
    ((2, 64, 64, 32), 2, 4),  # two warps per batch
    ((2, 32, 64, 32), 2, 8),
    ((4, 32, 32, 16), 4, 4),  # tf32: K steps of 8
    ((4, 32, 32, 64), 1, 4),  # int8: K steps of 32
    ((1, 64, 32, 16), 2, 4),  # one batch: the 2-d pattern
]


@pytest.mark.parametrize("shape,itemsize,num_warps", CASES)
def test_plan_on_emulated_warps_matches_numpy(shape, itemsize, num_warps, rng):
    batch, m, n, k = shape
    kw = mma_k_width(itemsize)
    warps = _batched_warps(batch, m, n, num_warps)
    acc = mma_m16n8k16_accumulator([batch, m, n], warps)
    a_layout, b_layout = dot_operand(acc, 0, kw, k=k), dot_operand(acc, 1, kw, k=k)
    a = rng.integers(-3, 4, (batch, m, k)).astype(np.float64)
    b = rng.integers(-3, 4, (batch, k, n)).astype(np.float64)
    c = rng.integers(-3, 4, (batch, m, n)).astype(np.float64)
    got = emulate(a_layout, b_layout, acc, a, b, c, kw, num_warps)
    want = _registers(acc, a @ b + c, num_warps)
    np.testing.assert_array_equal(got, want)


def test_emulation_catches_a_wrong_fragment(rng):
    """The emulated check fails when one operand register is taken from the wrong coordinates."""
    acc = mma_m16n8k16_accumulator([2, 16, 8], [2, 1, 1])
    a_layout, b_layout = dot_operand(acc, 0, 2, k=16), dot_operand(acc, 1, 2, k=16)
    a, b, c = (rng.integers(-3, 4, s).astype(np.float64) for s in ((2, 16, 16), (2, 16, 8), (2, 16, 8)))
    (a_idx, b_idx, c_idx), *rest = lower_mma.mma_plan(a_layout, b_layout, acc, 16, 2)
    broken = [([a_idx[1], a_idx[0], *a_idx[2:]], b_idx, c_idx), *rest]  # two K elements swapped
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lower_mma, "mma_plan", lambda *args: broken)
        got = emulate(a_layout, b_layout, acc, a, b, c, 2, 2)
    assert not np.array_equal(got, _registers(acc, a @ b + c, 2))


def _batched_warps(batch, m, n, num_warps):
    """The warps ``assign-layouts`` gives an f16 dot of that shape (``mma_layout``), read off its layout."""
    operands = [
        SimpleNamespace(type=SimpleNamespace(shape=shape, element=element))
        for shape, element in (([batch, m, 16], f16), ([batch, 16, n], f16), ([batch, m, n], f32))
    ]
    layout = mma_layout(SimpleNamespace(operands=operands, attrs={}), num_warps)
    assert layout is not None
    return list(layout.params["warps_per_cta"])


@pytest.mark.parametrize(
    "shape,num_warps,warps",
    [
        ((8, 32, 16), 4, [4, 1, 1]),  # warps take batches first
        ((2, 64, 64), 4, [2, 2, 1]),  # the rest split M and N as in 2-d
        ((1, 64, 32), 4, [1, 4, 1]),  # one batch: the 2-d split (warp_split)
        ((16, 16, 16), 8, [8, 1, 1]),
    ],
)
def test_batched_warps(shape, num_warps, warps):
    assert _batched_warps(*shape, num_warps) == warps


def test_small_batched_tiles_stay_fma():
    """Below one instruction's tile (16 x 8 a warp) there is no mma layout: the FMA loop stays."""
    operands = [
        SimpleNamespace(type=SimpleNamespace(shape=shape, element=element))
        for shape, element in (([4, 8, 16], f16), ([4, 16, 8], f16), ([4, 8, 8], f32))
    ]
    assert mma_layout(SimpleNamespace(operands=operands, attrs={}), 4) is None


def test_batched_layouts_keep_each_batch_on_its_own_threads():
    """In a 3-d accumulator the batch comes from warp bits and registers only: lanes never split it."""
    acc = mma_m16n8k16_accumulator([8, 32, 16], [4, 1, 1])
    for layout in (acc, dot_operand(acc, 0, 2, k=32), dot_operand(acc, 1, 2, k=32)):
        assert all(v[0] == 0 for v in layout.in_bases(LANE))
        assert sorted(v[0] for v in layout.in_bases(WARP)) == [1, 2]
        assert [v[0] for v in layout.in_bases(REGISTER) if v[0]] == [4]
        assert parse_layout(str(layout), list(layout.shape)) == layout  # the IR text round-trips


def test_one_batch_is_the_2d_pattern():
    flat = mma_m16n8k16_accumulator([64, 32], [2, 2])
    batched = mma_m16n8k16_accumulator([1, 64, 32], [1, 2, 2])
    for in_dim in (REGISTER, LANE, WARP):
        assert [list(v[1:]) for v in batched.in_bases(in_dim)] == [list(v) for v in flat.in_bases(in_dim)]


# ----------------------------------------------------------------------------- kernels, compiled


TYPES = {"f16": ("*fp16", "*fp32"), "bf16": ("*bf16", "*fp32"), "f32": ("*fp32", "*fp32"), "i8": ("*int8", "*int32")}
INSTR = {"f16": "m16n8k16", "bf16": "m16n8k16", "f32": "m16n8k8", "i8": "m16n8k32"}
K_STEP = {"f16": 16, "bf16": 16, "f32": 8, "i8": 32}


def _compile(dtype, arch, blocks, num_warps, num_stages=3):
    src, out = TYPES[dtype]
    sig = {"a_ptr": src, "b_ptr": src, "c_ptr": out}
    ints = ("Z", "M", "N", "K", "stride_az", "stride_am", "stride_bz", "stride_bk", "stride_cz", "stride_cm")
    sig.update({name: "i32" for name in ints})
    bz, bm, bn, bk = blocks
    consts = dict(BZ=bz, BM=bm, BN=bn, BK=bk, PRECISION="tf32" if dtype == "f32" else "ieee")
    div = {name: 16 for name in sig if name != "Z"}  # what a launch over contiguous tensors of such sizes specializes
    return tilelab.compile(
        bmm_kernel, sig, consts, target=f"cuda:{arch}", num_warps=num_warps, num_stages=num_stages,
        divisibility=div, snapshots=False, cache=False,
    )  # fmt: skip


@pytest.fixture(autouse=True)
def private_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("TILELAB_CACHE_DIR", str(tmp_path))


@needs_ptxas
@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32", "i8"])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_batched_dot_compiles_to_mma_sync(dtype, arch):
    blocks, num_warps = (4, 32, 32, 32), 4
    ck = _compile(dtype, arch, blocks, num_warps)
    ptx = ck.asm["ptx"]
    bz, bm, bn, bk = blocks
    # each warp owns one batch of 32x32: (32/16) * (32/8) tiles per K step
    per_warp = (bm // 16) * (bn // 8) * (bk // K_STEP[dtype])
    assert len(re.findall(rf"mma\.sync\.aligned\.{INSTR[dtype]}\.", ptx)) == per_warp
    assert "wgmma" not in ptx
    assert not re.search(r"\bfma\.rn\.f32\b", ptx)  # no FMA loop left
    assert "cp.async.cg.shared.global" in ptx  # the operands still stream in, 16 bytes a copy
    assert ck.metadata["registers"] <= 160 and ck.metadata["spills"] == 0


@needs_ptxas
def test_batched_dot_with_batches_in_registers():
    """More batches than warps: each warp runs its batches one after another, same instruction count per batch."""
    ck = _compile("f16", "sm_90a", (8, 16, 16, 32), 4)
    assert len(re.findall(r"mma\.sync\.aligned\.m16n8k16\.", ck.asm["ptx"])) == 2 * 2 * 2
    assert "ldmatrix.sync.aligned" in ck.asm["ptx"]


# ----------------------------------------------------------------------------- on the GPU


@pytest.mark.gpu
@pytest.mark.parametrize(
    "dtype,shape,blocks,num_warps",
    [
        ("f16", (10, 100, 72, 200), (4, 32, 32, 32), 4),
        ("bf16", (6, 64, 64, 64), (2, 64, 64, 32), 4),
        ("f16", (16, 16, 16, 40), (8, 16, 16, 16), 4),
        ("f32", (5, 48, 40, 72), (4, 32, 32, 16), 4),
        ("i8", (3, 64, 64, 96), (4, 32, 32, 64), 8),
    ],
)
def test_batched_dot_matches_torch(dtype, shape, blocks, num_warps):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    z, m, n, k = shape
    bz, bm, bn, bk = blocks
    gen = torch.Generator(device="cuda").manual_seed(0)
    if dtype == "i8":
        a = torch.randint(-100, 100, (z, m, k), device="cuda", dtype=torch.int8, generator=gen)
        b = torch.randint(-100, 100, (z, k, n), device="cuda", dtype=torch.int8, generator=gen)
        c = torch.empty((z, m, n), device="cuda", dtype=torch.int32)
        want = torch.bmm(a.double(), b.double())
    else:
        dt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[dtype]
        a = torch.randn((z, m, k), device="cuda", generator=gen).to(dt)
        b = torch.randn((z, k, n), device="cuda", generator=gen).to(dt)
        c = torch.full((z, m, n), float("nan"), device="cuda", dtype=torch.float32)
        want = torch.bmm(a.double(), b.double())
    grid = (cdiv(z, bz), cdiv(m, bm), cdiv(n, bn))
    bmm_kernel[grid](
        a, b, c, z, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BZ=bz, BM=bm, BN=bn, BK=bk, PRECISION="tf32" if dtype == "f32" else "ieee", num_warps=num_warps,
    )  # fmt: skip
    torch.cuda.synchronize()
    if dtype == "i8":
        assert torch.equal(c.double(), want)
    else:
        tol = 2e-2 if dtype in ("bf16", "f32") else 5e-3
        err = (c.double() - want).abs().max().item()
        assert err <= tol * want.abs().max().item()
