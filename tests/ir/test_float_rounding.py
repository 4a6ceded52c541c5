"""bf16 and fp8 rounding without ml_dtypes (``ScalarType.float_bits`` / ``rounded``), checked against it."""

import math

import ml_dtypes
import numpy as np
import pytest

from tilelab.compiler.ir.types import SCALARS

NARROW = {
    "bf16": ml_dtypes.bfloat16,
    "fp8e4nv": ml_dtypes.float8_e4m3fn,
    "fp8e5": ml_dtypes.float8_e5m2,
    "fp8e4b8": ml_dtypes.float8_e4m3fnuz,
    "fp8e5b16": ml_dtypes.float8_e5m2fnuz,
}

EDGES = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    448.0,
    464.0,
    465.0,
    480.0,
    -500.0,
    57344.0,
    61439.0,
    61440.0,
    65504.0,
    3.4e38,
    1e300,
    -1e300,
    math.inf,
    -math.inf,
    math.nan,
    -math.nan,
    2.0**-9,
    2.0**-10,
    1.5 * 2.0**-10,
    2.0**-17,
    2.0**-133,
    2.0**-134,
    3 * 2.0**-135,
    1e-45,
    1 + 2.0**-8,
    1 + 2.0**-8 + 2.0**-30,
    1 + 3 * 2.0**-8,
    240.0,
    247.9,
    248.0,
    -1e-9,
]


def reference(name, x):
    with np.errstate(all="ignore"):
        r = np.asarray(x, dtype=np.float64).astype(NARROW[name])
    return int(r.view(f"u{r.itemsize}")), float(r)


def same(a, b):
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))


@pytest.mark.parametrize("name", sorted(NARROW))
def test_rounding_matches_ml_dtypes(name):
    rng = np.random.default_rng(7)
    f32_patterns = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    # values near the type's own range: random significands over the exponents it has, and ties
    scaled = rng.standard_normal(20000) * np.exp2(rng.integers(-30, 20, 20000))
    ties = [(k + 0.5) * 2.0**e for k in range(16, 40) for e in (-12, -9, -3, 0, 4)]
    t = SCALARS[name]
    for x in [*EDGES, *map(float, f32_patterns), *map(float, scaled), *ties]:
        bits, value = reference(name, x)
        assert t.float_bits(x) == bits, (name, x)
        assert same(t.rounded(x), value), (name, x)


def test_native_types_keep_numpy_rounding():
    f16 = SCALARS["f16"]
    assert f16.float_bits(1.0) == 0x3C00 and f16.rounded(70000.0) == math.inf
    assert SCALARS["f32"].float_bits(-2.0) == 0xC0000000
    assert SCALARS["bf16"].float_bits(1.0) == 0x3F80 and SCALARS["bf16"].rounded(1.003) == 1.0
