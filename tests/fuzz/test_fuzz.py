"""The differential fuzzer: a fixed-seed slice of random programs, and the fuzzer's own checks.

``scripts/fuzz`` runs any number of programs; this slice keeps every target in step on
each change (about 60 programs, interpret against cpu, and cuda where a GPU is present).
"""

import numpy as np
import pytest

from .differential import compare, run
from .programs import generate

SLICE = range(0, 60)


def test_fixed_seed_slice_agrees_on_every_target():
    """Every program of the slice gives the same outputs (or the same error) on interpret and cpu."""
    targets = ["interpret", "cpu"]
    if _cuda_present():
        targets.append("cuda")
    problems = []
    for seed in SLICE:
        outcome = run(generate(seed), targets)
        if outcome.status == "mismatch":
            problems.append(f"seed {seed}: {outcome.detail}")
    assert not problems, "\n".join(problems)


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
    assert set(wanted) <= features, set(wanted) - features
    assert "atomic_" in sources and "tl.bfloat16" in sources and "tl.uint64" in sources


def _cuda_present() -> bool:
    from tests.conftest import cuda_device_present

    return cuda_device_present()
