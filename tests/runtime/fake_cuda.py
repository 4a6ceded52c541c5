"""A stand-in CUDA driver and CUDA arrays, to exercise the CUDA launch path on a machine without a GPU.

``fake_driver()`` installs an object answering the few driver calls a launch makes (context,
module load, ``cuLaunchKernel``) and records every launch; ``FakeDeviceArray`` exposes
``__cuda_array_interface__`` like ``tilelab.cuda.DeviceArray``; ``FakeCudaTensor`` quacks like a
CUDA ``torch.Tensor`` (a real torch dtype, ``data_ptr()``, ``get_device()``). Kernels still
compile for real (PTX needs no GPU); only the driver is pretended.
"""

from __future__ import annotations

import ctypes
import enum
from contextlib import contextmanager

import numpy as np

from tilelab.runtime import cuda_driver


class _CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1


_SUCCESS = (_CUresult.CUDA_SUCCESS,)


class FakeDriver:
    """Answers driver calls with success; ``launches`` keeps ``(grid, block, params address)``,
    ``streams`` each launch's stream."""

    CUresult = _CUresult

    def __init__(self, record: bool = True):
        self.launches = []
        self.streams = []
        self.record = record  # a benchmark turns recording off

    def cuLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        if self.record:
            self.launches.append(((gx, gy, gz), bx, params))
            self.streams.append(stream)
        return _SUCCESS

    def cuModuleLoadData(self, image):
        return _CUresult.CUDA_SUCCESS, "module"

    def cuModuleGetFunction(self, module, name):
        return _CUresult.CUDA_SUCCESS, name

    def cuCtxSetCurrent(self, ctx):
        return (_CUresult.CUDA_SUCCESS,)

    def cuCtxSynchronize(self):
        return (_CUresult.CUDA_SUCCESS,)


@contextmanager
def fake_driver(record: bool = True):
    """Install a ``FakeDriver`` (with a device 0 context) for the duration of the block."""
    saved = dict(cuda_driver._state)
    driver = FakeDriver(record)
    cuda_driver._state.update(driver=driver, available=True, context="ctx", device=0)
    cuda_driver._state["info"] = cuda_driver.DeviceInfo("Fake GPU", (9, 0), 132, 232448, 65536, 2048, 233472)
    try:
        yield driver
    finally:
        cuda_driver._state.clear()
        cuda_driver._state.update(saved)


def read_params(address: int, ctypes_types: list) -> list:
    """The values a launch's parameter buffer at ``address`` points to, read as ``ctypes_types``."""
    slots = (ctypes.c_void_p * len(ctypes_types)).from_address(address)
    return [ct.from_address(slot).value for ct, slot in zip(ctypes_types, slots)]


class FakeDeviceArray:
    """A "device" array over host memory, seen through ``__cuda_array_interface__`` only."""

    def __init__(self, host: np.ndarray):
        self.host = host
        self.dtype = host.dtype
        self.shape = host.shape
        self.address = host.ctypes.data

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.address, False), "version": 3}


class Tensor:
    """Quacks like a CUDA ``torch.Tensor`` over host memory (``is_torch_tensor`` accepts it)."""

    __module__ = "torch_fake"

    def __init__(self, host: np.ndarray, device: int = 0):
        import pytest

        torch = pytest.importorskip("torch", reason="the torch-tensor launch path needs torch (an optional dependency)")
        self.host = host
        self.dtype = getattr(torch, str(host.dtype))
        self.is_cuda = True
        self.device = torch.device("cuda", device)
        self._device = device
        self._address = host.ctypes.data

    def data_ptr(self) -> int:
        return self._address

    def get_device(self) -> int:
        return self._device

    @property
    def __cuda_array_interface__(self) -> dict:
        return {
            "shape": self.host.shape,
            "typestr": self.host.dtype.str,
            "data": (self.data_ptr(), False),
            "version": 3,
        }
