"""Autotuning picks the fastest config and remembers it per key; heuristics compute meta-parameters."""

from __future__ import annotations

import importlib
import time

import numpy as np
import pytest

import tilelab
import tilelab.language as tl
from tilelab.runtime import build, targets
from tilelab.runtime.errors import LaunchError

from .kernels import add

jit_module = importlib.import_module("tilelab.runtime.jit")  # the module, not ``tilelab.runtime.jit`` the function

DELAY_MS = {32: 40.0, 64: 2.0, 128: 25.0}  # far above the interpreter's own cost


class SlowTarget(targets.InterpretTarget):
    """The interpreter, plus a delay that depends on BLOCK, and a log of launched BLOCKs."""

    def __init__(self):
        self.blocks = []

    def load(self, artifact, module):
        inner = super().load(artifact, module)
        block = module.attrs["constants"]["BLOCK"]

        def launch(grid, args, sanitize=False):
            self.blocks.append(block)
            time.sleep(DELAY_MS[block] / 1e3)
            return inner(grid, args, sanitize)

        return launch


@pytest.fixture
def slow(monkeypatch):
    target = SlowTarget()
    monkeypatch.setitem(targets.TARGETS, "slow", lambda arch=None: target)
    monkeypatch.setattr(targets, "_instances", {})
    monkeypatch.setenv("TILELAB_TARGET", "slow")
    return target


def tuned_add(**kwargs):
    configs = [tilelab.Config({"BLOCK": b}, num_warps=4) for b in DELAY_MS]
    return tilelab.autotune(configs, key=["n"], warmup=1, rep=10, **kwargs)(tilelab.jit(add.fn))


