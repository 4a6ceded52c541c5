"""Array interop: what a launch argument that is an array points to, and its element type.

A kernel receives a pointer to an array's first element. This module finds that address
and the element dtype for every array kind tilelab accepts, without importing optional
libraries: numpy arrays, torch tensors (CPU, or CUDA for the CUDA target), any object
with ``__array_interface__`` or ``__cuda_array_interface__``, and any object exporting
DLPack (``__dlpack__``: JAX, CuPy, TensorFlow...; read by ``tilelab.runtime.dlpack``).
A non-contiguous array is fine: the pointer is its first element, and the kernel does its
own stride arithmetic.

    info = array_info(np.ones(4, np.float32))
    info.dtype, info.device        # float32, 'cpu'
"""

from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass

import numpy as np

from tilelab.compiler.ir.types import ml_dtypes_module, scalar_from_numpy

from . import dlpack

#: torch's names of the element types numpy lacks, and the IR's: a CUDA tensor of these is named
#: without importing ml_dtypes (most of a second), which only a host view of its memory needs.
_TORCH_NARROW = {
    "bfloat16": "bf16",
    "float8_e4m3fn": "fp8e4nv",
    "float8_e5m2": "fp8e5",
    "float8_e4m3fnuz": "fp8e4b8",
    "float8_e5m2fnuz": "fp8e5b16",
}


