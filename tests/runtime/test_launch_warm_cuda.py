"""Warm CUDA launches on a stand-in driver: what reaches ``cuLaunchKernel``, and when the shortcut must miss."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import tilelab
from tilelab.compiler.interpreter.errors import KernelRuntimeError
from tilelab.runtime.keys import call_key

from .fake_cuda import FakeDeviceArray, Tensor, fake_driver, read_params
from .kernels import add, scale

PARAMS = [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int32]  # add(x, y, out, n)


@pytest.fixture
def driver():
    with fake_driver() as drv:
        yield drv


def arrays(rng, kind, n=64, dtype=np.float32, offset=0):
    wrap = {"tensor": Tensor, "device": FakeDeviceArray}[kind]
    return [wrap(rng.standard_normal(n + offset).astype(dtype)[offset:]) for _ in range(3)]


def address(a) -> int:
    return a.host.ctypes.data


@pytest.mark.parametrize("kind", ["tensor", "device"])
def test_warm_launches_pass_each_calls_pointers_and_scalars(rng, builds, driver, kind):
    kernel = tilelab.jit(add.fn)
    for _ in range(3):
        x, y, out = arrays(rng, kind)
        n = int(rng.integers(2, 1000)) * 16
        kernel[(n // 32,)](x, y, out, n, BLOCK=32)
        grid, block, params = driver.launches[-1]
        assert grid == (n // 32, 1, 1) and block == 128
        assert read_params(params, PARAMS) == [address(x), address(y), address(out), n]
    assert len(builds) == 1 and len(kernel.launches) == 1


def test_scalars_wrap_and_round_like_the_parameter_types(rng, driver):
    kernel = tilelab.jit(scale.fn)
    x, out, _ = arrays(rng, "tensor")
    for alpha in rng.standard_normal(2):
        kernel[(2,)](x, out, 2**31 + 17, float(alpha), 3, BLOCK=32)
        values = read_params(driver.launches[-1][2], [ctypes.c_uint64] * 2 + [ctypes.c_int64, ctypes.c_float] * 1)
        assert values[2] == 2**31 + 17 and values[3] == np.float32(alpha)


@pytest.mark.parametrize(
    "change",
    [
        dict(dtype=np.float64),  # dtype changes
        dict(offset=1),  # misaligned pointer
        dict(device=1),  # another GPU
        dict(n=64.0),  # scalar type changes
    ],
)
def test_a_changed_argument_misses_the_warm_key(rng, driver, change):
    x, y, out = arrays(rng, "tensor")
    key = call_key((x, y, out, 64), {"BLOCK": 32}, add.constexpr_flags, add.by_value)
    dtype, offset = change.get("dtype", np.float32), change.get("offset", 0)
    x2 = Tensor(rng.standard_normal(64 + offset).astype(dtype)[offset:], change.get("device", 0))
    other = call_key((x2, y, out, change.get("n", 64)), {"BLOCK": 32}, add.constexpr_flags, add.by_value)
    assert key is not None and other != key


def test_a_misaligned_pointer_compiles_a_kernel_without_the_alignment_hint(rng, builds, driver):
    kernel = tilelab.jit(add.fn)
    kernel[(2,)](*arrays(rng, "device"), 64, BLOCK=32)
    kernel[(2,)](*arrays(rng, "device", offset=1), 64, BLOCK=32)
    assert len(builds) == 2 and builds[0][3]["x"] == 16 and builds[1][3]["x"] == 1


def test_a_wrong_dtype_after_warm_launches_still_names_the_argument(rng, driver):
    kernel = tilelab.jit(add.fn)
    x, y, out = arrays(rng, "tensor")
    kernel[(2,)](x, y, out, 64, BLOCK=32)
    kernel[(2,)](x, y, out, 64, BLOCK=32)
    bad = Tensor(rng.standard_normal(64).astype(np.float16))
    with pytest.raises(tilelab.LaunchError, match="argument 'out'"):
        kernel.warmup(x, y, out, 64, BLOCK=32, grid=(2,))[(2,)](x, y, bad, 64)


def test_a_wrong_argument_kind_after_warm_launches_gives_the_clear_error(rng, driver):
    kernel = tilelab.jit(add.fn)
    x, y, out = arrays(rng, "tensor")
    kernel[(2,)](x, y, out, 64, BLOCK=32)
    with pytest.raises(tilelab.LaunchError, match="argument 'y': unsupported type object"):
        kernel[(2,)](x, object(), out, 64, BLOCK=32)


def test_a_tensor_on_another_gpu_never_takes_the_warm_plan(rng, driver):
    kernel = tilelab.jit(add.fn)
    x, y, out = (Tensor(rng.standard_normal(64).astype(np.float32), device=1) for _ in range(3))
    for _ in range(2):
        with pytest.raises(KernelRuntimeError, match="argument .x.: an array on cuda:1 cannot be used"):
            kernel[(2,)](x, y, out, 64, BLOCK=32)
    assert not kernel.launches and not driver.launches


def test_an_empty_grid_launches_nothing_warm_or_cold(rng, driver):
    kernel = tilelab.jit(add.fn)
    x, y, out = arrays(rng, "device")
    for _ in range(2):
        kernel[(0,)](x, y, out, 64, BLOCK=32)
    assert driver.launches == []


def test_a_callable_grid_sees_the_arguments_on_warm_launches(rng, driver):
    kernel = tilelab.jit(add.fn)
    x, y, out = arrays(rng, "device")
    for n in (64, 128):
        kernel[lambda meta: (meta["n"] // meta["BLOCK"],)](x, y, out, n, BLOCK=16)
        assert driver.launches[-1][0] == (n // 16, 1, 1)


def test_the_sanitizer_setting_is_honoured_after_warm_launches(rng, driver, monkeypatch):
    kernel = tilelab.jit(add.fn)
    x, y, out = arrays(rng, "device")
    kernel[(2,)](x, y, out, 64, BLOCK=32)
    monkeypatch.setenv("TILELAB_SANITIZE", "1")
    with pytest.raises(KernelRuntimeError, match="sanitizer runs on the interpreter"):
        kernel[(2,)](x, y, out, 64, BLOCK=32)


def test_host_descriptors_take_the_warm_plan_and_each_calls_parts(rng, builds, driver, monkeypatch):
    """Launches over host tensor descriptors fill the parameter buffer straight from the descriptors
    (no marshalling per launch): each call's base address, shape and strides reach the tensor maps."""
    from tilelab.runtime import tensormaps
    from tilelab.runtime.compiled import CompiledKernel
    from tilelab.tools.tensor_descriptor import TensorDescriptor

    from .test_tensor_descriptors import shifted_copy

    maps, slow = [], []
    full = CompiledKernel.launch_normalized

    def encode(address, dims, strides, *rest):
        maps.append((address, dims, strides))
        return bytes(128)

    def launch_normalized(self, *args, **kwargs):
        slow.append(1)
        return full(self, *args, **kwargs)

    monkeypatch.setattr(tensormaps, "_tiled", encode)
    monkeypatch.setattr(CompiledKernel, "launch_normalized", launch_normalized)
    kernel = tilelab.jit(shifted_copy.fn)

    def describe(t, rows, stride=32):
        return TensorDescriptor(t, [rows, 24], [stride, 1], [8, 8])

    for rows in (13, 21, 9):
        src, dst = (Tensor(rng.standard_normal((rows, 32)).astype(np.float32)) for _ in range(2))
        kernel[(3, 3)](describe(src, rows), describe(dst, rows), 0, 0, 8, 8)
        assert maps[-1] == (address(dst), (rows, 24), (32, 1))  # the store's map (the load goes by pointers)
    assert len(builds) == 1 and len(driver.launches) == len(maps) == 3 and len(slow) == 1  # the first launch only
    bad = describe(src, 9)
    bad.strides = [6, 1]  # the same key classes as before, yet rows not 16 bytes apart: refused, named
    with pytest.raises(tilelab.LaunchError, match="src_desc.*multiples of 16 bytes"):
        kernel[(3, 3)](bad, describe(dst, 9), 0, 0, 8, 8)
