"""The differential fuzzer: a fixed-seed slice of random programs, and the fuzzer's own checks.

``scripts/fuzz`` runs any number of programs; this slice keeps every target in step on
each change (40 programs, interpret against cpu and against cuda-ir, the sm_90a compile's final
IR on the interpreter, and cuda where a GPU is present).
"""

import os
from pathlib import Path

import numpy as np
import pytest

from .differential import compare
from .driver import run_chunk
from .programs import generate

BAD = ("mismatch", "crash")

SLICE = range(0, 40)


def test_fixed_seed_slice_agrees_on_every_target(tmp_path):
    """Every program of the slice gives the same outputs (or the same error) on interpret, cpu and cuda-ir.

    The programs run in a worker process (as ``scripts/fuzz`` runs them): a crash is reported
    with its seed instead of ending the test session.
    """
    targets = ["interpret", "cpu", "cuda-ir"]
    if _cuda_present():
        targets.append("cuda")
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root), TILELAB_CACHE_DIR=str(tmp_path), TILELAB_TIERED="0")
    records = list(run_chunk(SLICE.start, len(SLICE), targets, env, cwd=root))
    problems = [f"seed {r['seed']}: {r['status']}: {r['detail']}" for r in records if r["status"] in BAD]
    assert not problems, "\n".join(problems)
    assert len(records) == len(SLICE)


def test_a_worker_that_dies_is_a_crash_and_the_next_worker_goes_on(tmp_path):
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root), TILELAB_CACHE_DIR=str(tmp_path), TILELAB_FUZZ_ABORT_AT="3")
    records = list(run_chunk(1, 4, ["interpret"], env, cwd=root))
    assert [r["seed"] for r in records] == [1, 2, 3, 4]
    assert records[2]["status"] == "crash" and "exit -6" in records[2]["detail"]
    assert all(r["status"] in ("ok", "rejected") for i, r in enumerate(records) if i != 2)


def test_the_same_seed_gives_the_same_program_and_inputs():
    a, b = generate(123), generate(123)
    assert a.source == b.source
    for name in a.inputs:
        np.testing.assert_array_equal(a.inputs[name], b.inputs[name])
    assert generate(124).source != a.source


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int32])
def test_compare_sees_one_bit_of_difference_in_exact_outputs(dtype):
    ref = np.arange(1, 9).astype(dtype)
    got = ref.copy()
    got.view(f"u{ref.itemsize}")[3] += 1
    assert compare(ref, ref.copy(), exact=True) == ""
    assert "differs at 3" in compare(ref, got, exact=True)


def test_compare_equates_nans_and_bounds_approximate_floats():
    ref = np.array([np.nan, 1.0, 100.0], np.float32)
    assert compare(ref, np.array([np.nan, 1.0, 100.0], np.float32), exact=True) == ""
    assert compare(ref, np.array([np.nan, 1.00001, 100.0], np.float32), exact=False) == ""
    assert "differs at 1" in compare(ref, np.array([np.nan, 1.5, 100.0], np.float32), exact=False)


def test_generated_programs_cover_every_feature():
    """Over the slice, the generator reaches every dtype and feature it claims."""
    features, sources = set(), ""
    for seed in range(300):
        program = generate(seed)
        features |= program.features
        sources += program.source
    wanted = ("cast", "bitcast", "intdiv", "fmod", "shift", "sum", "argmax", "cumsum", "loop", "while", "if", "dot")
    wanted += ("gather",)
    assert set(wanted) <= features, set(wanted) - features
    assert "atomic_" in sources and "tl.bfloat16" in sources and "tl.uint64" in sources and "reverse=True" in sources


def _cuda_present() -> bool:
    from tests.conftest import cuda_device_present

    return cuda_device_present()


def test_a_worker_that_cannot_start_is_an_error_not_a_loop(tmp_path):
    """A worker that ends before its first program (here: run where its own module cannot be imported) stops the run
    with its message; it used to be started again and again, until Python's recursion limit."""
    env = dict(os.environ, PYTHONPATH=str(tmp_path), TILELAB_CACHE_DIR=str(tmp_path))
    with pytest.raises(RuntimeError, match="before its first program: .*ModuleNotFoundError"):
        list(run_chunk(1, 3, ["interpret"], env, cwd=tmp_path))
