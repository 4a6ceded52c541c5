"""The CUDA driver wrapper and device arrays, on a hand-written LLVM kernel.

These run where a GPU is present; elsewhere only PTX emission and ptxas are checked.
"""

import numpy as np
import pytest

from tilelab.compiler.backends.cuda import emit
from tilelab.runtime import cuda_driver

ADD_LLVM = r"""
target triple = "nvptx64-nvidia-cuda"
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
define ptx_kernel void @add(ptr addrspace(1) %x, ptr addrspace(1) %y, ptr addrspace(1) %o, i32 %n, float %alpha) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %b = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %b2 = mul i32 %b, 128
  %i = add i32 %b2, %t
  %c = icmp slt i32 %i, %n
  br i1 %c, label %body, label %end
body:
  %px = getelementptr float, ptr addrspace(1) %x, i32 %i
  %py = getelementptr float, ptr addrspace(1) %y, i32 %i
  %po = getelementptr float, ptr addrspace(1) %o, i32 %i
  %vx = load float, ptr addrspace(1) %px
  %vy = load float, ptr addrspace(1) %py
  %ax = fmul float %vx, %alpha
  %s = fadd float %ax, %vy
  store float %s, ptr addrspace(1) %po
  br label %end
end:
  ret void
}
"""


def _ptx(arch="sm_90a"):
    import llvmlite.binding as llvm

    mod = llvm.parse_assembly(ADD_LLVM)
    mod.verify()
    return emit.llvm_to_ptx(mod, arch)


def test_ptx_emission_without_gpu():
    ptx = _ptx()
    assert ".target sm_90a" in ptx and ".entry add" in ptx


@pytest.mark.skipif(emit.find_tool("ptxas") is None, reason="ptxas not found")
def test_ptxas_reports_resources():
    result = emit.ptx_to_cubin(_ptx(), "sm_90a", sass=True)
    assert result.cubin.startswith(b"\x7fELF")
    assert result.registers is not None and 4 <= result.registers <= 64
    assert result.spill_stores == 0


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_driver.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("image", ["ptx", "cubin"])
def test_launch_axpy(image, rng):
    import tilelab.cuda as tc

    arch = cuda_driver.device_info().arch
    ptx = _ptx(arch)
    blob = ptx.encode() if image == "ptx" else emit.ptx_to_cubin(ptx, arch, sass=False).cubin
    fn = cuda_driver.Module(blob).function("add", ["ptr", "ptr", "ptr", "i32", "f32"], num_warps=4)
    n = 1000 + int(rng.integers(0, 100))
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    dx, dy, do = tc.to_device(x), tc.to_device(y), tc.empty(n, np.float32).fill_bytes(0xFF)  # NaN poison
    fn.launch(((n + 127) // 128, 1, 1), [dx.ptr, dy.ptr, do.ptr, n, 1.5])
    np.testing.assert_allclose(do.numpy(), 1.5 * x + y, rtol=1e-6)


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_driver.is_available(), reason="no CUDA device")
def test_driver_error_is_clear():
    with pytest.raises(cuda_driver.CudaError, match="cuModuleLoadData failed"):
        cuda_driver.Module(b"this is not ptx")


def test_device_capability_is_none_without_a_driver(monkeypatch):
    monkeypatch.setattr(cuda_driver, "_DRIVER_LIBRARIES", ("libno-such-cuda-driver.so",))
    monkeypatch.setattr(cuda_driver, "_state", {})
    assert cuda_driver.device_capability() is None


@pytest.mark.parametrize("capability, arch", [((9, 0), "sm_90a"), ((8, 0), "sm_80"), ((8, 9), "sm_89")])
def test_a_detected_device_picks_the_arch_and_prefetches_the_bindings(monkeypatch, capability, arch):
    from tilelab.runtime.cuda_target import CudaTarget

    started = []
    monkeypatch.setattr(cuda_driver, "_state", {"capability": capability})
    monkeypatch.setattr(cuda_driver, "prefetch", lambda: started.append(True))
    target = CudaTarget()
    assert target.arch == arch and target.for_device
    explicit = CudaTarget("sm_80")
    assert explicit.arch == "sm_80" and not explicit.for_device  # compiling for inspection: no driver work


def test_without_a_device_the_target_compiles_for_hopper(monkeypatch):
    from tilelab.runtime.cuda_target import DEFAULT_ARCH, CudaTarget

    monkeypatch.setattr(cuda_driver, "_state", {"capability": None})
    target = CudaTarget()
    assert target.arch == DEFAULT_ARCH and not target.for_device


def test_prefetch_imports_the_bindings_once(monkeypatch):
    monkeypatch.setattr(cuda_driver, "_state", {})
    cuda_driver.prefetch()
    thread = cuda_driver._state["prefetch"]
    cuda_driver.prefetch()  # a second call starts nothing
    assert cuda_driver._state["prefetch"] is thread
    thread.join(30)
    assert cuda_driver._state["driver"].__name__ == "cuda.bindings.driver"


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_driver.is_available(), reason="no CUDA device")
def test_device_capability_agrees_with_cuda_python(monkeypatch):
    info = cuda_driver.device_info()
    monkeypatch.setattr(cuda_driver, "_state", {})
    assert cuda_driver.device_capability() == info.capability
