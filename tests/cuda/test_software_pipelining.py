"""Software pipelining on CUDA: cp.async rings in the PTX (ptxas checks it), then values on a GPU.

The compile-only tests need ``ptxas`` (``tilelab.compile`` runs it and raises on a rejected
kernel); the value tests are marked ``gpu`` and compare with numpy on random inputs,
for every ``num_stages`` from 1 (no pipelining) to 4, with K tails that mask the last copy.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tilelab
from tests.support.gpu_kernels import ATTENTION, F16, attention_kernel, masked_matmul_kernel, matmul_kernel
from tilelab.compiler.backends.cuda import find_tool
from tilelab.compiler.ir.ops import AsyncCopyGlobalToLocalOp, LocalAllocOp

HAS_PTXAS = find_tool("ptxas") is not None
needs_ptxas = pytest.mark.skipif(not HAS_PTXAS, reason="ptxas not found")
ARCH = "cuda:sm_90"
ALIGNED = {"M": 16, "N": 16, "K": 16, "a_ptr": 16, "b_ptr": 16, "c_ptr": 16}


def loop_counts(ptx: str) -> dict[str, int]:
    """Instruction counts in the PTX block that holds the mma instructions (the loop body)."""
    body = next(b for b in re.split(r"\n(?=\$L__BB)", ptx) if "mma.sync" in b)
    keys = ("bar.sync", "cp.async.cg", "cp.async.commit_group", "cp.async.wait_group", "mma.sync", "ldmatrix")
    return {k: body.count(k) for k in keys}


def compile_matmul(kernel, num_stages: int, divisibility=ALIGNED, bk: int = 32):
    constants = {"BM": 128, "BN": 128, "BK": bk}
    return tilelab.compile(
        kernel,
        signature=F16,
        constants=constants,
        divisibility=divisibility,
        target=ARCH,
        num_warps=8,
        num_stages=num_stages,
    )


@needs_ptxas
@pytest.mark.parametrize("num_stages", [2, 3, 4])
def test_matmul_loop_is_one_barrier_cp_async_and_ldmatrix(num_stages):
    ck = compile_matmul(matmul_kernel, num_stages)
    counts = loop_counts(ck.asm["ptx"])
    assert counts == {
        "bar.sync": 1,
        "cp.async.cg": 4,  # (128x32 + 32x128) f16 over 256 threads: four 16-byte chunks each
        "cp.async.commit_group": 1,
        "cp.async.wait_group": 1,
        "mma.sync": 32,
        "ldmatrix": 12,
    }
    assert f"cp.async.wait_group {num_stages - 2};" in ck.asm["ptx"]
    assert ck.metadata["shared"] == num_stages * (128 * 32 + 32 * 128) * 2
    assert ck.metadata["spills"] in (0, None)


@needs_ptxas
def test_one_stage_keeps_the_synchronous_loop():
    ck = compile_matmul(matmul_kernel, 1)
    assert "cp.async" not in ck.asm["ptx"]
    assert not any(isinstance(op, AsyncCopyGlobalToLocalOp) for op in ck.module.walk())


@needs_ptxas
@pytest.mark.parametrize("num_stages", [2, 3])
def test_masked_k_tail_compiles_with_src_size(num_stages):
    ck = compile_matmul(masked_matmul_kernel, num_stages, divisibility={"a_ptr": 16, "b_ptr": 16, "c_ptr": 16})
    rings = [op for op in ck.module.walk() if isinstance(op, LocalAllocOp) and op.stages > 1]
    assert len(rings) == 2 and all(op.stages == num_stages for op in rings)
    assert "cp.async" in ck.asm["ptx"]


@needs_ptxas
@pytest.mark.parametrize("num_stages", [1, 2, 3])
def test_attention_compiles(num_stages):
    ck = tilelab.compile(
        attention_kernel,
        signature=ATTENTION,
        constants={"D": 128, "BM": 128, "BN": 64},
        divisibility={"S": 16, "q_ptr": 16, "k_ptr": 16, "v_ptr": 16, "o_ptr": 16},
        target=ARCH,
        num_warps=8,
        num_stages=num_stages,
    )
    ptx = ck.asm["ptx"]
    assert ("cp.async.cg" in ptx) == (num_stages > 1)
    assert "ld.global.b16" not in ptx  # k ([D, BN], contiguous along D) is copied in 16-byte chunks too
    if num_stages > 1:
        counts = loop_counts(ptx)
        # q is stored to shared memory once, before the loop; k and v come in rings (16 KB each:
        # four 16-byte cp.async per thread). Operands read with ldmatrix x4, per warp: q's 16x128
        # rows 8, k's 128x64 and v's 64x128 32 each (p stays in registers)
        assert counts["cp.async.cg"] == 8 and counts["ldmatrix"] == 8 + 32 + 32
        assert ck.metadata["spills"] in (0, None)


def _course_kernels():
    """``(kernel, signature, constants)`` of the dot kernels of the kernel tests."""
    from tests.kernels import test_attention as ka
    from tests.kernels import test_matmul as km

    ptrs = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32"}
    strides = {f"stride_{n}": "i32" for n in ("am", "ak", "bk", "bn", "cm", "cn")}
    blocks = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}
    attention = {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "o_ptr": "*fp16", "seq_len": "i32"}
    return [
        (km.matmul_kernel, {**ptrs, **strides}, {**blocks, "GROUP_M": 8, "ACTIVATION": ""}),
        (km.batched_matmul_kernel, ptrs, blocks),
        (km.block_ptr_matmul_kernel, {**ptrs, **strides}, blocks),
        (km.ieee_matmul_kernel, {**ptrs, "c_ptr": "*fp32"}, {"BLOCK": 32}),
        (
            ka.flash_attention_fwd_kernel,
            {**attention, "sm_scale": "fp32"},
            {"HEAD_DIM": 64, "BLOCK_M": 64, "BLOCK_N": 64, "CAUSAL": True},
        ),
    ]


@needs_ptxas
@pytest.mark.parametrize("num_stages", [1, 3])
def test_kernel_test_dots_compile(num_stages):
    for kernel, signature, constants in _course_kernels():
        ck = tilelab.compile(kernel, signature=signature, constants=constants, target=ARCH, num_stages=num_stages)
        assert "mma.sync" in ck.asm["ptx"] or "fma" in ck.asm["ptx"]


# --------------------------------------------------------------------------- values on the GPU


def _matmul(kernel, m, n, k, num_stages, rng, bm=128, bn=128, bk=32):
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float16)
    grid = (-(-m // bm), -(-n // bn))
    kernel[grid](a, b, c, m, n, k, BM=bm, BN=bn, BK=bk, num_warps=8, num_stages=num_stages, target="cuda")
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=2e-2, atol=0.1 + 2e-3 * k**0.5)


@pytest.mark.gpu
@pytest.mark.parametrize("num_stages", [1, 2, 3, 4])
def test_matmul_values(num_stages, rng):
    _matmul(matmul_kernel, 256, 256, 512, num_stages, rng)


@pytest.mark.gpu
@pytest.mark.parametrize("num_stages", [1, 2, 3, 4])
@pytest.mark.parametrize("k", [40, 200, 32 * 3 + 8])
def test_masked_matmul_k_tails(num_stages, k, rng):
    _matmul(masked_matmul_kernel, 200, 136, k, num_stages, rng)


@pytest.mark.gpu
@pytest.mark.parametrize("num_stages", [2, 4])
def test_fewer_iterations_than_stages(num_stages, rng):
    _matmul(matmul_kernel, 128, 128, 32, num_stages, rng)


@pytest.mark.gpu
@pytest.mark.parametrize("num_stages", [1, 3])
def test_attention_values(num_stages, rng):
    bh, s, d = 2, 256, 128
    q, k, v = (rng.standard_normal((bh, s, d)).astype(np.float16) for _ in range(3))
    o = np.full_like(q, np.nan)
    scale = d**-0.5
    attention_kernel[(s // 128, bh)](
        q, k, v, o, s, scale, D=d, BM=128, BN=64, num_warps=8, num_stages=num_stages, target="cuda"
    )
    scores = q.astype(np.float32) @ k.astype(np.float32).transpose(0, 2, 1) * scale
    p = np.exp(scores - scores.max(-1, keepdims=True))
    ref = (p / p.sum(-1, keepdims=True)) @ v.astype(np.float32)
    np.testing.assert_allclose(o.astype(np.float32), ref, rtol=2e-2, atol=2e-2)
