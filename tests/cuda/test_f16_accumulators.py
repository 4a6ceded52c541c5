"""A matmul accumulating in f16 (``out_dtype=tl.float16``) runs on the tensor cores (no GPU needed): wgmma on
sm_90a, mma.sync on sm_80, its operands copied ahead with cp.async, no FMA loop; as Triton compiles it."""

from __future__ import annotations

import pytest

import tilelab
from benchmarks.probe.kernels import f16_acc_matmul_kernel

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
