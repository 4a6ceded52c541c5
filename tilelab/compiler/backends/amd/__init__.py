"""The AMD backend, for inspection: tile IR with 64-lane layouts -> AMDGPU LLVM IR -> gfx942 (MI300) assembly.

    from tilelab.compiler.backends import amd
    compiled = amd.compile_kernel(module, CompileOptions(target="amd:gfx942", arch="gfx942", warp_size=64))
    compiled.asm["amdgcn"], compiled.metadata["vgprs"], compiled.metadata["sgprs"]

Nothing here launches: there is no AMD runtime in tilelab, the target exists so that a learner
reads the same kernel as PTX and as AMD GCN assembly. The lowering is the CUDA backend's
(``backends/cuda``), with the machine leaves answered by ``hooks.AmdgpuHooks`` (wavefronts of
64, ``llvm.amdgcn.*`` intrinsics, ``ds_bpermute`` lane exchange, the LDS); ``kernel.py`` adds
the ``amdgpu_kernel`` module around it and runs LLVM's AMDGPU code generator; ``metadata.py``
reads the register counts out of the assembly's ``.amdgpu_metadata``.

``tl.dot`` is lowered as on NVIDIA without tensor cores: operands staged through the LDS and
an FMA loop per thread (``v_fma_f32`` / ``v_fmac_f32``); MFMA (``v_mfma_f32_32x32x8f16``) is not
used yet.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from tilelab.compiler.options import CompileOptions, options_of

from .kernel import compile_to_amdgcn, target_machine
from .metadata import kernel_resources

#: The AMD architectures the backend compiles for.
ARCHS = ("gfx942",)
#: Lanes of an AMD wavefront on gfx9 (CDNA): what ``CompileOptions.warp_size`` must say.
WAVEFRONT = 64


@dataclass
class AmdCompiled:
    """One kernel compiled for one AMD architecture: texts and the resources the assembler reports."""

    name: str
    asm: dict
    metadata: dict = field(default_factory=dict)


def compile_kernel(module, options: CompileOptions | None = None) -> AmdCompiled:
    """Lower, optimize and emit ``module``'s kernel: GCN assembly (``asm["amdgcn"]``), LLVM IR (``asm["llir"]``)."""
    options = options or options_of(module)
    t = time.perf_counter()
    llir, gcn, lds = compile_to_amdgcn(module, options)
    seconds = time.perf_counter() - t
    meta = {"arch": options.arch or ARCHS[0], "num_warps": options.num_warps, "warp_size": WAVEFRONT, "shared": lds}
    meta.update(kernel_resources(gcn, module.kernel.sym_name))
    meta["registers"] = meta.get("vgprs")  # per thread (lane), as ptxas's count is
    meta["stage_seconds"] = {"amdgcn": seconds}
    return AmdCompiled(module.kernel.sym_name, {"llir": llir, "amdgcn": gcn}, meta)


__all__ = ["ARCHS", "AmdCompiled", "WAVEFRONT", "compile_kernel", "kernel_resources", "target_machine"]
