"""The suite's own helpers: poisoned outputs, device round trips and the error measure."""

import ml_dtypes
import numpy as np
import pytest

from .support import assert_rel_norm, rel_norm_error


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.int32, np.uint8, np.bool_])
def test_poison_marks_every_element(poison, dtype):
    arr = poison(np.zeros(10, dtype=dtype))
    if np.dtype(dtype).kind == "V" or np.issubdtype(dtype, np.floating):
        assert np.isnan(arr.astype(np.float32)).all()
    elif dtype is np.int32:
        assert (arr == np.iinfo(np.int32).min).all()
    elif dtype is np.uint8:
        assert (arr == 255).all()
    else:
        assert arr.all()


def test_device_round_trip_copies(backend, dev, rng):
    x = rng.standard_normal((3, 5)).astype(np.float32)
    x_d = dev.put(x)
    assert x_d is not x
    np.testing.assert_array_equal(dev.get(x_d), x)
    assert np.isnan(dev.get(dev.empty((2, 2), np.float32))).all()


def test_rel_norm_error_flags_nan_and_large_errors():
    ref = np.array([1.0, 2.0, 3.0])
    assert rel_norm_error(ref * (1 + 1e-7), ref) < 1e-6
    with pytest.raises(AssertionError, match="NaN"):
        assert_rel_norm(np.array([1.0, np.nan, 3.0]), ref, 1e-3)
    with pytest.raises(AssertionError, match="relative norm error"):
        assert_rel_norm(ref * 1.01, ref, 1e-3)
