"""Tensor maps on a stand-in driver: what reaches ``cuTensorMapEncodeTiled``, the cache, and the launch boxes."""

from __future__ import annotations

import ctypes
import enum
from types import SimpleNamespace

import numpy as np
import pytest

from tilelab.compiler.backends import cuda as backend
from tilelab.compiler.interpreter.errors import KernelRuntimeError
from tilelab.compiler.options import CompileOptions
from tilelab.runtime import cuda_driver, stages, tensormaps
from tilelab.runtime.cuda_driver import ParamBuffer, TensorMapParam
from tilelab.runtime.cuda_target import CudaTarget, warm_cuda_launch

from .fake_cuda import FakeDeviceArray, FakeDriver, fake_driver, read_params
from .kernels import add

ADDRESS = 0x7F00_0000_0000

#: a_desc over a (rows, cols) f16 array whose row pitch is an argument: add-like parameters (a, rows, cols, pitch)
A_DESC = {
    "base": 0,
    "shape": [["arg", 1], ["arg", 2]],
    "strides": [["arg", 3], ["const", 1]],
    "box": [128, 64],
    "dtype": "f16",
    "swizzle": 128,
    "fill": "zero",
    "name": "a_desc",
}


def recipe(**changes) -> dict:
    return {**A_DESC, **changes}


def enum_of(name: str, prefix: str, members: str) -> type:
    return enum.IntEnum(name, [f"{prefix}_{m}" for m in members.split()], start=0)


class Word64(int):
    """A ``cuuint64_t``: an int that remembers its width."""


class Word32(int):
    """A ``cuuint32_t``."""


class FakeTensorMap:
    """A ``CUtensorMap``: 128 bytes at ``getPtr()``, a pattern that says which encode made them."""

    def __init__(self, serial: int):
        self.data = (ctypes.c_ubyte * 128)(*[(serial * 37 + i) % 256 for i in range(128)])

    def getPtr(self) -> int:
        return ctypes.addressof(self.data)


def pattern(serial: int) -> bytes:
    return bytes(FakeTensorMap(serial).data)


class TmaDriver(FakeDriver):
    """``FakeDriver`` that also encodes tensor maps: ``encodes`` keeps each call's arguments."""

    CUtensorMapDataType = enum_of(
        "CUtensorMapDataType",
        "CU_TENSOR_MAP_DATA_TYPE",
        "UINT8 UINT16 UINT32 INT32 UINT64 INT64 FLOAT16 FLOAT32 FLOAT64 BFLOAT16",
    )
    CUtensorMapInterleave = enum_of("CUtensorMapInterleave", "CU_TENSOR_MAP_INTERLEAVE", "NONE 16B 32B")
    CUtensorMapSwizzle = enum_of("CUtensorMapSwizzle", "CU_TENSOR_MAP_SWIZZLE", "NONE 32B 64B 128B")
    CUtensorMapL2promotion = enum_of("CUtensorMapL2promotion", "CU_TENSOR_MAP_L2_PROMOTION", "NONE L2_64B L2_128B")
    CUtensorMapFloatOOBfill = enum_of(
        "CUtensorMapFloatOOBfill", "CU_TENSOR_MAP_FLOAT_OOB_FILL", "NONE NAN_REQUEST_ZERO_FMA"
    )
    cuuint64_t = Word64
    cuuint32_t = Word32

    def __init__(self):
        super().__init__()
        self.encodes = []
        self.error = None  # a CUresult to answer the next encodes with

    def cuTensorMapEncodeTiled(self, *args):
        names = "dtype rank address dims strides box element_strides interleave swizzle l2 fill".split()
        self.encodes.append(dict(zip(names, args)))
        if self.error is not None:
            return self.error, None
        return self.CUresult.CUDA_SUCCESS, FakeTensorMap(len(self.encodes))

    def cuGetErrorName(self, err):
        return self.CUresult.CUDA_SUCCESS, err.name.encode()

    def cuGetErrorString(self, err):
        return self.CUresult.CUDA_SUCCESS, b"invalid argument"


