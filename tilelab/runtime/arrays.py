"""Array interop: what a launch argument that is an array points to, and its element type.

A kernel receives a pointer to an array's first element. This module finds that address
and the element dtype for every array kind tilelab accepts, without importing optional
libraries: numpy arrays, torch tensors (CPU, or CUDA for the CUDA target), and any object
with ``__array_interface__`` or ``__cuda_array_interface__``. A non-contiguous array is
fine: the pointer is its first element, and the kernel does its own stride arithmetic.

    info = array_info(np.ones(4, np.float32))
    info.dtype, info.device        # float32, 'cpu'
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

try:
    import ml_dtypes
except ImportError:  # pragma: no cover - ml_dtypes is a dependency
    ml_dtypes = None


@dataclass
class ArrayInfo:
    """An array argument: its first element's ``address``, numpy ``dtype``, ``device``, host view."""

    obj: object
    address: int
    dtype: np.dtype
    device: str  # "cpu" or "cuda"
    host: np.ndarray | None  # a numpy view sharing memory (CPU arrays only)


def is_torch_tensor(value) -> bool:
    """True for a ``torch.Tensor`` (checked by class, so torch is never imported here)."""
    return any(c.__module__.startswith("torch") and c.__name__ == "Tensor" for c in type(value).__mro__)


def array_info(value) -> ArrayInfo | None:
    """Describe ``value`` if it is an array, else return ``None``."""
    if isinstance(value, np.generic):  # numpy scalars have an array interface, yet are scalars
        return None
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
    return None


def _torch_info(t) -> ArrayInfo:
    dtype = torch_dtype_to_numpy(t.dtype)
    device = "cuda" if t.device.type == "cuda" else "cpu"
    host = _torch_host_view(t, dtype) if device == "cpu" else None
    return ArrayInfo(t, int(t.data_ptr()), dtype, device, host)


def torch_dtype_to_numpy(torch_dtype) -> np.dtype:
    """``torch.float32`` -> ``float32``; bf16 and fp8 map to ml_dtypes; raises ``TypeError``."""
    name = str(torch_dtype).removeprefix("torch.")
    if name == "bool":
        return np.dtype(np.bool_)
    if ml_dtypes is not None and hasattr(ml_dtypes, name):
        return np.dtype(getattr(ml_dtypes, name))
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
