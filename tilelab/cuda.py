"""Device arrays on the GPU, built on the CUDA driver: ``tilelab.cuda.to_device(a)``.

For notebooks without torch or CuPy: a ``DeviceArray`` owns device memory, knows its
shape and dtype, exposes ``__cuda_array_interface__`` (so torch, CuPy and numba can
view it, and tilelab launches accept it) and comes back to the host with ``.numpy()``.

    x = tilelab.cuda.to_device(np.random.rand(1024).astype(np.float32))
    out = tilelab.cuda.empty_like(x)
    add[(4,)](x, x, out, 1024, BLOCK=256)
    out.numpy()
"""

from __future__ import annotations

import numpy as np

from .runtime import cuda_driver as _drv

is_available = _drv.is_available


class DeviceArray:
    """A C-contiguous array in GPU memory."""

    def __init__(self, shape, dtype=np.float32):
        self.shape = tuple(int(d) for d in np.atleast_1d(shape)) if np.ndim(shape) else (int(shape),)
        self.dtype = np.dtype(dtype)
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        self.ptr = _drv.mem_alloc(self.nbytes)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def __cuda_array_interface__(self) -> dict:
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.ptr, False),
            "version": 3,
            "strides": None,
        }

    def data_ptr(self) -> int:
        return self.ptr

    def copy_from_host(self, host: np.ndarray) -> DeviceArray:
        host = np.ascontiguousarray(host, dtype=self.dtype)
        if host.nbytes != self.nbytes:
            raise ValueError(f"host array has {host.nbytes} bytes, device array {self.nbytes}")
        _drv.copy_to_device(self.ptr, host.ctypes.data, self.nbytes)
        return self

    def numpy(self) -> np.ndarray:
        """A host copy of the array (waits for the device first)."""
        out = np.empty(self.shape, self.dtype)
        _drv.synchronize()
        _drv.copy_to_host(out.ctypes.data, self.ptr, self.nbytes)
        return out

    def fill_bytes(self, value: int) -> DeviceArray:
        _drv.memset_d8(self.ptr, value, self.nbytes)
        return self

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, ptr=0x{self.ptr:x})"

    def __del__(self):
        ptr, self.ptr = getattr(self, "ptr", 0), 0
        if ptr:
            try:
                _drv.mem_free(ptr)
            except Exception:  # interpreter shutdown: the context may already be gone
                pass


def to_device(host) -> DeviceArray:
    """Copy a numpy array (or anything ``np.asarray`` takes) to the GPU."""
    host = np.ascontiguousarray(host)
    return DeviceArray(host.shape, host.dtype).copy_from_host(host)


def empty(shape, dtype=np.float32) -> DeviceArray:
    """An uninitialized device array."""
    return DeviceArray(shape, dtype)


def empty_like(a) -> DeviceArray:
    return DeviceArray(a.shape, a.dtype)


def zeros(shape, dtype=np.float32) -> DeviceArray:
    return DeviceArray(shape, dtype).fill_bytes(0)
