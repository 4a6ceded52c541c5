"""Launch overhead of the CUDA driver wrapper from Python, against the raw driver call.

Run on a GPU machine: ``python benchmarks/launch_overhead.py``. Prints microseconds per
launch of an empty-bodied kernel through ``Function.launch`` and through a bare
``cuLaunchKernel`` with a pre-packed parameter buffer, then of a whole ``kernel[grid](...)``
with ``tilelab.cuda`` DeviceArrays and (when installed) torch CUDA tensors, the bare driver call
of that same kernel, and the anchors: Triton launching the same kernel, torch's ``add_``.
Two columns: the CPU's time per launch (``enqueue_us``: launches that never wait for the GPU)
and a synchronized loop of launches (``per_launch_us``: bound by the GPU when its kernels take
longer than the CPU needs to launch them).

Without a GPU, ``python benchmarks/launch_overhead.py --no-gpu`` measures the Python side
alone: the driver is replaced by one whose ``cuLaunchKernel`` does nothing, the kernel still
compiles for real (PTX needs no GPU), and arrays are small stand-ins with ``data_ptr()`` or
``__cuda_array_interface__``. It prints microseconds per call (best of timeit repeats) of
each path, and the same minus the no-op driver call: the Python overhead a launch adds.
"""

import argparse
import ctypes
import functools
import statistics
import sys
import time
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tilelab  # noqa: E402
import tilelab.language as tl  # noqa: E402
from tilelab.compiler.backends.cuda import emit  # noqa: E402
from tilelab.runtime import cuda_driver, tensormaps  # noqa: E402
from tilelab.tools.tensor_descriptor import TensorDescriptor  # noqa: E402


@tilelab.jit
def tiny(x, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x + offs, tl.load(x + offs, mask=offs < n) + 1.0, mask=offs < n)


@tilelab.jit
def tiny_desc(x_desc, BLOCK: tl.constexpr):
    """``tiny`` through a host tensor descriptor: each launch encodes (or finds) its tensor map."""
    tl.static_assert(BLOCK == 16)
    x_desc.store([0, 0], x_desc.load([0, 0]) + 1.0)


def jit_launches() -> list[tuple[str, object]]:
    """Whole ``tiny[(1,)](x, 16, BLOCK=16)`` launches from Python, per array kind, then the anchors:
    the same kernel from Triton and torch's own ``add_`` (when installed)."""
    import numpy as np

    import tilelab.cuda as tc

    x = tc.to_device(np.zeros(16, np.float32))
    rows = [("tiny[(1,)](DeviceArray, 16, BLOCK=16)", lambda: tiny[(1,)](x, 16, BLOCK=16))]
    launcher = tiny.warmup(x, 16, BLOCK=16).launcher
    function = launcher.function or launcher._load()
    a, n = ctypes.c_uint64(x.ptr), ctypes.c_int32(16)
    params = (ctypes.c_void_p * 2)(ctypes.addressof(a), ctypes.addressof(n))
    rows.append(("raw cuLaunchKernel of the same kernel, pre-packed", _raw_launch(function, ctypes.addressof(params))))
    try:
        import torch
    except ImportError:
        return rows
    t = torch.zeros(16, device="cuda")
    rows.append(("tiny[(1,)](torch cuda tensor, 16, BLOCK=16)", lambda: tiny[(1,)](t, 16, BLOCK=16)))
    triton_tiny = _triton_tiny()
    if triton_tiny is not None:
        rows.append(("Triton: same kernel, torch cuda tensor", lambda: triton_tiny[(1,)](t, 16, BLOCK=16)))
    square = torch.zeros((16, 16), device="cuda")
    desc = TensorDescriptor.from_tensor(square, [16, 16])
    rows.append(("tiny_desc[(1,)](TensorDescriptor of a torch tensor)", lambda: tiny_desc[(1,)](desc, BLOCK=16)))
    triton_desc = _triton_tiny_desc()
    if triton_desc is not None:
        kernel, make = triton_desc
        theirs = make(square, [16, 16])
        rows.append(("Triton: same kernel, its TensorDescriptor", lambda: kernel[(1,)](theirs, BLOCK=16)))
    rows.append(("torch: t.add_(1.0)", lambda: t.add_(1.0)))
    return rows


