"""Shared pytest fixtures: one kernel suite, every backend.

Each kernel test takes the ``backend`` fixture and so runs four times: on the numpy
interpreter (``"interpret"``), on host CPU code (``"cpu"``), on the final IR of the CUDA
passes run by the interpreter (``"cuda-ir"``: no GPU needed) and on an NVIDIA GPU
(``"cuda"``, marked ``gpu`` and skipped where no device is present)::

    def test_add(backend, dev, rng):
        x = rng.standard_normal(1000).astype(np.float32)
        out = poison(np.empty_like(x))
        out_d = dev.put(out)
        add[(4,)](dev.put(x), out_d, x.size, BLOCK=256, target=backend)
        np.testing.assert_allclose(dev.get(out_d), x + 1)

``dev`` moves arrays to the backend's memory and back: numpy stays numpy on the
interpreter and the CPU (as a copy, so a kernel that writes in place leaves the
reference's inputs alone); on CUDA it becomes a torch CUDA tensor when torch can
reach the GPU, else a ``tilelab.cuda`` device array; ``cuda-ir`` takes numpy, as the interpreter.

The random seed of ``rng`` is printed (pytest shows it when a test fails) and can be
fixed with ``TILELAB_TEST_SEED=1234`` to replay a failure.
"""

from __future__ import annotations

import functools
import os
import secrets

import numpy as np
import pytest

BACKENDS = ["interpret", "cpu", "cuda-ir", pytest.param("cuda", marks=pytest.mark.gpu)]


@functools.cache
def cuda_device_present() -> bool:
    """Whether a CUDA driver and at least one device answer (asked once per session)."""
    try:
        from cuda.bindings import driver
    except ImportError:
        try:
            from cuda import cuda as driver
        except ImportError:
            return False
    try:
        (err,) = driver.cuInit(0)
        if err != driver.CUresult.CUDA_SUCCESS:
            return False
        err, count = driver.cuDeviceGetCount()
        return err == driver.CUresult.CUDA_SUCCESS and count > 0
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    """Skip tests marked ``gpu`` when this machine has no CUDA device."""
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items or cuda_device_present():
        return
    skip = pytest.mark.skip(reason="no CUDA device on this machine")
    for item in gpu_items:
        item.add_marker(skip)


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    """The launch target: ``"interpret"``, ``"cpu"``, ``"cuda-ir"`` or ``"cuda"``."""
    return request.param


@pytest.fixture
def rng(request) -> np.random.Generator:
    """A fresh random generator; its seed is printed so a failure can be replayed."""
    seed = int(os.environ.get("TILELAB_TEST_SEED", secrets.randbits(32)))
    print(f"{request.node.nodeid}: TILELAB_TEST_SEED={seed}")
    return np.random.default_rng(seed)


def poison(arr: np.ndarray) -> np.ndarray:
    """Fill ``arr`` in place with values no kernel computes, and return it.

    Floats get NaN, signed ints their minimum (-2**31 for int32), unsigned ints
    their maximum and booleans True: an element the kernel forgot to write shows
    up in the comparison with the reference.
    """
    kind = arr.dtype.kind
    if kind in "fcV" or arr.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        arr[...] = np.nan
    elif kind == "i":
        arr[...] = np.iinfo(arr.dtype).min
    elif kind == "u":
        arr[...] = np.iinfo(arr.dtype).max
    elif kind == "b":
        arr[...] = True
    else:
        raise TypeError(f"poison: unsupported dtype {arr.dtype}")
    return arr


@pytest.fixture(name="poison")
def poison_fixture():
    """The ``poison`` helper, as a fixture for test files that cannot import conftest."""
    return poison


class DeviceMemory:
    """Moves numpy arrays to a backend's memory (``put``) and back (``get``)."""

    def __init__(self, target: str):
        self.target = target
        self.torch = _torch_cuda() if target == "cuda" else None

    def put(self, arr: np.ndarray):
        """A copy of ``arr`` in the backend's memory (numpy off-GPU): kernels never write the caller's array."""
        arr = np.array(arr, order="C", copy=True)
        if self.target != "cuda":
            return arr
        if self.torch is None:
            import tilelab.cuda

            return tilelab.cuda.to_device(arr)
        if arr.dtype.name in _TORCH_ONLY:  # ml_dtypes arrays torch cannot take: as their bits, then viewed
            bits, name = _TORCH_ONLY[arr.dtype.name]
            return self.torch.from_numpy(arr.view(bits)).view(getattr(self.torch, name)).cuda()
        return self.torch.from_numpy(arr).cuda()

    def empty(self, shape, dtype) -> object:
        """A poisoned output array of ``shape`` and ``dtype`` in the backend's memory."""
        return self.put(poison(np.empty(shape, dtype=dtype)))

    def get(self, x) -> np.ndarray:
        """A host numpy copy of what ``put`` returned (after the kernel ran)."""
        if isinstance(x, np.ndarray):
            return x.copy()
        if self.torch is None:
            return x.numpy()
        for numpy_name, (bits, name) in _TORCH_ONLY.items():
            if x.dtype == getattr(self.torch, name):
                import ml_dtypes

                as_bits = x.view(getattr(self.torch, np.dtype(bits).name))
                return as_bits.cpu().numpy().view(getattr(ml_dtypes, numpy_name))
        return x.cpu().numpy()


#: ml_dtypes element types torch has but cannot take from numpy: (bits to move them as, torch's name)
_TORCH_ONLY = {
    "bfloat16": (np.uint16, "bfloat16"),
    "float8_e4m3fn": (np.uint8, "float8_e4m3fn"),
    "float8_e5m2": (np.uint8, "float8_e5m2"),
    "float8_e4m3fnuz": (np.uint8, "float8_e4m3fnuz"),
    "float8_e5m2fnuz": (np.uint8, "float8_e5m2fnuz"),
}


def _torch_cuda():
    """The torch module when it can hold CUDA tensors, else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


@pytest.fixture
def dev(backend) -> DeviceMemory:
    """Array mover for the current ``backend`` (see ``DeviceMemory``)."""
    return DeviceMemory(backend)
