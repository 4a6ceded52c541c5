"""DLPack arguments: capsules read with ctypes, CPU exports launched on the interpreter and the CPU."""

from __future__ import annotations

import ctypes

import ml_dtypes
import numpy as np
import pytest

from tests.runtime.kernels import add, scale
from tilelab.runtime import dlpack
from tilelab.runtime.arrays import ArrayDeviceError, array_info, cuda_pointer


class Exported:
    """An array seen only through ``__dlpack__`` / ``__dlpack_device__`` (as JAX or CuPy arrays are)."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


_NAME = ctypes.create_string_buffer(b"dltensor")
_new_capsule = ctypes.pythonapi.PyCapsule_New
_new_capsule.restype = ctypes.py_object
_new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class Forged:
    """A DLPack export built by hand: any device, any element type (no destructor, no real memory)."""

    def __init__(self, device_type, device_id=0, code=2, bits=32, address=0x7F0000001000):
        self.shape = (ctypes.c_int64 * 1)(8)
        self.tensor = dlpack.DLTensor(address, (device_type, device_id), 1, (code, bits, 1), self.shape, None, 16)
        self.device = (device_type, device_id)

    def __dlpack__(self, stream=None):
        return _new_capsule(ctypes.addressof(self.tensor), ctypes.cast(_NAME, ctypes.c_char_p), None)

    def __dlpack_device__(self):
        return self.device


@pytest.mark.parametrize("versioned", [False, True])
def test_capsule_matches_numpy(rng, versioned):
    a = rng.standard_normal((5, 6)).astype(np.float32)[::-1, 1::2]
    view = dlpack.read_capsule(a.__dlpack__(max_version=(1, 0)) if versioned else a.__dlpack__())
    assert view.address == a.__array_interface__["data"][0]
    assert (view.dtype, view.device, view.shape) == (a.dtype, ("cpu", 0), a.shape)
    assert view.strides == tuple(s // 4 for s in a.strides)


@pytest.mark.parametrize(
    "dtype",
    [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.bool_],
)
def test_exported_cpu_arrays_are_host_views(rng, dtype):
    a = (rng.standard_normal(7) * 50).astype(dtype)
    info = array_info(Exported(a))
    assert (info.dtype, info.device, info.address) == (a.dtype, "cpu", a.__array_interface__["data"][0])
    np.testing.assert_array_equal(info.host, a)


def test_bfloat16_and_fp8_exports_become_ml_dtypes(rng):
    torch = pytest.importorskip("torch")
    values = rng.standard_normal((4, 6)).astype(np.float32)
    t = torch.from_numpy(values).to(torch.bfloat16).flip(0)[:, ::2]  # strided, negative strides
    info = array_info(Exported(t))
    assert info.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(info.host.astype(np.float32), t.float().numpy())
    f8 = torch.from_numpy(values).to(torch.float8_e4m3fn)
    assert array_info(Exported(f8)).dtype == np.dtype(ml_dtypes.float8_e4m3fn)


@pytest.mark.parametrize("target", ["interpret", "cpu"])
def test_launch_with_exported_arrays(rng, target):
    n = 1000
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    add[(4,)](Exported(x), Exported(y), Exported(out), n, BLOCK=256, target=target)
    np.testing.assert_allclose(out, x + y, rtol=1e-6)


def test_launch_with_strided_exported_input(rng):
    x = rng.standard_normal(4000).astype(np.float32)
    out = np.full(1000, np.nan, np.float32)
    # the kernel gets the first element's address of x[1::3] and strides over memory itself
    scale[(4,)](Exported(x[1::3]), out, 1000, 3.0, 2, BLOCK=256, target="cpu")
    np.testing.assert_allclose(out, 3.0 * x[1:2001:2], rtol=1e-6)


def test_cuda_exports_are_read_from_the_capsule():
    info = array_info(Forged(device_type=2))
    assert (info.device, info.device_id, info.dtype, info.host) == ("cuda", 0, np.dtype(np.float32), None)
    assert info.address == 0x7F0000001000 + 16  # data + byte_offset
    assert cuda_pointer("x", Forged(device_type=2)) == info.address
    assert array_info(Forged(device_type=13)).device == "cuda"  # managed memory


def test_cpu_exports_are_copied_for_a_cuda_launch(rng):
    a = rng.standard_normal(10).astype(np.float32)
    host = cuda_pointer("x", Exported(a))
    assert isinstance(host, np.ndarray) and np.shares_memory(host, a)
    assert cuda_pointer("n", 3) is None


@pytest.mark.parametrize(("device", "where"), [((10, 0), "rocm:0"), ((2, 1), "cuda:1"), ((8, 0), "metal:0")])
def test_unreachable_devices_name_the_argument(device, where):
    with pytest.raises(ArrayDeviceError, match=f"argument 'x': an array on {where} cannot be used by a CUDA launch"):
        cuda_pointer("x", Forged(*device))


def test_unsupported_element_types_are_named():
    with pytest.raises(dlpack.DLPackError, match="unsupported DLPack element type float4_e2m1fn"):
        array_info(Forged(device_type=1, code=17, bits=4))
    with pytest.raises(dlpack.DLPackError, match="unsupported DLPack element type opaque handle"):
        array_info(Forged(device_type=2, code=3, bits=64))
    assert dlpack.element_dtype(5, 64) == np.complex64
