"""The CPU target's contract: artifacts (JSON metadata, object code), loading, threads, errors."""

import json

import numpy as np
import pytest

from tests.support.ir_builders import io_kernel, poisoned
from tilelab.runtime.cpu_target import CpuTarget
from tilelab.runtime.options import num_threads
from tilelab.runtime.targets import Artifact


def scale_kernel():
    return io_kernel(["f32"], "f32", lambda k, x: k.bin("mul", x, x), block=64)


def test_artifact_holds_asm_json_metadata_and_object_code():
    artifact = CpuTarget().compile(scale_kernel(), {})
    assert "define" in artifact.asm["llir"] and "io_grid" in artifact.asm["asm"]
    assert artifact.blobs["obj"][:4] == b"\x7fELF"
    meta = json.loads(json.dumps(artifact.metadata))  # what the disk cache stores
    assert meta["grid_symbol"] == "io_grid" and set(meta["phase_seconds"]) >= {"optimize", "codegen"}


def test_load_from_a_stored_artifact_alone(rng):
    """A warm process rebuilds the artifact from cached blobs and JSON and launches it."""
    module = scale_kernel()
    first = CpuTarget().compile(module, {})
    stored = Artifact(asm=dict(first.asm), metadata=json.loads(json.dumps(first.metadata)), blobs=dict(first.blobs))
    launch = CpuTarget().load(stored, module)
    x = rng.standard_normal(1000).astype(np.float32)
    out = poisoned(1000, np.float32)
    launch((16,), [x, out, 1000], False)
    np.testing.assert_array_equal(out, x * x)


@pytest.mark.parametrize("threads", ["1", "2", "7"])
def test_thread_count_does_not_change_results(rng, monkeypatch, threads):
    monkeypatch.setenv("TILELAB_NUM_THREADS", threads)
    assert num_threads() == int(threads)
    module = scale_kernel()
    launch = CpuTarget().load(CpuTarget().compile(module, {}), module)
    x = rng.standard_normal(5000).astype(np.float32)
    out = poisoned(5000, np.float32)
    launch((79,), [x, out, 5000], False)
    np.testing.assert_array_equal(out, x * x)


def test_empty_grid_runs_nothing(rng):
    module = scale_kernel()
    launch = CpuTarget().load(CpuTarget().compile(module, {}), module)
    out = poisoned(64, np.float32)
    launch((0,), [rng.standard_normal(64).astype(np.float32), out, 64], False)
    assert np.isnan(out).all()


def test_small_launches_stay_on_one_thread(monkeypatch, real_thread_policy):
    """Waking workers costs tens of microseconds: tiny grids run on the calling thread (by the static estimate)."""
    from tilelab.runtime import cpu_launch

    monkeypatch.setattr(cpu_launch, "MIN_WORK_PER_THREAD", 1 << 21)
    monkeypatch.setenv("TILELAB_NUM_THREADS", "4")
    module = scale_kernel()
    launch = CpuTarget().load(CpuTarget().compile(module, {}), module)
    per_program = launch.meta["work_per_program"]
    assert launch._threads_for(2) == 1
    assert launch._threads_for((2 << 21) // per_program - 1) == 1  # just under twice the threshold
    assert launch._threads_for(-(-(2 << 21) // per_program)) == 4  # then each thread gets an eighth of it


def test_timed_programs_decide_the_threads_against_the_wake_cost(monkeypatch, rng, real_thread_policy):
    """Once a launch on one thread has timed the programs, each thread must get WAKE_MULTIPLE wake costs of work."""
    from tilelab.runtime import cpu_launch

    monkeypatch.setenv("TILELAB_NUM_THREADS", "8")
    monkeypatch.setattr(cpu_launch, "_wake_seconds", 100e-6)
    module = scale_kernel()
    launch = CpuTarget().load(CpuTarget().compile(module, {}), module)
    x, out = rng.standard_normal(5000).astype(np.float32), np.zeros(5000, np.float32)
    for _ in range(3):  # the second and third launches on one thread time its programs
        launch((79,), [x, out, 5000], False)
    assert launch.program_seconds is not None and launch.program_seconds > 0
    np.testing.assert_array_equal(out, x * x)
    launch.program_seconds = 1e-6  # a share is 4 x 100 us of work
    assert launch._threads_for(100) == 1  # 100 us
    assert launch._threads_for(1000) == 2  # 1 ms: 2.5 shares of 400 us
    assert launch._threads_for(100_000) == 8  # capped by TILELAB_NUM_THREADS
    monkeypatch.setattr(cpu_launch, "_wake_seconds", 10e-6)  # a quiet machine: cheaper wakes, more threads
    assert launch._threads_for(1000) == 8


def test_a_split_that_saves_too_little_keeps_the_kernel_on_one_thread(monkeypatch, rng, real_thread_policy):
    """A kernel that waits on memory the cores share runs no faster split: it goes back to one thread."""
    from tilelab.runtime import cpu_launch

    monkeypatch.setenv("TILELAB_NUM_THREADS", "2")
    module = scale_kernel()
    x = rng.standard_normal(5000).astype(np.float32)
    for program_seconds, pays in ((1e-3, True), (1e-8, False)):
        launch = CpuTarget().load(CpuTarget().compile(module, {}), module)
        out = np.zeros(5000, np.float32)
        for _ in range(3):  # timed on one thread
            launch((79,), [x, out, 5000], False)
        cpu_launch._thread_pool()
        monkeypatch.setattr(cpu_launch, "_wake_seconds", 1e-9)  # splitting looks free: the rule splits
        launch.program_seconds = program_seconds  # 79 ms or 0.8 us on one thread, as if timed so
        assert launch._threads_for(79) == 2
        out[:] = 0
        launch((79,), [x, out, 5000], False)  # split: microseconds, far from 79 ms, far over 0.8 us
        np.testing.assert_array_equal(out, x * x)
        assert launch.split_pays == pays
        assert launch._threads_for(79) == (2 if pays else 1)


def test_calls_left_uninlined_are_reported_with_their_line():
    """The common passes inline every call; a module that still has one is refused clearly."""
    from tests.support.ir_builders import KernelBuilder
    from tilelab.compiler.backends.cpu import UnsupportedKernel
    from tilelab.compiler.ir import ops as O

    k = KernelBuilder("caller", {"x": "*fp32"})
    k.line(9)
    k.op(O.CallOp("helper", [k.arg("x")], []))
    module = k.finish()
    with pytest.raises(UnsupportedKernel, match="kern.py:9: call of helper was not inlined"):
        CpuTarget().compile(module, {})


def test_one_thread_means_one_thread(monkeypatch, real_thread_policy):
    """``TILELAB_NUM_THREADS=1`` holds whatever the estimate of the work."""
    monkeypatch.setenv("TILELAB_NUM_THREADS", "1")
    module = scale_kernel()
    launch = CpuTarget().load(CpuTarget().compile(module, {}), module)
    assert launch._threads_for(10**7) == 1
