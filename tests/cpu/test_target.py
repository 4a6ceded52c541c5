"""The CPU target's contract: artifacts (JSON metadata, object code), loading, threads, errors."""

import json

import numpy as np
import pytest

from tests.support.ir_builders import io_kernel, poisoned
from tilelab.runtime.cpu_target import CpuTarget, num_threads
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


def test_small_launches_stay_on_one_thread(monkeypatch):
    """Waking workers costs tens of microseconds: tiny grids run on the calling thread."""
    from tilelab.runtime import cpu_target

    monkeypatch.setattr(cpu_target, "MIN_WORK_PER_THREAD", 1 << 21)
    monkeypatch.setenv("TILELAB_NUM_THREADS", "4")
    module = scale_kernel()
    launch = CpuTarget().load(CpuTarget().compile(module, {}), module)
    per_program = launch.meta["work_per_program"]
    assert launch._threads_for(2) == 1
    assert launch._threads_for(-(-4 * (1 << 21) // per_program)) == 4


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
