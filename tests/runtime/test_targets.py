"""Target choice (argument > TILELAB_TARGET > arrays), the registry, and what launchers receive."""

from __future__ import annotations

import numpy as np
import pytest

import tilelab
from tilelab.runtime import targets

from .kernels import scale


class RecordingTarget(targets.InterpretTarget):
    """Runs on the interpreter and records every launch's grid, arguments and sanitize flag."""

    name = "recording"

    def __init__(self):
        self.launches = []

    def compile(self, module, options):
        return targets.Artifact({"llir": "; recorded"}, {"num_regs": 7}, {})

    def load(self, artifact, module):
        inner = super().load(artifact, module)

        def launch(grid, args, sanitize=False):
            self.launches.append((grid, args, sanitize))
            return inner(grid, args, sanitize)

        return launch


@pytest.fixture
def recording(monkeypatch):
    target = RecordingTarget()
    monkeypatch.setitem(targets.TARGETS, "recording", lambda arch=None: target)
    monkeypatch.setattr(targets, "_instances", {})
    return target


def launch_scale(rng, **kwargs):
    x = rng.standard_normal(64).astype(np.float32)
    out = np.full_like(x, np.nan)
    ck = tilelab.jit(scale.fn)[(2,)](x, out, 64, 1.5, 1, BLOCK=32, **kwargs)
    np.testing.assert_allclose(out, x * np.float32(1.5), rtol=1e-6)
    return ck


def test_explicit_target_wins_over_environment(recording, rng, monkeypatch):
    monkeypatch.setenv("TILELAB_TARGET", "interpret")
    assert launch_scale(rng, target="recording").target == "recording"
    assert len(recording.launches) == 1


def test_environment_chooses_target(recording, rng, monkeypatch):
    monkeypatch.setenv("TILELAB_TARGET", "recording")
    ck = launch_scale(rng)
    assert ck.target == "recording" and ck.asm["llir"] == "; recorded" and ck.metadata["num_regs"] == 7


def test_numpy_arrays_default_to_cpu_when_available(monkeypatch):
    assert targets.choose_target(None, {"cpu"}) == targets.default_host_target()
    assert targets.choose_target(None, {"cpu", "cuda"}) == "cuda"
    monkeypatch.setitem(targets.TARGETS, "cpu", targets._lazy("tilelab.no_such_module", "CpuTarget", "CPU"))
    monkeypatch.setattr(targets, "_instances", {})
    assert targets.choose_target(None, {"cpu"}) == "interpret"
    monkeypatch.setitem(targets.TARGETS, "cpu", lambda arch=None: RecordingTarget())
    monkeypatch.setattr(targets, "_instances", {})
    assert targets.choose_target(None, {"cpu"}) == "cpu"


def test_launcher_receives_host_arrays_and_typed_scalars(recording, rng):
    launch_scale(rng, target="recording")
    grid, args, sanitize = recording.launches[0]
    assert grid == (2, 1, 1) and sanitize is False
    x, out, n, alpha = args
    assert isinstance(x, np.ndarray) and isinstance(out, np.ndarray)
    assert type(n) is np.int32 and n == 64
    assert type(alpha) is np.float32 and alpha == np.float32(1.5)


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_sanitize_reaches_the_launcher(how, recording, rng, monkeypatch):
    if how == "environment":
        monkeypatch.setenv("TILELAB_SANITIZE", "1")
        launch_scale(rng, target="recording")
    else:
        launch_scale(rng, target="recording", sanitize=True)
    assert recording.launches[-1][2] is True


def test_arch_suffix_reaches_the_target_factory(monkeypatch):
    seen = []
    monkeypatch.setitem(targets.TARGETS, "cuda", lambda arch=None: seen.append(arch) or RecordingTarget())
    monkeypatch.setattr(targets, "_instances", {})
    targets.get_target("cuda:sm_90")
    assert seen == ["sm_90"]


def test_register_target(monkeypatch):
    monkeypatch.setattr(targets, "TARGETS", dict(targets.TARGETS))
    targets.register_target("mine", lambda arch=None: RecordingTarget())
    assert isinstance(targets.get_target("mine"), RecordingTarget)
