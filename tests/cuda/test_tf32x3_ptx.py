"""A tf32x3 dot on the tensor cores (no GPU needed): three tf32 dots per dot, wgmma on sm_90a, mma.sync m16n8k8 on
sm_80, no FMA loop; as Triton compiles ``input_precision="tf32x3"``."""

from __future__ import annotations

import pytest

import tilelab
from tests.kernels.test_matmul import precision_dot_kernel

SIG = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"}


def ptx(arch: str, precision: str) -> str:
    consts = {"M": 64, "N": 64, "K": 128, "PRECISION": precision}
    return tilelab.compile(precision_dot_kernel, SIG, consts, target=f"cuda:{arch}", num_warps=4, cache=False).asm[
        "ptx"
    ]


@pytest.mark.parametrize("arch,instruction", [("sm_90a", "wgmma.mma_async"), ("sm_80", "mma.sync.aligned.m16n8k8")])
def test_three_times_the_tf32_instructions(arch, instruction):
    split, tf32 = ptx(arch, "tf32x3"), ptx(arch, "tf32")
    assert ".tf32.tf32" in split and "fma.rn.f32" not in split
    assert split.count(instruction) == 3 * tf32.count(instruction) > 0
