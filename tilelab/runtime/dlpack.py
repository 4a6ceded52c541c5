"""DLPack: reading an array's address, dtype and device from its ``__dlpack__`` capsule.

Why: JAX, CuPy, torch, TensorFlow, PaddlePaddle and most array libraries export their
arrays through DLPack, a small C struct (``DLTensor``) handed over in a Python capsule.
Reading the struct with ctypes lets a launch take any of them without importing the
library. Both capsule kinds are understood: the classic ``"dltensor"`` and DLPack 1.x's
``"dltensor_versioned"``. The capsule is never marked as consumed, so its destructor frees
the export again; the memory stays valid while the original array lives.

    view = read_capsule(np.arange(4.0).__dlpack__())
    view.device, view.dtype, view.shape     # ('cpu', 0), float64, (4,)
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from tilelab.compiler.ir.types import ml_dtypes_module

#: DLPack device types (``DLDeviceType``) by number, as tilelab names them.
DEVICE_NAMES = {
    1: "cpu",
    2: "cuda",
    3: "cuda",  # pinned host memory: a CUDA kernel reaches it through unified addressing
    4: "opencl",
    7: "vulkan",
    8: "metal",
    9: "vpi",
    10: "rocm",
    11: "rocm_host",
    12: "ext_dev",
    13: "cuda",  # managed memory
    14: "oneapi",
    15: "webgpu",
    16: "hexagon",
    17: "maia",
}

#: ``DLDataTypeCode`` -> numpy kind letter, or (for float8 codes) the ml_dtypes name.
_KINDS = {0: "i", 1: "u", 2: "f", 5: "c"}
_NAMED = {
    4: "bfloat16",
    7: "float8_e3m4",
    8: "float8_e4m3",
    9: "float8_e4m3b11fnuz",
    10: "float8_e4m3fn",
    11: "float8_e4m3fnuz",
    12: "float8_e5m2",
    13: "float8_e5m2fnuz",
}
_CODE_NAMES = {3: "opaque handle", 14: "float8_e8m0fnu", 15: "float6_e2m3fn", 16: "float6_e3m2fn", 17: "float4_e2m1fn"}


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    """The ``DLTensor`` struct of ``dlpack.h``."""

    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _Device),
        ("ndim", ctypes.c_int32),
        ("dtype", _DataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _ManagedVersioned(ctypes.Structure):
    """The head of ``DLManagedTensorVersioned`` (DLPack 1.x), up to its ``DLTensor``."""

    _fields_ = [
        ("version", _Version),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]


class DLPackError(TypeError):
    """An object's DLPack export cannot be used (an element type or capsule tilelab does not read)."""


@dataclass(frozen=True)
class DLPackView:
    """What a capsule describes: first element's ``address``, numpy ``dtype``, ``device``, shape, strides."""

    address: int
    dtype: np.dtype
    device: tuple[str, int]  # ("cuda", 0)
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None  # in elements; None means C-contiguous


def element_dtype(code: int, bits: int, lanes: int = 1) -> np.dtype:
    """The numpy dtype of a ``DLDataType`` (``(2, 32, 1)`` -> float32); raises ``DLPackError``."""
    if lanes == 1 and code == 6 and bits == 8:
        return np.dtype(np.bool_)
    if lanes == 1 and code in _KINDS and bits in (8, 16, 32, 64, 128):
        try:
            return np.dtype(f"{_KINDS[code]}{bits // 8}")
        except TypeError:
            pass
    name = _NAMED.get(code)
    if lanes == 1 and name and hasattr(ml_dtypes_module(), name):
        dtype = np.dtype(getattr(ml_dtypes_module(), name))
        if dtype.itemsize * 8 == bits:
            return dtype
    what = name or _CODE_NAMES.get(code) or f"type code {code}"
    raise DLPackError(f"unsupported DLPack element type {what} ({bits} bits, {lanes} lanes)")


def read_capsule(capsule) -> DLPackView:
    """Read the ``DLTensor`` of a ``"dltensor"`` or ``"dltensor_versioned"`` capsule."""
    name = _get_name(capsule)
    if name == b"dltensor":
        tensor = DLTensor.from_address(_get_pointer(capsule, name))  # DLManagedTensor starts with it
    elif name == b"dltensor_versioned":
        tensor = _ManagedVersioned.from_address(_get_pointer(capsule, name)).dl_tensor
    else:
        raise DLPackError(f"__dlpack__ returned a capsule named {name!r}, not a DLPack tensor")
    t = tensor.dtype
    dtype = element_dtype(t.code, t.bits, t.lanes)
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    strides = tuple(tensor.strides[i] for i in range(tensor.ndim)) if tensor.strides else None
    kind = DEVICE_NAMES.get(tensor.device.device_type, f"device type {tensor.device.device_type}")
    address = (tensor.data or 0) + tensor.byte_offset
    return DLPackView(address, dtype, (kind, tensor.device.device_id), shape, strides)


def export(value, device_type: int):
    """``value.__dlpack__()``; CUDA exports are ordered with the legacy default stream launches use."""
    if device_type in (2, 3, 13):
        try:
            return value.__dlpack__(stream=1)
        except TypeError:  # an exporter without the stream argument
            pass
    return value.__dlpack__()


def describe(value) -> DLPackView:
    """The ``DLPackView`` of an object with ``__dlpack__`` (and, usually, ``__dlpack_device__``)."""
    device_type = value.__dlpack_device__()[0] if hasattr(value, "__dlpack_device__") else 1
    return read_capsule(export(value, int(device_type)))
