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


def test_a_k_loop_copies_ahead_and_carries_the_sums_in_the_wgmma_layout():
    """The probe's tutorial-style matmul in tf32x3 (``% M`` rows, a masked K tail, ``+=`` pointers): its loads
    reach the dots only through the split's register ops, and the loop adds the three dots' sum to the carried
    accumulator. The loads are still copied stages ahead (``cp.async``, as a plain dot's are), and the loop
    carries the accumulator in the dots' own layout: no conversion through shared memory in the loop."""
    from benchmarks.probe.kernels import precision_matmul_kernel

    sig = {n: "*fp32" for n in ("a_ptr", "b_ptr", "c_ptr")}
    sig.update({n: "i32" for n in ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")})
    consts = {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "PRECISION": "tf32x3"}
    ck = tilelab.compile(
        tilelab.jit(precision_matmul_kernel), sig, consts, target="cuda:sm_90a", num_warps=4, num_stages=3,
        divisibility={n: 16 for n in sig}, cache=False,
    )  # fmt: skip
    loop = ck.asm["tile"].split("scf.for")[1].split("scf.yield")[0]
    assert loop.count("ttg.async_copy_global_to_local") == 2 and "cp.async.cg.shared.global" in ck.asm["ptx"]
    assert loop.count("ttng.warp_group_dot") == 3
    assert "ttg.convert_layout" not in loop and "#linear<offset=" not in loop  # no buffer of a conversion