def launch(kernel, rng, n):
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.full_like(x, np.nan)
    kernel[lambda meta: (tilelab.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    np.testing.assert_allclose(out, x + y, rtol=1e-6)


def test_autotune_picks_the_fastest_config(slow, rng):
    kernel = tuned_add()
    launch(kernel, rng, 500)
    assert kernel.best_config.kwargs == {"BLOCK": 64}
    assert set(slow.blocks) == {32, 64, 128}
    assert str(kernel.best_config) == "BLOCK: 64, num_warps: 4, num_stages: 3"


def test_autotune_caches_per_key(slow, rng):
    kernel = tuned_add()
    launch(kernel, rng, 500)
    tuned = len(slow.blocks)
    launch(kernel, rng, 500)
    assert slow.blocks[tuned:] == [64]  # same key: one launch, no tuning
    launch(kernel, rng, 300)
    assert len(slow.blocks) > tuned + 2  # a new key tunes again
    assert set(kernel.cache) == {(500,), (300,)}


def test_prune_configs_by(slow, rng):
    def early(configs, named_args, **kwargs):
        assert named_args["n"] == 200
        return [c for c in configs if c.kwargs["BLOCK"] != 64]

    kernel = tuned_add(prune_configs_by={"early_config_prune": early})
    launch(kernel, rng, 200)
    assert kernel.best_config.kwargs == {"BLOCK": 128}
    assert 64 not in slow.blocks

    model = tuned_add(prune_configs_by={"perf_model": lambda **kw: kw["BLOCK"], "top_k": 1})
    launch(model, rng, 200)
    assert model.best_config.kwargs == {"BLOCK": 32}


def test_reset_to_zero_and_restore_value(slow, rng):
    seen_out, seen_x = [], []

    def hook(meta):
        seen_out.append(float(meta["out"][0]))
        seen_x.append(float(meta["x"][0]))
        meta["x"][0] += 1000.0  # restore_value must undo this after each timed run

    configs = [tilelab.Config({"BLOCK": b}, pre_hook=hook) for b in (32, 64)]
    kernel = tilelab.autotune(configs, key=["n"], reset_to_zero=["out"], restore_value=["x"], warmup=1, rep=2)(
        tilelab.jit(add.fn)
    )
    x = rng.standard_normal(100).astype(np.float32)
    y = rng.standard_normal(100).astype(np.float32)
    out = np.full_like(x, np.nan)
    x0 = float(x[0])
    kernel[lambda meta: (tilelab.cdiv(100, meta["BLOCK"]),)](x, y, out, 100)
    assert len(seen_out) > 2
    # zeroed before every timed run, and once more before the launch the tuning was for (as in Triton)
    assert seen_out == [0.0] * len(seen_out)
    assert seen_x[:-1] == [x0] * (len(seen_x) - 1)  # restored after every timed run
    np.testing.assert_allclose(out, x + y, rtol=1e-6)  # the final launch saw the hook's x


@tilelab.jit
def accumulate_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr + offs % 8, tl.load(x_ptr + offs, mask=offs < n, other=0.0), mask=offs < n)


def test_an_accumulated_output_holds_one_launch_after_tuning(rng):
    configs = [tilelab.Config({"BLOCK": b}) for b in (32, 64)]
    kernel = tilelab.autotune(configs, key=["n"], reset_to_zero=["out_ptr"], warmup=1, rep=2)(accumulate_kernel)
    x = rng.integers(-8, 8, 100).astype(np.float32)  # small integers: sums exact in any order
    out = np.zeros(8, np.float32)
    grid = lambda meta: (tilelab.cdiv(100, meta["BLOCK"]),)  # noqa: E731
    kernel[grid](x, out, 100, target="interpret")
    np.testing.assert_array_equal(out, np.bincount(np.arange(100) % 8, weights=x))
    misnamed = tilelab.autotune(configs, key=["n"], reset_to_zero=["out"])(accumulate_kernel)
    with pytest.raises(LaunchError, match=r"accumulate_kernel\(\): reset_to_zero / restore_value name \['out'\]"):
        misnamed[grid](x, out, 100, target="interpret")


def test_a_config_s_maxnreg_is_a_launch_option_of_its_compile(rng, monkeypatch):
    """``Config(..., maxnreg=64)`` compiles its candidate with that register cap, as Triton's does."""
    configs = [tilelab.Config({"BLOCK": 32}, maxnreg=64), tilelab.Config({"BLOCK": 64})]
    assert configs[0].all_kwargs()["maxnreg"] == 64 and "maxnreg" not in configs[1].all_kwargs()
    assert str(configs[0]) == "BLOCK: 32, num_warps: 4, num_stages: 3, maxnreg: 64"
    asked = []

    def options_for(target, **geometry):  # what each compile is asked for (the interpreter then drops the cap)
        asked.append(geometry.get("maxnreg"))
        return build.options_for(target, **geometry)

    monkeypatch.setattr(jit_module, "options_for", options_for)
    kernel = tilelab.autotune(configs, key=["n"], reset_to_zero=["out_ptr"], warmup=1, rep=2)(
        tilelab.jit(accumulate_kernel.fn)
    )
    x = rng.integers(-8, 8, 100).astype(np.float32)
    out = np.zeros(8, np.float32)
    kernel[lambda meta: (tilelab.cdiv(100, meta["BLOCK"]),)](x, out, 100, target="interpret")
    np.testing.assert_array_equal(out, np.bincount(np.arange(100) % 8, weights=x))
    assert 64 in asked and None in asked


def test_autotuned_symbols_cannot_be_passed(slow, rng):
    x = rng.standard_normal(8).astype(np.float32)
    with pytest.raises(LaunchError, match=r"add\(\): conflicting meta-parameters \['BLOCK'\]"):
        tuned_add()[(1,)](x, x, x.copy(), 8, BLOCK=8)


def test_heuristics_compute_meta_parameters(rng, builds):
    kernel = tilelab.heuristics({"BLOCK": lambda meta: tilelab.next_power_of_2(meta["n"])})(tilelab.jit(add.fn))
    launch(kernel, rng, 100)
    assert builds[-1][2]["BLOCK"] == 128


def test_helpers():
    assert tilelab.cdiv(1000, 128) == 8 and tilelab.cdiv(1024, 128) == 8
    assert [tilelab.next_power_of_2(n) for n in (0, 1, 2, 3, 100, 128)] == [1, 1, 2, 4, 128, 128]


def test_a_config_out_of_resources_is_skipped(slow, rng):
    from tilelab.errors import OutOfResources

    def bench(fn):  # BLOCK 64, the fastest, needs more shared memory than there is
        fn()
        if slow.blocks[-1] == 64:
            raise OutOfResources(262144, 232448, "shared memory")
        return DELAY_MS[slow.blocks[-1]]

    kernel = tuned_add(do_bench=bench)
    launch(kernel, rng, 500)
    assert kernel.best_config.kwargs == {"BLOCK": 128}