@pytest.fixture
def driver():
    with fake_driver():
        drv = TmaDriver()
        cuda_driver._state["driver"] = drv
        tensormaps._tiled.cache_clear()
        yield drv
        tensormaps._tiled.cache_clear()  # no fake maps for later tests


def test_dims_strides_and_box_reach_the_driver_innermost_first_strides_in_bytes(driver):
    three_d = recipe(
        shape=[["arg", 1], ["arg", 2], ["const", 64]],
        strides=[["arg", 3], ["arg", 4], ["const", 1]],
        box=[2, 128, 64],
    )
    data = tensormaps.encode(three_d, [ADDRESS, 7, 1000, 64000, 64])
    (call,) = driver.encodes
    assert data == pattern(1)
    assert call["rank"] == 3 and call["address"] == ADDRESS
    assert call["dims"] == [64, 1000, 7] and all(type(d) is Word64 for d in call["dims"])
    assert call["strides"] == [128, 128000] and all(type(s) is Word64 for s in call["strides"])
    assert call["box"] == [64, 128, 2] and all(type(b) is Word32 for b in call["box"])
    assert call["element_strides"] == [1, 1, 1] and all(type(e) is Word32 for e in call["element_strides"])
    assert call["interleave"] is TmaDriver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE
    assert call["l2"] is TmaDriver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B