@dataclass
class ArrayInfo:
    """An array argument: its first element's ``address``, element type, ``device``, host view.

    ``elem`` is a numpy dtype, or, for a torch tensor, the name of its torch dtype (``"bfloat16"``)
    until ``dtype`` is asked for; ``type_name`` answers without that.
    """

    obj: object
    address: int
    elem: np.dtype | str
    device: str  # "cpu" or "cuda" (a DLPack export may name another: "rocm", "metal"...)
    host: np.ndarray | None  # a numpy view sharing memory (CPU arrays only)
    device_id: int = 0
    ir_name: str | None = None  # the element type where ``elem`` holds only its bits (``tl.float8e4b15``)

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype of the elements (bf16 and fp8: ml_dtypes'); ``TypeError`` when there is none."""
        if isinstance(self.elem, str):
            self.elem = torch_dtype_to_numpy(self.elem)
        return self.elem

    @property
    def type_name(self) -> str:
        """The IR scalar name of the elements (``f32``, ``bf16``); ``KeyError`` when tilelab has none."""
        if self.ir_name is not None:
            return self.ir_name
        if isinstance(self.elem, str) and self.elem in _TORCH_NARROW:
            return _TORCH_NARROW[self.elem]
        try:
            return scalar_from_numpy(self.dtype).name
        except TypeError:
            raise KeyError(str(self.elem)) from None


def element_name(info: ArrayInfo) -> str | None:
    """The IR scalar name of an array's elements, ``None`` when tilelab has no such type."""
    try:
        return info.type_name
    except KeyError:
        return None


def is_torch_tensor(value) -> bool:
    """True for a ``torch.Tensor`` (checked by class, so torch is never imported here)."""
    return any(c.__module__.startswith("torch") and c.__name__ == "Tensor" for c in type(value).__mro__)


def array_info(value) -> ArrayInfo | None:
    """Describe ``value`` if it is an array, else return ``None``."""
    if isinstance(value, np.generic):  # numpy scalars have an array interface, yet are scalars
        return None
    if hasattr(value, "__tilelab_array__"):  # tilelab.reinterpret: the memory viewed as another dtype
        elem = getattr(getattr(value, "dtype", None), "ir", None)
        info = array_info(value.__tilelab_array__())
        if info is not None and getattr(elem, "has_numpy", True) is False:
            info.ir_name = elem.name  # viewed as its raw bits: the type is the wrapper's
        return info
    if isinstance(value, np.ndarray):
        return ArrayInfo(value, value.__array_interface__["data"][0], value.dtype, "cpu", value)
    if is_torch_tensor(value):
        return _torch_info(value)
    if hasattr(value, "__cuda_array_interface__"):
        iface = value.__cuda_array_interface__
        return ArrayInfo(value, int(iface["data"][0]), np.dtype(iface["typestr"]), "cuda", None)
    if hasattr(value, "__array_interface__"):
        host = np.asarray(value)
        return ArrayInfo(value, host.__array_interface__["data"][0], host.dtype, "cpu", host)
    if hasattr(value, "__dlpack__") and not isinstance(value, type):
        return _dlpack_info(value)
    return None


def stream_reader(value):
    """A function of no argument that gives the CUDA stream a launch over device array ``value`` is
    ordered on: the current stream of the library that owns the array, as Triton launches on
    torch's current stream. ``None`` for arrays of no such library (tilelab.cuda, numba, DLPack
    exports, host arrays): those launches go on the legacy default stream, 0.

        with torch.cuda.stream(side):       # the producer of x runs on side
            add[grid](x, y, out, n, BLOCK=1024)   # so does the kernel: no race with it
    """
    library = _library(value)
    if library is None:
        return None
    if library.__name__ == "torch" and value.is_cuda:
        raw = getattr(library._C, "_cuda_getCurrentRawStream", None)  # what torch.cuda.current_stream reads
        if raw is not None:
            return lambda: raw(0)
        return lambda: library.cuda.current_stream(0).cuda_stream
    if library.__name__ == "cupy" and hasattr(value, "__cuda_array_interface__"):
        return lambda: library.cuda.get_current_stream().ptr
    return None


def _library(value):
    """The imported top-level module that defines ``value``'s array class (torch for its subclasses too)."""
    for cls in type(value).__mro__:
        root = cls.__module__.split(".")[0]
        if root in ("torch", "cupy"):
            return sys.modules.get(root)
    return None


def launch_stream_reader(values):
    """The ``stream_reader`` of the first of ``values`` that has one (the arrays' library decides), or ``None``."""
    return next((r for r in map(stream_reader, values) if r is not None), None)


def launch_stream(values) -> int:
    """The stream of a launch over ``values``: that of ``launch_stream_reader``, else the legacy default stream 0."""
    reader = launch_stream_reader(values)
    return 0 if reader is None else int(reader())


def cuda_pointer(name: str, value) -> int | np.ndarray | None:
    """What a CUDA launch passes for array argument ``name``: a device address, or a host array to copy in.

    ``None`` when ``value`` is not an array. Device arrays come through
    ``__cuda_array_interface__``, ``data_ptr()`` (torch) or DLPack (device 0 only); CPU
    arrays (numpy, CPU torch tensors, CPU DLPack exports) come back as numpy views.
    """
    if is_torch_tensor(value) and value.is_cuda:
        if value.get_device() != 0:
            raise ArrayDeviceError(_other_device(name, f"cuda:{value.get_device()}"))
        return int(value.data_ptr())
    iface = getattr(value, "__cuda_array_interface__", None)
    if iface is not None:
        return int(iface["data"][0])
    if hasattr(value, "data_ptr") and getattr(value, "is_cuda", True):
        return int(value.data_ptr())
    info = array_info(value)
    if info is None:
        return None
    if info.device == "cuda" and info.device_id == 0:
        return info.address
    if info.host is not None:
        return info.host
    raise ArrayDeviceError(_other_device(name, f"{info.device}:{info.device_id}"))


def _other_device(name: str, device: str) -> str:
    return (
        f"argument '{name}': an array on {device} cannot be used by a CUDA launch "
        "(tilelab launches on cuda:0; host arrays are copied)"
    )


class ArrayDeviceError(TypeError):
    """An array lives on a device the launch cannot reach (another GPU, another vendor's device)."""


def _dlpack_info(value) -> ArrayInfo:
    """An ``ArrayInfo`` from the object's DLPack export; CPU arrays get a numpy view."""
    view = dlpack.describe(value)
    kind, index = view.device
    host = _dlpack_host_view(value, view) if kind == "cpu" else None
    return ArrayInfo(value, view.address, view.dtype, kind, host, index)


def _dlpack_host_view(value, view: dlpack.DLPackView) -> np.ndarray:
    """``np.from_dlpack(value)``, or (for dtypes numpy's DLPack import lacks, like bfloat16) a view by address."""
    try:
        return np.from_dlpack(value)
    except (BufferError, TypeError, ValueError, RuntimeError):  # numpy raises RuntimeError for bfloat16
        pass
    if not all(view.shape):
        return np.empty(view.shape, view.dtype)
    itemsize = view.dtype.itemsize
    strides = view.strides or tuple(int(np.prod(view.shape[i + 1 :], dtype=np.int64)) for i in range(len(view.shape)))
    low = sum((n - 1) * s for n, s in zip(view.shape, strides) if s < 0)  # offsets, in elements
    high = sum((n - 1) * s for n, s in zip(view.shape, strides) if s > 0)
    raw = (ctypes.c_char * ((high - low + 1) * itemsize)).from_address(view.address + low * itemsize)
    flat = np.frombuffer(raw, np.uint8).view(view.dtype)
    return np.lib.stride_tricks.as_strided(flat[-low:], view.shape, tuple(s * itemsize for s in strides))


def _torch_info(t) -> ArrayInfo:
    device = "cuda" if t.device.type == "cuda" else "cpu"
    if device == "cpu":
        dtype = torch_dtype_to_numpy(t.dtype)
        return ArrayInfo(t, int(t.data_ptr()), dtype, device, _torch_host_view(t, dtype))
    return ArrayInfo(t, int(t.data_ptr()), str(t.dtype).removeprefix("torch."), device, None)


def torch_dtype_to_numpy(torch_dtype) -> np.dtype:
    """``torch.float32`` (or its name) -> ``float32``; bf16 and fp8 map to ml_dtypes; raises ``TypeError``."""
    name = str(torch_dtype).removeprefix("torch.")
    if name == "bool":
        return np.dtype(np.bool_)
    if name.startswith(("bfloat16", "float8")) and hasattr(ml_dtypes_module(), name):
        return np.dtype(getattr(ml_dtypes_module(), name))
    try:
        return np.dtype(name)
    except TypeError:
        raise TypeError(f"torch dtype {name} has no numpy equivalent") from None


def _torch_host_view(t, dtype: np.dtype) -> np.ndarray:
    """A numpy array sharing the CPU tensor's memory (bf16/fp8 through a same-size integer view)."""
    t = t.detach()
    if dtype.kind in "biuf" and dtype.type.__module__ == "numpy":
        return t.numpy()
    import torch

    carrier = {1: torch.uint8, 2: torch.int16}[dtype.itemsize]
    return t.view(carrier).numpy().view(dtype)
