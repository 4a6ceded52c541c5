"""A matmul accumulating in f16 (``out_dtype=tl.float16``) runs on the tensor cores (no GPU needed): wgmma on
sm_90a, mma.sync on sm_80, its operands copied ahead with cp.async, no FMA loop; as Triton compiles it."""

from __future__ import annotations

import numpy as np
import pytest

import tilelab
from benchmarks.probe.kernels import f16_acc_matmul_kernel
from tilelab.compiler.interpreter import run_kernel
from tilelab.compiler.ir.ops import WarpGroupDotOp

SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32",
       "stride_bk": "i32", "stride_cm": "i32"}  # fmt: skip
DIV = {name: 16 for name in SIG}


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("arch,instruction", [("sm_90a", "wgmma.mma_async"), ("sm_80", "mma.sync.aligned.m16n8k16")])
def test_on_the_tensor_cores(arch, instruction, fused):
    consts = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "ACC_IN_DOT": fused}
    ck = tilelab.compile(tilelab.jit(f16_acc_matmul_kernel), SIG, consts, target=f"cuda:{arch}", num_warps=8,
                         num_stages=3, divisibility=DIV, cache=False)  # fmt: skip
    ptx = ck.asm["ptx"]
    assert instruction in ptx and "cp.async" in ptx
    assert "fma.rn.f16" not in ptx and "fma.rn.f32" not in ptx  # no FMA loop over K
    loop = ptx[ptx.index(instruction) :]
    assert "cvt.rn.f16.f32" not in loop[: loop.index("bra")]  # the sum stays f32 through the loop


@pytest.mark.parametrize("fused", [True, False])
def test_the_final_ir_computes_the_product(fused, monkeypatch):
    """The final sm_90a IR (the f32 wgmma, the operands' rings, the rounding after the loop) on the interpreter:
    within an ulp of f32 sums rounded once to f16, ragged shapes."""
    monkeypatch.setenv("TILELAB_CUDA_WGMMA", "1")
    consts = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "ACC_IN_DOT": fused}
    ck = tilelab.compile(tilelab.jit(f16_acc_matmul_kernel), SIG, consts, target="cuda:sm_90a", num_warps=4,
                         num_stages=3, divisibility=DIV, cache=False)  # fmt: skip
    assert any(isinstance(op, WarpGroupDotOp) for op in ck.module.walk())
    rng = np.random.default_rng(5)
    m, n, k = 100, 72, 200
    a, b = rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float16)
    run_kernel(ck.module, (-(-m // 64), -(-n // 64)), [a, b, c, m, n, k, k, n, n])
    once = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(c, once, rtol=2**-9, atol=1e-3)


@pytest.mark.parametrize("operand, name", [("fp8e4nv", "e4m3"), ("fp8e5", "e5m2")])
def test_fp8_operands_into_f16_on_wgmma(operand, name, monkeypatch):
    """fp8 operands with ``out_dtype=tl.float16`` (Triton accepts them): an fp8 wgmma summing in f32, and the final
    IR on the interpreter exact for small integers."""
    import ml_dtypes

    from tests.kernels.test_matmul import small_dot_kernel

    monkeypatch.setenv("TILELAB_CUDA_WGMMA", "1")
    sig = {"a_ptr": f"*{operand}", "b_ptr": f"*{operand}", "c_ptr": "*fp16"}
    ck = tilelab.compile(small_dot_kernel, sig, {"M": 64, "N": 64, "K": 64}, target="cuda:sm_90a", num_warps=4,
                         cache=False)  # fmt: skip
    assert f"wgmma.mma_async.sync.aligned.m64n64k32.f32.{name}.{name}" in ck.asm["ptx"]
    fmt = ml_dtypes.float8_e4m3fn if name == "e4m3" else ml_dtypes.float8_e5m2
    rng = np.random.default_rng(2)
    a, b = (rng.integers(-3, 4, (64, 64)).astype(fmt) for _ in range(2))
    c = np.zeros((64, 64), np.float16)
    run_kernel(ck.module, (1,), [a, b, c])
    np.testing.assert_array_equal(c, (a.astype(np.int64) @ b.astype(np.int64) + 3).astype(np.float16))
