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
def test_launch_axpy(image):
    import tilelab.cuda as tc

    arch = cuda_driver.device_info().arch
    ptx = _ptx(arch)
    blob = ptx.encode() if image == "ptx" else emit.ptx_to_cubin(ptx, arch, sass=False).cubin
    fn = cuda_driver.Module(blob).function("add", ["ptr", "ptr", "ptr", "i32", "f32"], num_warps=4)
    rng = np.random.default_rng()
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