@pytest.mark.parametrize(
    "dtype, data_type, size",
    [
        ("f16", "FLOAT16", 2),
        ("bf16", "BFLOAT16", 2),
        ("f32", "FLOAT32", 4),
        ("f64", "FLOAT64", 8),
        ("fp8e4nv", "UINT8", 1),
        ("fp8e5", "UINT8", 1),
        ("i8", "UINT8", 1),
        ("i16", "UINT16", 2),
        ("u32", "UINT32", 4),
        ("i32", "INT32", 4),
        ("i64", "INT64", 8),
        ("u64", "UINT64", 8),
    ],
)
def test_the_element_type_picks_the_data_type_and_scales_the_strides(driver, dtype, data_type, size):
    tensormaps.encode(recipe(dtype=dtype), [ADDRESS, 100, 64, 80])
    (call,) = driver.encodes
    assert call["dtype"] is getattr(TmaDriver.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{data_type}")
    assert call["strides"] == [80 * size]


@pytest.mark.parametrize("swizzle, name", [(0, "NONE"), (32, "32B"), (64, "64B"), (128, "128B")])
@pytest.mark.parametrize("fill, oob", [("zero", "NONE"), ("nan", "NAN_REQUEST_ZERO_FMA")])
def test_swizzle_and_fill_pick_their_driver_enums(driver, swizzle, name, fill, oob):
    tensormaps.encode(recipe(swizzle=swizzle, fill=fill), [ADDRESS, 100, 64, 64])
    (call,) = driver.encodes
    assert call["swizzle"] is getattr(TmaDriver.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{name}")
    assert call["fill"] is getattr(TmaDriver.CUtensorMapFloatOOBfill, f"CU_TENSOR_MAP_FLOAT_OOB_FILL_{oob}")


def test_constants_are_taken_as_they_are_and_args_read_from_the_values(driver):
    constant = recipe(base=2, shape=[["const", 256], ["arg", 0]], strides=[["const", 512], ["const", 1]])
    tensormaps.encode(constant, [48, 99, ADDRESS, 7])
    (call,) = driver.encodes
    assert call["address"] == ADDRESS and call["dims"] == [48, 256] and call["strides"] == [1024]


def test_a_second_encode_of_the_same_array_is_a_cache_hit(driver):
    first = tensormaps.encode(A_DESC, [ADDRESS, 100, 64, 64])
    again = tensormaps.encode(A_DESC, [ADDRESS, np.int64(100), np.int32(64), 64])  # numpy scalars key the same
    assert again == first and len(driver.encodes) == 1
    moved = tensormaps.encode(A_DESC, [ADDRESS + 4096, 100, 64, 64])
    taller = tensormaps.encode(A_DESC, [ADDRESS, 101, 64, 64])
    assert len(driver.encodes) == 3 and len({first, moved, taller}) == 3


def test_a_driver_error_names_the_descriptor_and_what_was_asked_and_is_not_cached(driver):
    driver.error = TmaDriver.CUresult.CUDA_ERROR_INVALID_VALUE
    with pytest.raises(KernelRuntimeError) as info:
        tensormaps.encode(A_DESC, [ADDRESS + 8, 100, 64, 72])
    message = str(info.value)
    assert message.startswith("argument 'a_desc': cuTensorMapEncodeTiled failed: CUDA_ERROR_INVALID_VALUE")
    assert "dims [100, 64]" in message and "strides [72, 1]" in message and "box [128, 64]" in message
    driver.error = None
    assert tensormaps.encode(A_DESC, [ADDRESS + 8, 100, 64, 72]) == pattern(2)


def test_a_non_contiguous_last_dimension_is_refused_before_the_driver(driver):
    strided = recipe(strides=[["arg", 3], ["arg", 2]])
    with pytest.raises(KernelRuntimeError, match="argument 'a_desc': the last dimension must be contiguous"):
        tensormaps.encode(strided, [ADDRESS, 100, 2, 64])
    assert driver.encodes == []


def test_an_empty_dimension_is_refused_before_the_driver(driver):
    """A descriptor made in the kernel over an empty array (M = 0): a clear error, not the driver's."""
    with pytest.raises(
        KernelRuntimeError, match="argument 'a_desc': TMA copies need every dimension .* shape \\[0, 64\\]"
    ):
        tensormaps.encode(A_DESC, [ADDRESS, 0, 64, 72])
    assert driver.encodes == []


def test_a_tensormap_box_takes_bytes_through_value(rng):
    data = rng.integers(0, 256, 128, dtype=np.uint8).tobytes()
    buffer = ParamBuffer([ctypes.c_uint64, cuda_driver.PARAM_CTYPES["tensormap"]])
    buffer.boxes[0].value, buffer.boxes[1].value = ADDRESS, data
    assert read_params(buffer.address, [ctypes.c_uint64, TensorMapParam]) == [ADDRESS, data]
    with pytest.raises(ValueError, match="a tensor map is 128 bytes, got 127"):
        buffer.boxes[1].value = data[:127]


def test_function_launch_copies_a_tensormap_value_into_its_box(rng, driver):
    fn = cuda_driver.Function(None, "fn", ["ptr", "i32", "tensormap"], 4, 0)
    for _ in range(2):
        data = rng.integers(0, 256, 128, dtype=np.uint8).tobytes()
        fn.launch((2, 1, 1), [ADDRESS, 17, data])
        assert read_params(driver.launches[-1][2], fn.ctypes) == [ADDRESS, 17, data]


def stub_function(driver, kinds):
    """What ``warm_cuda_launch`` reads of a loaded ``Function``."""
    ctypes_types = [cuda_driver.PARAM_CTYPES[k] for k in kinds]
    success = driver.CUresult.CUDA_SUCCESS
    return SimpleNamespace(
        ctypes=ctypes_types, cu_launch=driver.cuLaunchKernel, handle="h", block=128, shared=0, success=success
    )


def test_a_warm_launch_fills_the_tensormap_box_from_the_filled_parameter_boxes(driver):
    fn = stub_function(driver, ["ptr", "i32", "i32", "i64", "tensormap"])
    warm = warm_cuda_launch(fn, [f"given[{i}]" for i in range(4)], [None] * 4, [A_DESC])
    warm((3, 1, 1), (ADDRESS, 100, 64, 72))
    assert read_params(driver.launches[-1][2], fn.ctypes) == [ADDRESS, 100, 64, 72, pattern(1)]
    assert driver.encodes[-1]["dims"] == [64, 100] and driver.encodes[-1]["strides"] == [144]
    warm((3, 1, 1), (ADDRESS, 100, 64, 72))
    assert len(driver.encodes) == 1
    warm((3, 1, 1), (ADDRESS + 256, 100, 64, 72))
    assert len(driver.encodes) == 2 and driver.encodes[-1]["address"] == ADDRESS + 256
    assert read_params(driver.launches[-1][2], fn.ctypes)[4] == pattern(2)


def test_a_failed_encode_in_a_warm_launch_launches_nothing_and_frees_the_boxes(driver):
    fn = stub_function(driver, ["ptr", "i32", "i32", "i64", "tensormap"])
    warm = warm_cuda_launch(fn, [f"given[{i}]" for i in range(4)], [None] * 4, [A_DESC])
    driver.error = TmaDriver.CUresult.CUDA_ERROR_INVALID_VALUE
    with pytest.raises(KernelRuntimeError, match="argument 'a_desc'"):
        warm((3, 1, 1), (ADDRESS, 100, 64, 72))
    driver.error = None
    warm((3, 1, 1), (ADDRESS, 100, 64, 72))  # the lock was released
    assert len(driver.launches) == 1


#: add(x, y, out, n) with a one-dimensional map of x over its n elements, in 32-element boxes
X_DESC = {
    "base": 0,
    "shape": [["arg", 3]],
    "strides": [["const", 1]],
    "box": [32],
    "dtype": "f32",
    "swizzle": 0,
    "fill": "nan",
    "name": "x_desc",
}


@pytest.fixture
def launcher(monkeypatch, driver):
    """A ``CudaLauncher`` of ``add`` compiled by a backend whose metadata asks for ``X_DESC``."""
    module = stages.build(add.fn, {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32"}, {"BLOCK": 32}, {})
    compiled = SimpleNamespace(
        metadata={"num_warps": 4, "shared": 0, "tensormaps": [X_DESC]},
        cubin=b"\x7fELF",
        asm={},
        sass_maker=lambda: None,
    )
    monkeypatch.setattr(backend, "compile_kernel", lambda module, options: compiled)
    target = CudaTarget("sm_90a")
    artifact = target.compile(module, CompileOptions(target="cuda"))
    assert artifact.metadata["param_kinds"] == ["ptr", "ptr", "ptr", "i32", "tensormap"]
    return target.load(artifact, module)


def test_a_launch_passes_the_tensormaps_after_the_parameters(rng, driver, launcher):
    x, y, out = (FakeDeviceArray(rng.standard_normal(64).astype(np.float32)) for _ in range(3))
    launcher((2, 1, 1), [x, y, out, 64])
    kinds = [ctypes.c_uint64] * 3 + [ctypes.c_int32, TensorMapParam]
    assert read_params(driver.launches[-1][2], kinds) == [x.address, y.address, out.address, 64, pattern(1)]
    assert driver.encodes[-1]["dims"] == [64] and driver.encodes[-1]["strides"] == []
    warm = launcher.warm_plan([x, y, out, 64])
    warm((2, 1, 1), (x, y, out, 64))
    assert len(driver.encodes) == 1 and read_params(driver.launches[-1][2], kinds)[4] == pattern(1)
    warm((2, 1, 1), (x, y, out, 48))
    assert len(driver.encodes) == 2 and driver.encodes[-1]["dims"] == [48]


def test_the_tensormaps_are_not_arguments_a_launch_is_given(rng, driver, launcher):
    x, y, out = (FakeDeviceArray(rng.standard_normal(64).astype(np.float32)) for _ in range(3))
    with pytest.raises(KernelRuntimeError, match=r"takes 4 arguments \(x, y, out, n\), got 5"):
        launcher((2, 1, 1), [x, y, out, 64, 64])
    assert launcher.warm_plan([x, y, out, 64, 64]) is None
    assert not driver.launches
