"""The stream of a launch, on a stand-in driver: torch tensors go on torch's current stream and CuPy
arrays on CuPy's (as Triton launches on torch's), other arrays on the legacy default stream; cold
launches and warm ones alike, and a warm launch reads the stream at each call."""

from __future__ import annotations

import sys
from types import ModuleType, SimpleNamespace

import numpy as np
import pytest

import tilelab
from tilelab.runtime.arrays import launch_stream

from .fake_cuda import FakeDeviceArray, Tensor, fake_driver
from .kernels import add


@pytest.fixture
def driver():
    with fake_driver() as drv:
        yield drv


@pytest.fixture
def torch_stream(monkeypatch):
    """torch's current stream, as the test sets it (``holder[0]``)."""
    torch = pytest.importorskip("torch")
    holder = [0]
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda device: holder[0], raising=False)
    return holder


class TorchTensor(Tensor):
    """A stand-in CUDA tensor whose class lives in torch (its stream is torch's)."""

    __module__ = "torch._tensor"


class CupyArray(FakeDeviceArray):
    """A device array whose class lives in a ``cupy`` module."""

    __module__ = "cupy._core.core"


@pytest.fixture
def cupy_stream(monkeypatch):
    holder = SimpleNamespace(ptr=0)
    cupy = ModuleType("cupy")
    cupy.cuda = SimpleNamespace(get_current_stream=lambda: holder)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    return holder


def data(rng, n=64):
    return [rng.standard_normal(n).astype(np.float32) for _ in range(3)]


def test_torch_tensors_launch_on_torchs_current_stream_cold_and_warm(rng, driver, torch_stream):
    kernel = tilelab.jit(add.fn)
    for stream in (0, 0xA1, 0xB2, 0):  # the first launch is cold, the rest warm
        torch_stream[0] = stream
        kernel[(2,)](*map(TorchTensor, data(rng)), 64, BLOCK=32)
        assert driver.streams[-1] == stream
    assert len(driver.streams) == 4 and len(kernel.launches) == 1


def test_cupy_arrays_launch_on_cupys_current_stream(rng, driver, cupy_stream):
    kernel = tilelab.jit(add.fn)
    for stream in (0x51, 0x52):
        cupy_stream.ptr = stream
        kernel[(2,)](*map(CupyArray, data(rng)), 64, BLOCK=32)
        assert driver.streams[-1] == stream


def test_arrays_of_no_stream_owning_library_launch_on_the_legacy_stream(rng, driver, torch_stream):
    torch_stream[0] = 0xA1  # torch's stream is not theirs
    kernel = tilelab.jit(add.fn)
    for _ in range(2):
        kernel[(2,)](*map(FakeDeviceArray, data(rng)), 64, BLOCK=32)
    assert driver.streams == [0, 0]


def test_the_first_array_with_a_stream_decides(rng, torch_stream, cupy_stream):
    torch_stream[0], cupy_stream.ptr = 0xA1, 0x51
    x, y, z = data(rng)
    assert launch_stream([FakeDeviceArray(x), 16, CupyArray(y), TorchTensor(z)]) == 0x51
    assert launch_stream([TorchTensor(x), CupyArray(y)]) == 0xA1
    assert launch_stream([x, 3, 2.0]) == 0  # host arrays and scalars: the legacy stream
