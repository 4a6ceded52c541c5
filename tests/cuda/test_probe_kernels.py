"""The probe's kernels (``benchmarks/probe``: LLM-library idioms outside the corpus) compile for sm_90a,
and what the probe reads of their PTX holds: global accesses as wide as the addresses allow; each has a
GPU case that launches it as the probe compiles it."""

from __future__ import annotations

import inspect

import pytest

import tilelab
from benchmarks.corpus.run import META_KEYS, SpecMaker, signature_of
from benchmarks.probe.cases import CASES as GPU_CASES
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
    if name == "decode attention (paged, GQA)":
        # k (read as tl.trans(k)) and v, gathered through the token table, copied ahead 16 bytes at a time
        # into the dot's buffers: the index tile goes one iteration ahead of the copies it addresses
        assert ptx.count("cp.async.cg.shared.global") == 3 * 2 * 8 and "ld.global.b16" not in ptx


def test_every_probe_kernel_has_a_gpu_case():
    assert sorted(GPU_CASES) == sorted(c[0] for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gpu_case_launches_what_the_probe_compiles(case):
    """Each GPU case (``benchmarks/probe/cases.py``), built with placeholders: its launch arguments give the
    probe's signature and specialization under every config, the probe's constexprs and warps among its configs,
    and each config compiles for sm_90a."""
    name, fn, sig, consts, div, warps = case
    setup = GPU_CASES[name](SpecMaker())
    assert setup.kernel is fn and setup.outs and callable(setup.ref) and callable(setup.torch_fn) and setup.nbytes > 0
    assert 2 <= len(setup.configs) <= 4
    meta = [({k: v for k, v in c.items() if k not in META_KEYS}, c["num_warps"]) for c in setup.configs]
    declared = {p.name for p in inspect.signature(fn).parameters.values() if "constexpr" in str(p.annotation)}
    ones = {k: v for k, v in consts.items() if k not in declared}  # runtime ints of 1, which a launch specializes
    assert all(v == 1 for v in ones.values())
    assert ({k: v for k, v in consts.items() if k in declared}, warps) in meta
    kernel = tilelab.jit(fn)
    for cfg, (constexprs, _) in zip(setup.configs, meta):
        got_sig, got_consts, got_div = signature_of(fn, setup.args(cfg), cfg)
        assert got_sig == sig and got_consts == {**constexprs, **ones}
        assert all(got_div[n] == 16 for n, d in div.items() if d == 16), got_div  # the integers as the probe has them
        grid = setup.grid(cfg)
        assert grid and all(isinstance(g, int) and g > 0 for g in grid)
        ck = tilelab.compile(
            kernel, got_sig, got_consts, target="cuda:sm_90a", num_warps=cfg["num_warps"], divisibility=got_div,
            snapshots=False, cache=False,
        )  # fmt: skip
        assert ".entry" in ck.asm["ptx"]
