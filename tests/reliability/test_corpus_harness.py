"""The corpus benchmark's harness on the CPU: every case's setup builds, and its outputs take the poison.

A GPU run checks each config after filling its outputs with NaN (``poison``); an output object
that cannot be filled that way failed every config of its case, under both compilers.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from benchmarks.corpus.cases import CASES  # noqa: E402
from benchmarks.corpus.run import TorchMaker, poison  # noqa: E402


class OneElementMaker(TorchMaker):
    """Tensors of the requested rank and dtype, one element each, on the CPU: enough to build a setup."""

    def __init__(self):
        self.torch = torch
        self.dtypes = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
                       "fp8e4": torch.float8_e4m3fn, "i32": torch.int32}  # fmt: skip
        self.one = torch.tensor(1.0)

    def empty(self, *shape, dtype="f32"):
        return torch.zeros((1,) * len(shape), dtype=self.dtypes[dtype])

    randn = zeros = empty

    def randint(self, high, shape):
        return torch.zeros((1,) * len(shape), dtype=torch.int32)

    def int8(self, *shape):
        return torch.zeros((1,) * len(shape), dtype=torch.int8)


@pytest.mark.parametrize("name", sorted(CASES))
def test_outputs_take_the_poison(name):
    setup = CASES[name](OneElementMaker())
    if setup.reset:
        return  # the case sets its outputs itself
    poison(setup.outs)
    for out in setup.outs:
        value = out.float() if hasattr(out, "float") else out
        assert torch.isnan(value).all() or (value == -(2**31) + 7).all()


def test_timing_in_turns_rotates_the_order_and_takes_each_median():
    """Each function is timed once a round, the first place rotating; a cell is the median of its rounds."""
    from benchmarks.corpus.run import in_turns

    readings = {"triton": [3.0, 1.0, 2.0], "tilelab": [9.0, 5.0, 4.0], "torch": [7.0, 8.0, 6.0]}
    order = []

    def fake_bench(fn, warmup, rep, return_mode):
        assert return_mode == "median"
        order.append(fn())
        return readings[order[-1]].pop(0)

    fns = {name: (lambda name=name: name) for name in readings}
    assert in_turns(fns, fake_bench) == {"triton": 2.0, "tilelab": 5.0, "torch": 7.0}
    assert order == ["triton", "tilelab", "torch", "tilelab", "torch", "triton", "torch", "triton", "tilelab"]


def test_variants_are_each_config_with_the_options_over_it():
    """``--variant maxnreg=32,num_stages=1``: the configs as listed, then each with those options; a name that is
    neither a launch option nor one of the config's constexprs is refused (it would time a copy of the config)."""
    from benchmarks.corpus.run import _variant_text, variants_of

    configs = [{"num_warps": 8, "num_stages": 3, "BLOCK": 4096}, {"num_warps": 16, "num_stages": 3, "BLOCK": 8192}]
    out = variants_of(configs, ["maxnreg=32,num_stages=1", "BLOCK=2048"])
    assert out[:2] == configs and len(out) == 6
    assert out[2] == {"num_warps": 8, "num_stages": 1, "BLOCK": 4096, "maxnreg": 32}
    assert out[5] == {"num_warps": 16, "num_stages": 3, "BLOCK": 2048}
    assert _variant_text(out[3]) == "8192/16w/1s/maxnreg 32" and _variant_text(configs[0]) == "4096/8w/3s"
    with pytest.raises(SystemExit, match="maxnregs is neither a launch option nor a constexpr"):
        variants_of(configs, ["maxnregs=32"])
    with pytest.raises(SystemExit, match="expected name=int pairs"):
        variants_of(configs, ["maxnreg"])


def test_each_config_s_timed_function_launches_that_config():
    """The function timed for a config launches that config (after ``before``), whatever configs come after it."""
    from types import SimpleNamespace

    from benchmarks.corpus.run import launchers

    calls = []

    class Kernel:
        def __getitem__(self, grid):
            return lambda *args, **cfg: calls.append((grid, args, cfg["BLOCK"]))

    setup = SimpleNamespace(
        args=lambda c: (c["BLOCK"] * 2,), grid=lambda c: (c["BLOCK"] // 64,), before=lambda: calls.append("before")
    )
    timed = [launchers(setup, Kernel(), {"BLOCK": b, "num_warps": 4})[1] for b in (128, 256, 512)]
    timed[0]()
    timed[1]()
    assert calls == ["before", ((2,), (256,), 128), "before", ((4,), (512,), 256)]
    launch, plain = launchers(SimpleNamespace(**{**vars(setup), "before": None}), Kernel(), {"BLOCK": 64})
    assert plain is launch


def test_the_fastest_contender_in_turns_is_kept_not_the_sweep_s():
    """Configs the sweep found within 5% of its best are timed again in turns with the other compiler's and
    torch's; each compiler's row is its fastest there (the sweep's order does not decide), and a compiler
    whose configs all failed has no time."""
    from benchmarks.corpus.run import fastest_in_turns

    readings = {"a": 1.30, "b": 1.20, "c": 1.25, "torch": 1.10}

    def fake_bench(fn, warmup, rep, return_mode):
        return readings[fn()]

    contenders = {
        "triton": [({"BLOCK": 1}, lambda: "c", "ck-c")],
        "tilelab": [({"BLOCK": 2}, lambda: "a", "ck-a"), ({"BLOCK": 3}, lambda: "b", "ck-b")],
        "other": [],
    }
    best, torch_ms = fastest_in_turns(contenders, lambda: "torch", fake_bench)
    assert best == {
        "triton": (1.25, {"BLOCK": 1}, "ck-c"),
        "tilelab": (1.20, {"BLOCK": 3}, "ck-b"),
        "other": (None, None, None),
    }
    assert torch_ms == 1.10
