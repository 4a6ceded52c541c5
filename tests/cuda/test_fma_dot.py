"""The FMA dot (f32 in ieee, ``allow_tf32=False``: no tensor core) as outer products, compiled for sm_90a without a
GPU: each shared load feeds several FMAs (16-byte loads along K for a row of ``a``), where the loop it replaces
loaded both operands for every FMA."""

from __future__ import annotations

import re

import tilelab
from tests.kernels.test_matmul import ieee_matmul_kernel

SIG = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32"}


def test_each_shared_load_feeds_several_fmas():
    """64x64x64 over 4 warps: 32 accumulators a thread (16 rows x 2 columns), unrolled 16 K steps at a time."""
    ck = tilelab.compile(ieee_matmul_kernel, SIG, {"BLOCK": 64}, target="cuda:sm_90a", num_warps=4, cache=False)
    ptx = ck.asm["ptx"]
    fmas = len(re.findall(r"\bfma\.rn\.f32\b", ptx))
    vectors, loads = ptx.count("ld.shared.v4"), len(re.findall(r"\bld\.shared\.", ptx))
    assert fmas == 32 * 16  # one chunk of K steps in the loop's body
    assert vectors == 16 * 16 // 4  # each row's 16 K steps in four 16-byte loads
    assert fmas >= 5 * loads, (fmas, loads)
    assert not ck.metadata.get("spills")