def _raw_launch(function, params: int):
    drv, handle, block = cuda_driver._driver(), function.handle, function.block
    return lambda: drv.cuLaunchKernel(handle, 1, 1, 1, block, 1, 1, 0, 0, params, 0)


def _triton_tiny():
    """``tiny`` written for Triton (``None`` without triton)."""
    try:
        import triton
        import triton.language as ttl
    except ImportError:
        return None

    @triton.jit
    def triton_tiny(x, n, BLOCK: ttl.constexpr):
        offs = ttl.arange(0, BLOCK)
        ttl.store(x + offs, ttl.load(x + offs, mask=offs < n) + 1.0, mask=offs < n)

    return triton_tiny


def _triton_tiny_desc():
    """``tiny_desc`` written for Triton, and Triton's ``TensorDescriptor.from_tensor`` (``None`` without triton)."""
    try:
        import triton
        import triton.language as ttl
        from triton.tools.tensor_descriptor import TensorDescriptor
    except ImportError:
        return None

    @triton.jit
    def triton_tiny_desc(x_desc, BLOCK: ttl.constexpr):
        ttl.static_assert(BLOCK == 16)
        x_desc.store([0, 0], x_desc.load([0, 0]) + 1.0)

    return triton_tiny_desc, TensorDescriptor.from_tensor


TINY = r"""
target triple = "nvptx64-nvidia-cuda"
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
define ptx_kernel void @tiny(ptr addrspace(1) %x, i32 %n) {
  ret void
}
"""


def per_launch_us(fn, batches=20, per_batch=2000):
    """Microseconds per launch of a loop of launches, synchronized per batch (median of batches).

    Back-to-back launches of one stream run one after the other on the GPU, so this is the
    larger of the CPU's cost per launch and the GPU's time per (tiny) kernel.
    """
    fn()
    samples = []
    for _ in range(batches):
        t = time.perf_counter()
        for _ in range(per_batch):
            fn()
        cuda_driver.synchronize()
        samples.append((time.perf_counter() - t) / per_batch * 1e6)
    return statistics.median(samples)


def enqueue_us(fn, batches=200, per_batch=100):
    """Microseconds of CPU time per launch: batches of launches timed without waiting for the GPU.

    100 launches fit in the driver's queue, so none waits for an earlier kernel to finish:
    this is what a launch costs the Python thread (the figure the launch-overhead goal is about).
    """
    samples = []
    for _ in range(batches):
        cuda_driver.synchronize()
        t = time.perf_counter()
        for _ in range(per_batch):
            fn()
        samples.append((time.perf_counter() - t) / per_batch * 1e6)
    cuda_driver.synchronize()
    return statistics.median(samples)


class _NoOpDriver:
    """Answers the driver calls a launch makes with success; ``cuLaunchKernel`` does nothing."""

    class CUresult:
        CUDA_SUCCESS = 0

    _ok = (0,)

    def cuLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        return self._ok

    def cuModuleLoadData(self, image):
        return 0, "module"

    def cuModuleGetFunction(self, module, name):
        return 0, name

    def cuCtxSetCurrent(self, ctx):
        return self._ok

    def cuMemFree(self, ptr):
        return self._ok


class _TorchDtype:
    def __str__(self):
        return "torch.float32"


class _Device:
    type = "cuda"


class Tensor:
    """Quacks like a CUDA ``torch.Tensor`` (``is_torch_tensor`` accepts a class named so from a torch module)."""

    __module__ = "torch_stand_in"
    dtype, device, is_cuda = _TorchDtype(), _Device(), True

    def __init__(self, address):
        self._address = address

    def data_ptr(self):
        return self._address

    def get_device(self):
        return 0


class _InterfaceArray:
    """A CuPy-like array: only ``__cuda_array_interface__``."""

    def __init__(self, address):
        self.__cuda_array_interface__ = {"shape": (16,), "typestr": "<f4", "data": (address, False), "version": 3}


def _stand_in_device_array(address):
    """A ``tilelab.cuda.DeviceArray`` over a fake address (no allocation)."""
    import numpy as np

    import tilelab.cuda as tc

    a = object.__new__(tc.DeviceArray)
    a.shape, a.dtype, a.nbytes, a.ptr = (16,), np.dtype(np.float32), 64, address
    return a


