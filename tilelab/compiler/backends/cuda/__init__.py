"""The CUDA backend: tile IR with layouts -> NVPTX LLVM IR (llvmlite) -> PTX -> cubin + SASS.

    from tilelab.compiler.backends.cuda import compile_kernel
    compiled = compile_kernel(module, CompileOptions(target="cuda", arch="sm_90a", num_warps=4))
    compiled.asm["ptx"], compiled.metadata["registers"]

Files: ``context.py`` (tiles as register lists, thread indices, shared memory),
``lower_*.py`` (one small function per op), ``math.py`` (libdevice), ``debug.py``
(print, assert), ``kernel.py`` (signature, optimization, PTX), ``emit.py``
(target machine, ptxas, SASS). The runtime side is ``tilelab.runtime.cuda_target``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from tilelab.compiler.options import CompileOptions, options_of

from .context import LoweringBug
from .emit import CubinResult, disassembler, find_tool, llvm_to_ptx, ptx_to_cubin, sass_of_cubin, target_machine
from .kernel import InternalCompilerError, compile_to_ptx
from .ptx_order import assemble_in_better_order
from .tensormaps import tensormap_recipes


@dataclass
class CudaCompiled:
    """One kernel compiled for one GPU architecture."""

    name: str
    asm: dict
    cubin: bytes | None
    metadata: dict = field(default_factory=dict)
    can_disassemble: bool = False  # a cubin exists and nvdisasm or cuobjdump was found
    tools: dict = field(default_factory=dict)  # the tool paths the options gave (CompileOptions.tools)

    def sass_maker(self):
        """The maker of the ``sass`` text for the kernel's ``asm`` (run on first access), or ``None``.

        SASS is left out of ``compile_kernel``: ``nvdisasm`` takes longer than the whole rest
        of a compile, and a launch never needs it.
        """
        cubin, tools = self.cubin, self.tools
        return (lambda: sass_of_cubin(cubin, tools)) if self.can_disassemble else None


#: ptxas's message (C7515) when it makes every wgmma of a kernel wait for the one before it because other
#: instructions write their accumulator registers inside the pipeline stage; not its C7512, "serialized due to
#: insufficient register resources", which a rotated loop does not change (a spilling attention backward
#: config was compiled twice for nothing)
SERIALIZED_WGMMA = "non wgmma instructions defining accumulator registers"


def compile_kernel(module, options: CompileOptions | None = None, cubin: bool = True) -> CudaCompiled:
    """Lower, optimize and emit ``module``'s kernel; assemble with ptxas when it is found (the PTX in the
    orders of ``ptx_order`` too, where they differ: the one whose registers let the most warps reside is
    kept, and a note says so). Where ptxas reports that it serialized the kernel's wgmmas for moves into
    their accumulators (``SERIALIZED_WGMMA``), the kernel is compiled again with its waited-for loops rotated
    (``lower_control.lower_for``), and that compile kept if ptxas no longer does.

    ``options`` default to the module's (``options_of``: what ``pipeline.run`` attached).
    """
    options = options or options_of(module)
    arch, num_warps, tools = options.gpu_arch, options.num_warps, dict(options.tools)
    seconds: dict[str, float] = {}
    llir, ptx, shared = compile_to_ptx(module, options, seconds)
    asm = {"llir": llir, "ptx": ptx}
    meta = {"arch": arch, "num_warps": num_warps, "shared": shared, "registers": None, "spills": None}
    recipes = tensormap_recipes(module.kernel)
    if recipes:  # TMA tensor maps the launch encodes and appends to the kernel's parameters
        meta["tensormaps"] = recipes
    binary, can_disassemble = None, False
    if cubin:
        t = time.perf_counter()

        def assemble(text: str) -> tuple[str, CubinResult]:
            return assemble_in_better_order(
                text, lambda t: ptx_to_cubin(t, arch, sass=False, tools=tools), num_warps, shared or 0, arch
            )

        ptx, result = assemble(ptx)
        seconds["ptxas"] = time.perf_counter() - t
        if SERIALIZED_WGMMA in result.log:  # the loop's exit and its guard's skip met before the final wait
            t = time.perf_counter()
            llir2, ptx2, shared2 = compile_to_ptx(module, options, rotate_waited_loops=True)
            ptx2, result2 = assemble(ptx2)
            if result2.cubin is not None and SERIALIZED_WGMMA not in result2.log:
                llir, ptx, shared, result = llir2, ptx2, shared2, result2
                asm["llir"], meta["shared"] = llir, shared
                result.notes.append(
                    "ptxas serialized the wgmmas (C7515: moves into accumulator registers before the wait after "
                    "the loop); compiled again with the wait in the loop's own exit"
                )
            seconds["again"] = time.perf_counter() - t
        asm["ptx"] = ptx
        binary = result.cubin
        if result.cubin is not None:
            meta.update(registers=result.registers, spills=result.spill_stores + result.spill_loads)
            can_disassemble = disassembler(tools) is not None
            if not can_disassemble:
                result.notes.append("SASS not shown: neither nvdisasm nor cuobjdump was found")
        meta["notes"] = result.notes
    meta["stage_seconds"] = seconds
    return CudaCompiled(module.kernel.sym_name, asm, binary, meta, can_disassemble, tools)


__all__ = [
    "CudaCompiled",
    "compile_kernel",
    "compile_to_ptx",
    "CubinResult",
    "find_tool",
    "llvm_to_ptx",
    "ptx_to_cubin",
    "target_machine",
    "InternalCompilerError",
    "LoweringBug",
]
