"""The kernel on AMD gfx942: the CUDA lowering with AMDGPU hooks -> LLVM IR -> GCN assembly text.

The body is lowered by the GPU lowering table of ``backends/cuda`` (``build_llvm_module``) with
``AmdgpuHooks``; what this file adds is the module around it:

* the kernel ``define amdgpu_kernel void @k(ptr addrspace(1) %x, ...) #0`` with
  ``attributes #0 = { "amdgpu-flat-work-group-size"="1,256" }`` (64 lanes x ``num_warps``);
* the shared-memory array (``tilelab_smem``, the LDS: address space 3) sized to what the kernel
  uses, so the assembler's ``.amdhsa_group_segment_fixed_size`` reports it;
* LLVM's O3 pipeline and the AMDGPU code generator (``llvmlite``'s ``amdgcn-amd-amdhsa`` target);
* a check that nothing is left to call: a library call would make LLVM abort the process.

    llir, gcn, lds = compile_to_amdgcn(module, CompileOptions(target="amd:gfx942", arch="gfx942", warp_size=64))
"""

from __future__ import annotations

import re

import llvmlite.binding as llvm

from tilelab.compiler.options import CompileOptions

from ..common.release import release
from ..cuda.kernel import InternalCompilerError, build_llvm_module
from .hooks import TRIPLE, AmdgpuHooks

_machines: dict[str, llvm.TargetMachine] = {}

#: intrinsics that LLVM's AMDGPU backend turns into library calls (it has none to call: LLVM would abort)
_LIBRARY_CALLS = re.compile(
    r"llvm\.((tan|tanh|asin|acos|atan|atan2|sinh|cosh|pow|powi|exp10|log10|sincos|sincospi|modf)\."
    r"|(exp|exp2|log|log2|sin|cos)\.(v\d+)?f64)"
)


def target_machine(arch: str = "gfx942") -> llvm.TargetMachine:
    """The AMDGPU target machine for ``arch`` (``gfx942``), cached."""
    if arch not in _machines:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        _machines[arch] = llvm.Target.from_triple(TRIPLE).create_target_machine(cpu=arch, features="", opt=3)
    return _machines[arch]


def kernel_text(llmod, name: str, threads: int, lds_bytes: int) -> str:
    """The module's text with the work-group size attribute and the LDS array of ``lds_bytes``."""
    text = str(llmod)
    head = f'define amdgpu_kernel void @"{name}"('
    start = text.index(head)
    end = text.index("\n", start)
    dbg = text.find(" !dbg", start, end)  # function attributes go before the header's ``!dbg``
    at = dbg if dbg >= 0 else end
    text = text[:at] + " #0" + text[at:]
    text += f'\nattributes #0 = {{ "amdgpu-flat-work-group-size"="1,{threads}" }}\n'
    smem = '@"tilelab_smem" = external addrspace(3) global [0 x i8], align 16'
    if smem in text:  # a fixed-size LDS array: the code object reports its size
        sized = f'@"tilelab_smem" = internal addrspace(3) global [{max(1, lds_bytes)} x i8] undef, align 16'
        text = text.replace(smem, sized)
    return text


def check_calls(mod: llvm.ModuleRef) -> None:
    """Raise when the optimized module declares a function LLVM's AMDGPU backend would need a library for."""
    for f in mod.functions:
        if f.is_declaration and (not f.name.startswith("llvm.") or _LIBRARY_CALLS.match(f.name)):
            raise InternalCompilerError(
                f"the AMD lowering left a call to {f.name}, which needs a library the inspection target lacks"
            )


def optimize(text: str, name: str, arch: str) -> llvm.ModuleRef:
    """Parse, verify and optimize at O3 for ``arch``."""
    try:
        mod = llvm.parse_assembly(text)
        mod.verify()
    except RuntimeError as e:
        raise InternalCompilerError(f"LLVM rejected the lowered kernel {name}: {e}") from None
    tm = target_machine(arch)
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=3))
    pb.getModulePassManager().run(mod, pb)
    check_calls(mod)
    return mod


def compile_to_amdgcn(module, options: CompileOptions) -> tuple[str, str, int]:
    """``(optimized LLVM IR, GCN assembly, LDS bytes)`` of ``module``'s kernel for ``options.arch`` (gfx942)."""
    arch = options.arch or "gfx942"
    hooks = AmdgpuHooks(arch)
    if options.warp_size != hooks.warp_size:
        raise ValueError(f"amd:{arch} runs wavefronts of {hooks.warp_size} lanes; the options say {options.warp_size}")
    llmod, lw = build_llvm_module(module, options, hooks)
    lds = max(lw.scratch_bytes, module.attrs.get("shared_bytes", 0) or 0)
    text = kernel_text(llmod, module.kernel.sym_name, hooks.warp_size * options.num_warps, lds)
    release(llmod)  # its text is all LLVM needs: free the Python module by reference counting
    mod = optimize(text, module.kernel.sym_name, arch)
    return str(mod), target_machine(arch).emit_assembly(mod), lds
