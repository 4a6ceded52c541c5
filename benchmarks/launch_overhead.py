"""Launch overhead of the CUDA driver wrapper from Python, against the raw driver call.

Run on a GPU machine: ``python benchmarks/launch_overhead.py``. Prints microseconds per
launch (median of batches) of an empty-bodied kernel through ``Function.launch`` and
through a bare ``cuLaunchKernel`` with a pre-packed parameter buffer, then of a whole
``kernel[grid](...)`` with ``tilelab.cuda`` DeviceArrays and (when installed) torch CUDA tensors.
"""

import ctypes
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tilelab  # noqa: E402
import tilelab.language as tl  # noqa: E402
from tilelab.compiler.backends.cuda import emit  # noqa: E402
from tilelab.runtime import cuda_driver  # noqa: E402


@tilelab.jit
def tiny(x, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x + offs, tl.load(x + offs, mask=offs < n) + 1.0, mask=offs < n)


def jit_launches() -> list[tuple[str, float]]:
    """Whole ``tiny[(1,)](x, 16, BLOCK=16)`` launches from Python, per array kind."""
    import numpy as np

    import tilelab.cuda as tc

    rows = []
    x = tc.to_device(np.zeros(16, np.float32))
    rows.append(("tiny[(1,)](DeviceArray, 16, BLOCK=16)", per_launch_us(lambda: tiny[(1,)](x, 16, BLOCK=16))))
    try:
        import torch
    except ImportError:
        return rows
    t = torch.zeros(16, device="cuda")
    rows.append(("tiny[(1,)](torch cuda tensor, 16, BLOCK=16)", per_launch_us(lambda: tiny[(1,)](t, 16, BLOCK=16))))
    return rows


TINY = r"""
target triple = "nvptx64-nvidia-cuda"
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
define ptx_kernel void @tiny(ptr addrspace(1) %x, i32 %n) {
  ret void
}
"""


def per_launch_us(fn, batches=20, per_batch=2000):
    samples = []
    for _ in range(batches):
        t = time.perf_counter()
        for _ in range(per_batch):
            fn()
        cuda_driver.synchronize()
        samples.append((time.perf_counter() - t) / per_batch * 1e6)
    return statistics.median(samples)


def main():
    import llvmlite.binding as llvm

    if not cuda_driver.is_available():
        print("no CUDA device: nothing to measure")
        return
    info = cuda_driver.device_info()
    mod = llvm.parse_assembly(TINY)
    fn = cuda_driver.Module(emit.llvm_to_ptx(mod, info.arch)).function("tiny", ["ptr", "i32"], num_warps=4)
    buf = cuda_driver.mem_alloc(1024)
    wrapped = per_launch_us(lambda: fn.launch((1, 1, 1), [buf, 16]))
    drv = cuda_driver._driver()
    a, b = ctypes.c_uint64(buf), ctypes.c_int32(16)
    params = (ctypes.c_void_p * 2)(ctypes.addressof(a), ctypes.addressof(b))
    addr = ctypes.addressof(params)
    raw = per_launch_us(lambda: drv.cuLaunchKernel(fn.handle, 1, 1, 1, 128, 1, 1, 0, 0, addr, 0))
    print(f"device: {info.name} ({info.arch}, {info.multiprocessors} SMs)")
    print("| path | us per launch |")
    print("|---|---|")
    print(f"| Function.launch (tilelab) | {wrapped:.2f} |")
    print(f"| raw cuLaunchKernel, pre-packed | {raw:.2f} |")
    for name, us in jit_launches():
        print(f"| {name} | {us:.2f} |")


if __name__ == "__main__":
    main()
