"""The probe's kernels (``benchmarks/probe``: LLM-library idioms outside the corpus) compile for sm_90a,
and what the probe reads of their PTX holds: global accesses as wide as the addresses allow."""

from __future__ import annotations

import pytest

import tilelab
from benchmarks.probe.run import CASES


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_probe_kernel_compiles(case):
    name, fn, sig, consts, div, warps = case
    div = {**{n: 16 for n, t in sig.items() if t.startswith("*")}, **div}
    ck = tilelab.compile(
        tilelab.jit(fn), sig, consts, target="cuda:sm_90a", num_warps=warps, divisibility=div, snapshots=False,
        cache=False,
    )  # fmt: skip
    ptx = ck.asm["ptx"]
    assert ".entry" in ptx
    if name in ("gelu f16", "residual add + rmsnorm bf16", "column sums"):
        assert "ld.global.v4.b32" in ptx and "st.global.v4.b32" in ptx
