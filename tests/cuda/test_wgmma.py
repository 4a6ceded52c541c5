"""Hopper tensor cores: ``tt.dot`` -> ``ttng.warp_group_dot`` -> ``wgmma.mma_async`` on sm_90a.

Compile-only tests (need ``ptxas``, which ``tilelab.compile`` runs and which rejects bad
wgmma code) cover the tile shapes and warp counts; the value tests (marker ``gpu``) compare
with numpy on random inputs: square and ragged shapes with masked K tails, f16 and bf16,
4 and 8 warps, one and three pipeline stages, and attention's two chained dots.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tilelab
from tests.support.gpu_kernels import ATTENTION, attention_kernel, masked_matmul_kernel
from tilelab.compiler.backends.cuda import find_tool
from tilelab.compiler.ir.ops import DotOp, WarpGroupDotOp

needs_ptxas = pytest.mark.skipif(find_tool("ptxas") is None, reason="ptxas not found")
F16 = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32"}
BF16 = {**F16, "a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*bf16"}


@pytest.fixture(autouse=True)
def arch_in_module(monkeypatch, tmp_path):
    """The wgmma switch on (``TILELAB_CUDA_WGMMA=1``) and a fresh disk cache for each test.

    Built modules record their target's arch (``module.attrs["arch"]``), which ``accelerate-dot``
    reads; ``compile_for(state, None, ...)`` compiles with the switch off instead.
    """
    monkeypatch.setenv("TILELAB_CUDA_WGMMA", "1")
    monkeypatch.setenv("TILELAB_CACHE_DIR", str(tmp_path))
    return {"monkeypatch": monkeypatch}


def compile_for(state, arch: str | None, kernel, signature, constants, num_warps=4, num_stages=1):
    """Compile for ``cuda:<arch>`` (``sm_90a`` with the wgmma switch off when ``arch`` is None)."""
    if arch is None:
        state["monkeypatch"].setenv("TILELAB_CUDA_WGMMA", "0")
    target = f"cuda:{arch or 'sm_90a'}"
    return tilelab.compile(
        kernel, signature, constants, target=target, num_warps=num_warps, num_stages=num_stages, cache=False
    )


matmul_kernel = masked_matmul_kernel  # any M, N, K: rows, columns and the K tail are masked
ATTN = ATTENTION


def ops_of(ck, cls):
    return [op for op in ck.module.walk() if isinstance(op, cls)]


# --------------------------------------------------------------------------- compile only


@needs_ptxas
@pytest.mark.parametrize("num_warps", [4, 8])
@pytest.mark.parametrize("bm", [64, 128])
@pytest.mark.parametrize("bn", [64, 128, 256])
@pytest.mark.parametrize("bk", [32, 64])
def test_matmul_shapes_assemble_with_wgmma(arch_in_module, num_warps, bm, bn, bk):
    ck = compile_for(arch_in_module, "sm_90a", matmul_kernel, F16, {"BM": bm, "BN": bn, "BK": bk}, num_warps)
    ptx = ck.asm["ptx"]
    if num_warps == 8 and bm == 128 and bn == 64:  # stacked warpgroups with n64 instructions: mma.sync stays
        assert not ops_of(ck, WarpGroupDotOp) and "mma.sync" in ptx
        return
    assert len(ops_of(ck, WarpGroupDotOp)) == 1 and not ops_of(ck, DotOp)
    assert ptx.count("wgmma.mma_async") >= bk // 16 and "mma.sync" not in ptx
    assert "fence.proxy.async.shared::cta" in ptx and "wgmma.wait_group.sync.aligned 0" in ptx
    assert ck.metadata["registers"] is not None  # ptxas accepted it


@needs_ptxas
@pytest.mark.parametrize("stages", [2, 3, 4])
def test_pipelined_operands_feed_the_warp_group_dot_from_their_rings(arch_in_module, stages):
    from tilelab.compiler.ir.ops import AsyncCopyGlobalToLocalOp, MemDescIndexOp

    tiles = {"BM": 128, "BN": 128, "BK": 32}
    ck = compile_for(arch_in_module, "sm_90a", matmul_kernel, F16, tiles, num_warps=8, num_stages=stages)
    (wgd,) = ops_of(ck, WarpGroupDotOp)
    assert all(isinstance(v.defining_op, MemDescIndexOp) for v in wgd.operands[:2])  # read straight from a ring
    assert len(ops_of(ck, AsyncCopyGlobalToLocalOp)) == 2 * stages  # prologue: S-1 stages of A and B, loop: one
    ptx = ck.asm["ptx"]
    assert "cp.async" in ptx and "wgmma.mma_async" in ptx and ck.metadata["registers"] is not None
    assert ck.metadata["spills"] == 0


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_89", "sm_90"])
def test_other_archs_keep_mma_sync(arch_in_module, arch):
    ck = compile_for(arch_in_module, arch, matmul_kernel, F16, {"BM": 128, "BN": 128, "BK": 32}, 8)
    assert not ops_of(ck, WarpGroupDotOp)
    assert "mma.sync.aligned.m16n8k16" in ck.asm["ptx"] and "wgmma.mma_async" not in ck.asm["ptx"]


@needs_ptxas
def test_without_arch_the_mma_sync_path_stays(arch_in_module):
    ck = compile_for(arch_in_module, None, matmul_kernel, F16, {"BM": 64, "BN": 64, "BK": 32}, 4)
    assert not ops_of(ck, WarpGroupDotOp) and "mma.sync" in ck.asm["ptx"]


@needs_ptxas
def test_small_tiles_keep_mma_sync_on_hopper(arch_in_module):
    """M = 32 does not fill a 64-row warpgroup tile: mma.sync stays."""
    ck = compile_for(arch_in_module, "sm_90a", matmul_kernel, F16, {"BM": 32, "BN": 64, "BK": 32}, 4)
    assert not ops_of(ck, WarpGroupDotOp) and "mma.sync" in ck.asm["ptx"]


@needs_ptxas
@pytest.mark.parametrize("num_warps, bn, d, wgmma_dots", [(4, 64, 64, 2), (8, 128, 128, 2), (8, 64, 128, 1)])
def test_attention_assembles_with_warp_group_dots(arch_in_module, num_warps, bn, d, wgmma_dots):
    """Both dots use wgmma, except a 128x64 one over two stacked warpgroups (mma.sync; the two mix)."""
    ck = compile_for(arch_in_module, "sm_90a", attention_kernel, ATTN, {"D": d, "BM": 128, "BN": bn}, num_warps)
    assert len(ops_of(ck, WarpGroupDotOp)) == wgmma_dots and len(ops_of(ck, DotOp)) == 2 - wgmma_dots
    assert ck.asm["ptx"].count("wgmma.commit_group") == wgmma_dots


# --------------------------------------------------------------------------- values on a GPU


def _device_arrays(*arrays):
    torch = pytest.importorskip("torch")
    return [torch.from_numpy(np.ascontiguousarray(x)).cuda() for x in arrays]


def run_matmul(state, m, n, k, dtype, bm, bn, bk, num_warps, num_stages, rng):
    import ml_dtypes
    import torch

    np_dtype = np.float16 if dtype == "f16" else ml_dtypes.bfloat16
    sig = F16 if dtype == "f16" else BF16
    ck = compile_for(state, "sm_90a", matmul_kernel, sig, {"BM": bm, "BN": bn, "BK": bk}, num_warps, num_stages)
    assert ops_of(ck, WarpGroupDotOp)
    a = rng.standard_normal((m, k)).astype(np_dtype)
    b = rng.standard_normal((k, n)).astype(np_dtype)
    tdt = torch.float16 if dtype == "f16" else torch.bfloat16
    a_d = torch.from_numpy(a.astype(np.float32)).to(tdt).cuda()
    b_d = torch.from_numpy(b.astype(np.float32)).to(tdt).cuda()
    c_d = torch.full((m, n), float("nan"), dtype=tdt, device="cuda")
    ck[(-(-m // bm), -(-n // bn))](a_d, b_d, c_d, m, n, k)
    got = c_d.float().cpu().numpy()
    want = a.astype(np.float32) @ b.astype(np.float32)
    tol = 2e-2 if dtype == "f16" else 6e-2
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(k))


@pytest.mark.gpu
@pytest.mark.parametrize(
    "m, n, k, dtype, bm, bn, bk, num_warps",
    [
        (256, 256, 256, "f16", 128, 128, 32, 8),  # the benchmark's tiles
        (512, 384, 320, "f16", 128, 128, 64, 4),  # M repeats in registers, 128B A
        (200, 136, 100, "f16", 64, 128, 32, 4),  # ragged: masked rows, columns and K tail
        (192, 256, 96, "bf16", 64, 128, 32, 8),  # two warpgroups side by side along N
        (256, 512, 128, "f16", 128, 256, 32, 8),  # n256 instructions
        (128, 96, 72, "bf16", 64, 32, 16, 4),  # narrow: 32B swizzles, n32
        (256, 128, 64, "f16", 128, 64, 32, 8),  # stacked warpgroups, n64 (64B swizzled A)
    ],
)
@pytest.mark.parametrize("num_stages", [1, 3])
def test_matmul_values(arch_in_module, rng, m, n, k, dtype, bm, bn, bk, num_warps, num_stages):
    pytest.importorskip("torch")
    run_matmul(arch_in_module, m, n, k, dtype, bm, bn, bk, num_warps, num_stages, rng)


@needs_ptxas
def test_accumulator_is_not_written_between_fence_and_wgmma(arch_in_module):
    """PTX: registers a wgmma accumulates into must be written before its ``wgmma.fence``.

    Attention's first dot starts from zeros every iteration; their moves must come before the fence.
    """
    ck = compile_for(arch_in_module, "sm_90a", attention_kernel, ATTN, {"D": 64, "BM": 64, "BN": 64}, 4)
    lines = ck.asm["ptx"].splitlines()
    fences = [i for i, line in enumerate(lines) if "wgmma.fence.sync.aligned" in line]
    assert len(fences) == 2
    for start in fences:
        end = next(i for i in range(start, len(lines)) if "wgmma.mma_async" in lines[i])
        acc = set(re.search(r"\{(%r\d+(?:, %r\d+)*)\}", lines[end]).group(1).split(", "))
        written = {m.group(1) for line in lines[start + 1 : end] if (m := re.match(r"\s*\S+\s+(%r\d+),", line))}
        assert not acc & written


@pytest.mark.gpu
@pytest.mark.parametrize(
    "num_warps, bm, bn, d", [(4, 64, 64, 64), (8, 128, 64, 64), (8, 64, 64, 64), (8, 128, 64, 128)]
)
def test_attention_values(arch_in_module, rng, num_warps, bm, bn, d):
    torch = pytest.importorskip("torch")
    heads, s = 2, 256
    q, k, v = (rng.standard_normal((heads, s, d)).astype(np.float16) for _ in range(3))
    scale = 1 / np.sqrt(d)
    ck = compile_for(arch_in_module, "sm_90a", attention_kernel, ATTN, {"D": d, "BM": bm, "BN": bn}, num_warps)
    assert ops_of(ck, WarpGroupDotOp)  # (8, 128, 64, 128): the 128x64 q @ k stays on mma.sync, p @ v uses wgmma
    q_d, k_d, v_d = _device_arrays(q, k, v)
    o_d = torch.full((heads, s, d), float("nan"), dtype=torch.float16, device="cuda")
    ck[(s // bm, heads)](q_d, k_d, v_d, o_d, s, scale)
    logits = q.astype(np.float32) @ k.astype(np.float32).transpose(0, 2, 1) * scale
    p = np.exp(logits - logits.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ v.astype(np.float32)
    np.testing.assert_allclose(o_d.float().cpu().numpy(), want, rtol=2e-2, atol=2e-2)
