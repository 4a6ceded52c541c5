"""The CPU backend: tile IR -> LLVM IR (llvmlite) -> native code for the host, run on threads.

    from tilelab.compiler.backends.cpu import compile_kernel, LoadedObject
    compiled = compile_kernel(module)          # asm, object code, op table, timings
    lib = LoadedObject(compiled.obj)           # maps the code into the process
    grid_fn = lib.address(compiled.grid_symbol)

Files: ``context.py`` (tiles, buffers, loops), ``fusion.py`` (what stays lazy),
``lower_*.py`` (one small function per op), ``kernel.py`` (program and grid
functions), ``sanitize.py`` (bounds checks), ``codegen.py`` (optimize, emit, load).
The runtime side (threads, argument packing, reports) is ``tilelab.runtime.cpu_target``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..common.types import UnsupportedType
from .codegen import (
    InternalCompilerError,
    LoadedObject,
    assembly_from_llir,
    compile_llvm,
    needs_unrolling,
    target_machine,
)
from .context import (
    REPORT_ASSERT,
    REPORT_FN_TYPE,
    REPORT_GLOBAL,
    REPORT_OUT_OF_BOUNDS,
    REPORT_PRINT,
    REPORT_ZERO_STEP,
    LoweringBug,
)
from .kernel import UnsupportedKernel, build_llvm_module, grid_symbol, work_per_program


@dataclass
class CpuCompiled:
    """The result of compiling one kernel for the CPU."""

    name: str
    grid_symbol: str
    obj: bytes
    asm: dict
    ops: dict  # op id (str) -> info for runtime reports
    seconds: dict = field(default_factory=dict)


def compile_kernel(module, sanitize: bool = False, opt_level: int = 3, want_asm: bool = True) -> CpuCompiled:
    """Lower, optimize and emit ``module``'s kernel (the sanitized variant when ``sanitize``)."""
    t = time.perf_counter()
    llmod, ops = build_llvm_module(module, sanitize)
    lowering = time.perf_counter() - t
    asm, obj, seconds = compile_llvm(llmod, opt_level, want_asm, unroll=needs_unrolling(module))
    name = module.kernel.sym_name
    seconds = {"lower": lowering, **seconds}
    return CpuCompiled(name, grid_symbol(name, sanitize), obj, asm, ops, seconds)


__all__ = [
    "CpuCompiled",
    "compile_kernel",
    "assembly_from_llir",
    "work_per_program",
    "LoadedObject",
    "target_machine",
    "InternalCompilerError",
    "LoweringBug",
    "UnsupportedKernel",
    "UnsupportedType",
    "REPORT_ASSERT",
    "REPORT_FN_TYPE",
    "REPORT_GLOBAL",
    "REPORT_OUT_OF_BOUNDS",
    "REPORT_PRINT",
    "REPORT_ZERO_STEP",
]
