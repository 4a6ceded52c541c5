"""Warm launches of every call shape on a stand-in driver: keyword arguments, options, grids, scalars, failures."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import tilelab
from tilelab.cuda import DeviceArray
from tilelab.runtime import cuda_driver
from tilelab.runtime.grid import grid_dims, normalize_grid
from tilelab.runtime.keys import call_key

from .fake_cuda import FakeDeviceArray, Tensor, fake_driver, read_params
from .kernels import add, scale

ADD_PARAMS = [ctypes.c_uint64] * 3 + [ctypes.c_int32]
SCALE_PARAMS = [ctypes.c_uint64] * 2 + [ctypes.c_int32, ctypes.c_float, ctypes.c_int32]


@pytest.fixture
def driver():
    with fake_driver() as drv:
        yield drv


@pytest.fixture
def kernel(monkeypatch):
    """A fresh ``add`` whose full launches are counted in ``kernel.full``."""
    k = tilelab.jit(add.fn)
    k.full = []
    real = k.launch_fully

    def counting(*args, **kwargs):
        k.full.append(args[0])
        return real(*args, **kwargs)

    k.launch_fully = counting
    return k


def device_arrays(rng, n=64, dtype=np.float32):
    return [FakeDeviceArray(rng.standard_normal(n).astype(dtype)) for _ in range(3)]


def address(a) -> int:
    return a.host.ctypes.data


def last_params(driver, types):
    return read_params(driver.launches[-1][2], types)


@pytest.mark.parametrize(
    "grid",
    [(4,), (2, 3), (2, 3, 5), (0,), (3, 0), (4.0,), (True,), (-1,), [4], 4, (1, 2, 3, 4), (np.int64(3),), ()],
)
def test_grid_dims_agrees_with_normalize_grid_or_leaves_the_grid_to_it(grid):
    dims = grid_dims(grid)
    if dims is not None:
        assert dims == normalize_grid(grid, {}, "k") and 0 not in dims
    else:
        assert type(grid) is not tuple or len(grid) not in (1, 2, 3) or not all(type(n) is int and n > 0 for n in grid)


def test_warm_launches_read_runtime_arguments_given_by_keyword(rng, driver, kernel):
    for n in rng.integers(2, 50, size=3) * 16:
        x, y, out = device_arrays(rng)
        kernel[(2,)](x, y, n=int(n), BLOCK=32, out=out)
        assert last_params(driver, ADD_PARAMS) == [address(x), address(y), address(out), n]
    assert len(kernel.full) == 1 and len(driver.launches) == 3


def test_tilelab_device_arrays_take_the_warm_path(rng, driver, kernel):
    hosts = [rng.standard_normal(64).astype(np.float32) for _ in range(3)]
    arrays = []
    for host in hosts:
        a = object.__new__(DeviceArray)  # a DeviceArray over host memory: no allocation needed
        a.shape, a.dtype, a.nbytes, a.ptr = host.shape, host.dtype, host.nbytes, host.ctypes.data
        arrays.append(a)
    for n in (64, 48):
        kernel[(2,)](*arrays, n, BLOCK=32)
        assert last_params(driver, ADD_PARAMS) == [h.ctypes.data for h in hosts] + [n]
    assert len(kernel.full) == 1
    for a in arrays:
        a.ptr = 0  # nothing to free


def test_positional_constexprs_and_options_are_keyed_by_value(rng, driver, kernel):
    x, y, out = device_arrays(rng)
    kernel[(2,)](x, y, out, 64, 32)
    kernel[(2,)](x, y, out, 64, 32)
    kernel[(2,)](x, y, out, 64, 16)
    kernel[(2,)](x, y, out, 64, 16, num_warps=8)
    kernel[(2,)](x, y, out, 64, 16, num_warps=8)
    assert len(kernel.full) == 3 and driver.launches[-1][1] == 256 and driver.launches[0][1] == 128


def test_call_keys_separate_constexpr_values_that_compare_equal(rng):
    x = Tensor(rng.standard_normal(64).astype(np.float32))

    def key(**kwargs):
        return call_key((x, x, x, 64), kwargs, add.constexpr_flags, add.by_value)

    keys = [key(BLOCK=1), key(BLOCK=True), key(BLOCK=1.0), key(BLOCK=0.0), key(BLOCK=-0.0), key(BLOCK=1, num_warps=8)]
    assert len(set(keys)) == len(keys) and key(BLOCK=1) == key(BLOCK=1)
    by_keyword = call_key((x, x), {"out": x, "n": 64, "BLOCK": 1}, add.constexpr_flags, add.by_value)
    other_dtype = Tensor(rng.standard_normal(64).astype(np.float64))
    assert by_keyword != call_key((x, x), {"out": other_dtype, "n": 64, "BLOCK": 1}, add.constexpr_flags, add.by_value)


def test_numpy_scalars_and_floats_reach_the_parameter_boxes(rng, driver):
    k = tilelab.jit(scale.fn)
    x, out, _ = device_arrays(rng)
    for _ in range(2):
        alpha, n = np.float32(rng.standard_normal()), np.int32(rng.integers(10, 60) * 16 + 5)
        k[(2,)](x, out, n, alpha, 3, BLOCK=32)
        assert last_params(driver, SCALE_PARAMS) == [address(x), address(out), n, alpha, 3]
    assert len(k.launches) == 1


def test_a_callable_grid_sees_defaults_constexprs_and_options_on_warm_launches(rng, driver, kernel):
    x, y, out = device_arrays(rng)
    seen = []
    grid = lambda meta: seen.append(dict(meta)) or (meta["n"] // meta["BLOCK"],)  # noqa: E731
    for n in (64, 96):
        kernel[grid](x, y, out, n, BLOCK=16, num_warps=2)
        assert driver.launches[-1][0] == (n // 16, 1, 1)
    assert len(kernel.full) == 1 and seen[0]["num_warps"] == seen[-1]["num_warps"] == 2
    assert set(seen[0]) <= set(seen[-1]) and seen[-1]["BLOCK"] == 16 and seen[-1]["out"] is out


@pytest.mark.parametrize(
    "grid, message",
    [((2.0,), r"grid\[0\] must be an int"), ((-1,), r"grid\[0\] must be >= 0"), ((True,), r"grid\[0\] must be an int")],
)
def test_bad_grids_are_reported_after_warm_launches(rng, driver, kernel, grid, message):
    x, y, out = device_arrays(rng)
    kernel[(2,)](x, y, out, 64, BLOCK=32)
    with pytest.raises(tilelab.LaunchError, match=message):
        kernel[grid](x, y, out, 64, BLOCK=32)
    assert len(driver.launches) == 1


@pytest.mark.parametrize(
    "args, message",
    [
        ((64, 32, 7), r"add\(\): takes 5 arguments .* but 6 were given"),
        ((2**70, 32), r"argument 'n': integer \d+ does not fit in 64 bits"),
        ((), r"add\(\): missing argument 'n'"),
    ],
)
def test_argument_errors_keep_their_messages_after_warm_launches(rng, driver, kernel, args, message):
    x, y, out = device_arrays(rng)
    kernel[(2,)](x, y, out, 64, BLOCK=32)
    with pytest.raises(tilelab.LaunchError, match=message):
        kernel[(2,)](x, y, out, *args)


def test_a_wide_int_after_warm_launches_compiles_an_i64_parameter(rng, driver, kernel):
    x, y, out = device_arrays(rng)
    kernel[(2,)](x, y, out, 64, BLOCK=32)
    kernel[(2,)](x, y, out, 2**40 + 16, BLOCK=32)
    assert len(kernel.full) == 2
    assert last_params(driver, ADD_PARAMS[:3] + [ctypes.c_int64]) == [address(a) for a in (x, y, out)] + [2**40 + 16]


def test_a_target_override_after_warm_launches_takes_the_full_path(rng, driver, kernel, monkeypatch):
    x, y = (rng.standard_normal(64).astype(np.float32) for _ in range(2))
    out = np.full_like(x, np.nan)
    kernel[(2,)](x, y, out, 64, BLOCK=32)
    monkeypatch.setenv("TILELAB_TARGET", "interpret")
    out[:] = np.nan
    kernel[(2,)](x, y, out, 64, BLOCK=32)
    np.testing.assert_allclose(out, x + y, rtol=1e-6)
    assert len(kernel.full) == 2


def test_warm_plans_only_for_arrays_already_on_device_0(rng, driver):
    x = rng.standard_normal(64).astype(np.float32)
    ck = tilelab.jit(add.fn).warmup(FakeDeviceArray(x), FakeDeviceArray(x), FakeDeviceArray(x), 64, BLOCK=32)
    plan = ck.launcher.warm_plan
    assert plan([Tensor(x), FakeDeviceArray(x), Tensor(x), 64]) is not None
    assert plan([Tensor(x, device=1), FakeDeviceArray(x), Tensor(x), 64]) is None
    assert plan([x, FakeDeviceArray(x), Tensor(x), 64]) is None  # host arrays are copied on every launch


def test_a_failed_warm_launch_raises_the_drivers_error(rng, driver, kernel, monkeypatch):
    failing = []
    error = driver.CUresult.CUDA_ERROR_INVALID_VALUE
    monkeypatch.setattr(driver, "cuLaunchKernel", lambda *a: (error,) if failing else (driver.CUresult.CUDA_SUCCESS,))
    monkeypatch.setattr(driver, "cuGetErrorName", lambda e: (0, b"CUDA_ERROR_INVALID_VALUE"), raising=False)
    monkeypatch.setattr(driver, "cuGetErrorString", lambda e: (0, b"invalid argument"), raising=False)
    x, y, out = device_arrays(rng)
    for _ in range(2):
        kernel[(2,)](x, y, out, 64, BLOCK=32)
    failing.append(True)
    with pytest.raises(cuda_driver.CudaError, match="cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE"):
        kernel[(2,)](x, y, out, 64, BLOCK=32)
    assert len(kernel.full) == 1
