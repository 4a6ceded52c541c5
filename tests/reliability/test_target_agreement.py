"""Targets agree where the differential fuzzer found them apart (Triton's rules decide).

* Booleans are ``i1`` integers wrapping modulo 2 (Triton's ``c + c`` is an ``i1`` add):
  ``c + c`` is all False, ``c - d`` and ``c + d`` are ``c ^ d``, ``c * d`` is ``c & d``, ``-c`` is ``c``.
  The interpreter took numpy's ``or`` for ``+`` and refused ``-``.
* Float constants beyond their type's range fold to infinity, as a conversion on the GPU
  does: ``x_f16 * 1e30`` crashed the CPU compile inside llvmlite.
"""

import numpy as np
import pytest

import tilelab
import tilelab.language as tl

TARGETS = ["interpret", "cpu"]


@tilelab.jit
def bool_arith(x, y, out_add, out_self, out_sub, out_mul, out_neg, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    c = tl.load(x + i) > 0
    d = tl.load(y + i) > 0
    tl.store(out_add + i, c + d)
    tl.store(out_self + i, c + c)
    tl.store(out_sub + i, c - d)
    tl.store(out_mul + i, c * d)
    tl.store(out_neg + i, -c)


@pytest.mark.parametrize("target", TARGETS)
def test_bool_arithmetic_wraps_modulo_two(target, rng):
    x, y = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    outs = [np.zeros(64, bool) for _ in range(5)]
    bool_arith[(1,)](x, y, *outs, BLOCK=64, target=target)
    c, d = x > 0, y > 0
    for got, want in zip(outs, [c ^ d, np.zeros(64, bool), c ^ d, c & d, c]):
        np.testing.assert_array_equal(got, want)


@tilelab.jit
def scale_f16(x, out, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(out + i, tl.load(x + i) * 1e30 + 1e-30)


@pytest.mark.parametrize("target", TARGETS)
def test_f16_constants_beyond_range_fold_to_infinity(target, rng):
    x = rng.standard_normal(32).astype(np.float16)
    x[:3] = [0.0, 1.0, -1.0]
    out = np.zeros(32, np.float16)
    scale_f16[(1,)](x, out, BLOCK=32, target=target)
    with np.errstate(invalid="ignore", over="ignore"):
        want = x * np.float16(np.inf) + np.float16(0.0)  # 1e30 -> inf, 1e-30 -> 0 in f16
    np.testing.assert_array_equal(out, want)


@tilelab.jit
def min_max(x, y, out_max, out_min, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    a, b = tl.load(x + i), tl.load(y + i)
    tl.store(out_max + i, tl.maximum(a, b))
    tl.store(out_min + i, tl.minimum(a, b))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_min_max_order_negative_zero_below_positive_zero(target, dtype, rng):
    """IEEE 754-2019 maximumNumber: the non-NaN operand, and max(0.0, -0.0) == 0.0 in either order."""
    x = rng.standard_normal(64).astype(dtype)
    y = rng.standard_normal(64).astype(dtype)
    x[:6], y[:6] = [0.0, -0.0, -0.0, 0.0, np.nan, 1.0], [-0.0, 0.0, -0.0, 0.0, 2.0, np.nan]
    hi, lo = np.zeros(64, dtype), np.zeros(64, dtype)
    min_max[(1,)](x, y, hi, lo, BLOCK=64, target=target)
    np.testing.assert_array_equal(hi, np.fmax(x, y))
    np.testing.assert_array_equal(lo, np.fmin(x, y))
    assert not np.signbit(hi[:2]).any() and np.signbit(lo[:3]).all() and not np.signbit(lo[3])
