"""The CPU backend: tile IR -> LLVM IR (llvmlite) -> native code for the host, run on threads.

    from tilelab.compiler.backends.cpu import compile_kernel, LoadedObject
    compiled = compile_kernel(module)          # asm, object code, op table, timings
    lib = LoadedObject(compiled.obj)           # maps the code into the process
    grid_fn = lib.address(compiled.grid_symbol)

Files: ``context.py`` (tiles, buffers, loops), ``fusion.py`` (what stays lazy),
``lower_*.py`` (one small function per op), ``bounds.py`` (the facts behind fast
paths), ``lane_plan.py`` and ``lanes.py`` (the loops of 1-D kernels as vector code), ``kernel.py`` (program
and grid functions), ``sanitize.py`` (bounds checks), ``codegen.py`` (optimize, emit, load).
The runtime side is ``tilelab.runtime.cpu_target`` (compile), ``cpu_launch`` (threads, argument
packing) and ``cpu_errors`` (reports).
"""

from __future__ import annotations

import threading
import time

from ..common.release import release
from ..common.types import UnsupportedType
from ..llvm_library import preload
from .codegen import (
    InternalCompilerError,
    LoadedObject,
    assembly_from_llir,
    compile_llvm,
    emit_optimized,
    needs_unrolling,
    target_machine,
    warm_up,
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

#: pipelines whose kernels may start on the quick tier: 1-D kernels, their loops written as vector code
#: (``lanes``) or left to LLVM's loop vectorizer (``vectorize``). Code generation: vector add ~8 -> ~2 ms,
#: a 1-D kernel of exp, log, sqrt and divisions ~26 -> ~10 ms; the quick code runs 10-25% slower until
#: the optimized code replaces it. Not the unrolled loops of dots and reductions: the ``-O0`` code
#: generator takes as long on them (f16 matmul: ~65 ms either way; its fast instruction selector hands
#: such vector code to the full one) and its code runs ~1.5x slower.
QUICK_PIPELINES = frozenset({"lanes", "vectorize"})


class CpuCompiled:
    """The result of compiling one kernel for the CPU (a plain class: a dataclass costs import time)."""

    def __init__(
        self,
        name: str,
        grid_symbol: str,
        obj: bytes,
        asm: dict,
        ops: dict,
        seconds: dict | None = None,
        tier="optimized",
    ):
        self.name = name
        self.grid_symbol = grid_symbol
        self.obj = obj
        self.asm = asm
        self.ops = ops  # op id (str) -> info for runtime reports
        self.seconds = seconds if seconds is not None else {}
        self.tier = tier  # "quick": ``obj`` is the -O0 code generator's, ``emit_optimized(asm["llir"])`` upgrades it


_compile_lock = threading.Lock()


def compile_kernel(
    module, sanitize: bool = False, opt_level: int = 3, want_asm: bool = True, quick: bool = False
) -> CpuCompiled:
    """Lower, optimize and emit ``module``'s kernel (the sanitized variant when ``sanitize``).

    With ``quick``, a kernel of a ``QUICK_PIPELINES`` pipeline gets the quick tier's object code.
    """
    t = time.perf_counter()
    llmod, ops, pipeline = build_llvm_module(module, sanitize)
    lowering = time.perf_counter() - t
    quick = quick and pipeline in QUICK_PIPELINES
    with _compile_lock:  # LLVM's global context and the shared target machine serve one thread at a time
        asm, obj, seconds = compile_llvm(llmod, opt_level, want_asm, pipeline=pipeline, quick=quick)
    name = module.kernel.sym_name
    seconds = {"lower": lowering, **seconds}
    tier = "quick" if quick else "optimized"
    compiled = CpuCompiled(name, grid_symbol(name, sanitize), obj, asm, ops, seconds, tier)
    compiled.stack_bytes = stack_bytes(llmod)
    release(llmod)  # LLVM holds the kernel now: free the Python module by reference counting
    return compiled


def stack_bytes(llmod) -> int:
    """The bytes of the stack buffers (``alloca``) of the lowered module: what one program may need.

    Tiles live on the stack; a launch whose programs need more than a thread's stack runs
    on a thread with a stack made for it (runtime/cpu_launch.py) instead of crashing.
    """
    from llvmlite import ir

    total = 0
    for fn in llmod.functions:
        for block in fn.blocks:
            for instr in block.instructions:
                if isinstance(instr, ir.AllocaInstr):
                    count = instr.operands[0].constant if instr.operands else 1
                    total += int(count) * _type_bytes(instr.allocated_type)
    return total


def _type_bytes(t) -> int:
    from llvmlite import ir

    if isinstance(t, ir.VectorType) or isinstance(t, ir.ArrayType):
        return t.count * _type_bytes(t.element)
    floats = {ir.HalfType: 2, ir.FloatType: 4, ir.DoubleType: 8}
    if type(t) in floats:
        return floats[type(t)]
    width = getattr(t, "width", None)
    return max(1, (width or 64) // 8)  # pointers: 8


__all__ = [
    "COORDINATE_SLOTS",
    "CpuCompiled",
    "compile_kernel",
    "emit_optimized",
    "QUICK_PIPELINES",
    "assembly_from_llir",
    "needs_unrolling",
    "preload",
    "work_per_program",
    "LoadedObject",
    "target_machine",
    "warm_up",
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
