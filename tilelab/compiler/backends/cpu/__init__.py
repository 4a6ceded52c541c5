"""The CPU backend: tile IR -> LLVM IR (llvmlite) -> native code for the host, run on threads.

    from tilelab.compiler.backends.cpu import compile_kernel, LoadedObject
    compiled = compile_kernel(module)          # asm, object code, op table, timings
    lib = LoadedObject(compiled.obj)           # maps the code into the process
    grid_fn = lib.address(compiled.grid_symbol)

Files: ``context.py`` (tiles, buffers, loops), ``fusion.py`` (what stays lazy),
``lower_*.py`` (one small function per op), ``bounds.py`` (the facts behind fast
paths), ``lane_plan.py`` and ``lanes.py`` (the loops of 1-D kernels as vector code), ``kernel.py`` (program
and grid functions), ``sanitize.py`` (bounds checks), ``codegen.py`` (optimize, emit, load).
The runtime side (threads, argument packing, reports) is ``tilelab.runtime.cpu_target``.
"""

from __future__ import annotations

import time

from ..common.types import UnsupportedType
from .codegen import (
    InternalCompilerError,
    LoadedObject,
    assembly_from_llir,
    compile_llvm,
    needs_unrolling,
    preload,
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
from .kernel import COORDINATE_SLOTS, UnsupportedKernel, build_llvm_module, grid_symbol, work_per_program


class CpuCompiled:
    """The result of compiling one kernel for the CPU (a plain class: a dataclass costs import time)."""

    def __init__(self, name: str, grid_symbol: str, obj: bytes, asm: dict, ops: dict, seconds: dict | None = None):
        self.name = name
        self.grid_symbol = grid_symbol
        self.obj = obj
        self.asm = asm
        self.ops = ops  # op id (str) -> info for runtime reports
        self.seconds = seconds if seconds is not None else {}


def compile_kernel(module, sanitize: bool = False, opt_level: int = 3, want_asm: bool = True) -> CpuCompiled:
    """Lower, optimize and emit ``module``'s kernel (the sanitized variant when ``sanitize``)."""
    t = time.perf_counter()
    llmod, ops, pipeline = build_llvm_module(module, sanitize)
    lowering = time.perf_counter() - t
    asm, obj, seconds = compile_llvm(llmod, opt_level, want_asm, pipeline=pipeline)
    name = module.kernel.sym_name
    seconds = {"lower": lowering, **seconds}
    return CpuCompiled(name, grid_symbol(name, sanitize), obj, asm, ops, seconds)


__all__ = [
    "COORDINATE_SLOTS",
    "CpuCompiled",
    "compile_kernel",
    "assembly_from_llir",
    "needs_unrolling",
    "preload",
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