def best_us(fn, number=20000, repeat=7) -> float:
    """Microseconds per call of ``fn``: the best of ``repeat`` timeit runs of ``number`` calls."""
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def no_gpu_rows() -> list[tuple[str, float]]:
    """Python cost per path with a no-op driver: ``(path, us per call)``; the first row is the driver call."""
    host = ctypes.create_string_buffer(256)
    address = (ctypes.addressof(host) + 15) // 16 * 16
    cuda_driver._state.update(driver=_NoOpDriver(), available=True, context="ctx", device=0)
    cuda_driver._state["info"] = cuda_driver.DeviceInfo("no-op", (9, 0), 132, 232448, 65536, 2048, 233472)
    fn = cuda_driver.Module(b"ptx").function("tiny", ["ptr", "i32"], num_warps=4)
    rows = [("no-op cuLaunchKernel, pre-packed", best_us(lambda: fn.launch_packed((1, 1, 1), fn._buffer.address)))]
    rows.append(("Function.launch (tilelab)", best_us(lambda: fn.launch((1, 1, 1), [address, 16]))))
    arrays = [
        ("torch-like tensor", Tensor(address)),
        ("DeviceArray", _stand_in_device_array(address)),
        ("__cuda_array_interface__ array", _InterfaceArray(address)),
    ]
    for name, x in arrays:
        tiny[(1,)](x, 16, BLOCK=16)  # compile, then time warm launches
        rows.append((f"tiny[(1,)]({name}, 16, BLOCK=16)", best_us(lambda x=x: tiny[(1,)](x, 16, BLOCK=16))))
    x = arrays[0][1]
    grid = lambda meta: (1,)  # noqa: E731
    rows.append(("tiny[lambda](torch-like tensor, 16, BLOCK=16)", best_us(lambda: tiny[grid](x, 16, BLOCK=16))))
    # the driver's tensor-map encoding is replaced as its launch is (the launch path's cache kept)
    tensormaps._tiled = functools.lru_cache(maxsize=512)(lambda *recipe: bytes(cuda_driver.TENSORMAP_BYTES))
    desc = TensorDescriptor(Tensor(address), [16, 16], [16, 1], [16, 16])
    tiny_desc[(1,)](desc, BLOCK=16)
    name = "tiny_desc[(1,)](TensorDescriptor of a torch-like tensor)"
    rows.append((name, best_us(lambda: tiny_desc[(1,)](desc, BLOCK=16))))
    return rows


def main_no_gpu():
    rows = no_gpu_rows()
    driver_us = rows[0][1]
    print("no GPU: the driver is a no-op; 'python' is the time minus the no-op driver call")
    print("| path | us per call | python us |")
    print("|---|---|---|")
    for name, us in rows:
        print(f"| {name} | {us:.2f} | {us - driver_us:.2f} |")


def main():
    import llvmlite.binding as llvm

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-gpu", action="store_true", help="measure the Python side only, with a no-op driver")
    if parser.parse_args().no_gpu:
        return main_no_gpu()

    if not cuda_driver.is_available():
        print("no CUDA device: nothing to measure")
        return
    info = cuda_driver.device_info()
    mod = llvm.parse_assembly(TINY)
    fn = cuda_driver.Module(emit.llvm_to_ptx(mod, info.arch)).function("tiny", ["ptr", "i32"], num_warps=4)
    buf = cuda_driver.mem_alloc(1024)
    rows = [("Function.launch (tilelab), empty kernel", lambda: fn.launch((1, 1, 1), [buf, 16]))]
    a, b = ctypes.c_uint64(buf), ctypes.c_int32(16)
    params = (ctypes.c_void_p * 2)(ctypes.addressof(a), ctypes.addressof(b))
    rows.append(("raw cuLaunchKernel, empty kernel, pre-packed", _raw_launch(fn, ctypes.addressof(params))))
    rows += jit_launches()
    print(f"device: {info.name} ({info.arch}, {info.multiprocessors} SMs)")
    print("| path | enqueue us per launch (CPU) | loop us per launch (synchronized per 2000) |")
    print("|---|---|---|")
    for name, launch in rows:
        print(f"| {name} | {enqueue_us(launch):.2f} | {per_launch_us(launch):.2f} |", flush=True)


if __name__ == "__main__":
    main()
