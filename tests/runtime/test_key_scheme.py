"""One key scheme: a call key finds the warm launch, a ``Specialization`` the kernel (memory and disk)."""

from __future__ import annotations

import numpy as np
import pytest

import tilelab
from tilelab.compiler.interpreter import KernelRuntimeError
from tilelab.runtime.jit import JITFunction
from tilelab.runtime.keys import Specialization

from .kernels import add, copy_all, scale_default


@pytest.fixture
def specializations(monkeypatch):
    """A list that records every call of ``JITFunction.specialize`` (the full path; a warm launch never calls it)."""
    calls = []
    real = JITFunction.specialize
    monkeypatch.setattr(JITFunction, "specialize", lambda self, bound: calls.append(bound) or real(self, bound))
    return calls


@pytest.mark.parametrize("target", ["interpret", "cpu"])
def test_a_parameter_left_to_its_default_still_launches_warm(rng, specializations, target):
    kernel = tilelab.jit(scale_default.fn)
    for n in (100, 90):  # neither a multiple of 16: one specialization
        x = rng.standard_normal(n).astype(np.float32)
        out = np.full_like(x, np.nan)
        kernel[(4,)](x, out, n, target=target)
        np.testing.assert_allclose(out, 2.0 * x, rtol=1e-6)
    assert len(specializations) == 1 and len(kernel.launches) == 1


def test_sanitized_launches_launch_warm_and_still_check_bounds(rng, specializations):
    kernel = tilelab.jit(copy_all.fn)
    x = rng.standard_normal(128).astype(np.float32)
    out = np.full_like(x, np.nan)
    kernel[(1,)](x, out, 99, BLOCK=128, target="cpu", sanitize=True)  # copies all 128: n is not read
    np.testing.assert_array_equal(out, x)
    with pytest.raises(KernelRuntimeError, match="out-of-bounds"):
        kernel[(1,)](x[:100], out[:100], 100, BLOCK=128, target="cpu", sanitize=True)  # the same call key
    assert len(specializations) == 1


def test_kernels_are_kept_by_specialization(rng):
    kernel = tilelab.jit(add.fn)
    x = rng.standard_normal(64).astype(np.float32)
    kernel[(2,)](x, x, np.empty_like(x), 64, BLOCK=32, target="interpret")
    kernel[(2,)](x, x, np.empty_like(x), 64, BLOCK=32, target="interpret", num_warps=8)
    (first, second) = kernel.kernels
    assert isinstance(first, Specialization) and first.signature == second.signature
    assert (first.options.num_warps, second.options.num_warps) == (4, 8)
    assert first.digest(add.fn) != second.digest(add.fn)
    assert first.digest(add.fn) == Specialization.of(
        dict(first.signature), {"BLOCK": 32}, dict(first.divisibility), first.options
    ).digest(add.fn)
