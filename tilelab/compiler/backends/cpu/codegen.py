"""Machine code for the host CPU: the target machine, LLVM's optimizer, object emission, loading.

``compile_llvm`` optimizes at O3 with llvmlite's new pass manager for the host CPU
(its name and features, so loops vectorize with AVX2/AVX-512 where present) and emits
an object file. The pipeline is sized to the kernel: loop unrolling, interleaving and
straight-line (SLP) vectorization, which double LLVM's time, run only for kernels whose
loops carry an accumulator (``tt.dot``, ``tt.reduce``, ``tt.scan``) or that have 2-D
tiles, where they pay at run time; a 1-D elementwise kernel's loops are memory bound
and as fast without them.

``load_object`` maps such an object file into the process with MCJIT -- no optimization
or code generation: a warm process loads cached objects in a few milliseconds. Math
functions (``expf``, ``atan2``) resolve to the process's C library.
"""

from __future__ import annotations

import functools
import time

import llvmlite.binding as llvm
from llvmlite import ir

#: tile IR ops whose lowered loops carry an accumulator: unrolled and interleaved loops run faster
ACCUMULATING_OPS = frozenset({"tt.dot", "tt.reduce", "tt.scan"})


class InternalCompilerError(Exception):
    """LLVM rejected the IR the CPU backend produced: a compiler bug, not a user error."""


@functools.cache
def target_machine() -> llvm.TargetMachine:
    """The host's target machine for compiling (created once per process)."""
    return _new_target_machine()


def _new_target_machine() -> llvm.TargetMachine:
    """A fresh host target machine (an execution engine owns and frees the one it is given)."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(),
        features=llvm.get_host_cpu_features().flatten(),
        opt=3,
        reloc="static",
        codemodel="jitdefault",
    )


def needs_unrolling(module) -> bool:
    """Whether ``module`` (tile IR) gets the unrolling pipeline: an accumulating op or a 2-D tile.

    Accumulators (``ACCUMULATING_OPS``) run faster interleaved; 2-D tiles (a transpose's
    strided copies) gain about 10% from unrolling. Only 1-D elementwise kernels skip it.
    """
    for op in module.walk():
        if op.name in ACCUMULATING_OPS or any(len(r.type.shape) > 1 for r in op.results):
            return True
    return False


def pipeline_options(opt_level: int, unroll: bool) -> llvm.PipelineTuningOptions:
    """LLVM's tuning options: vectorize loops always; unroll, interleave and SLP only when ``unroll``.

    Why: on an elementwise kernel unrolling and interleaving cost about half of the
    optimize and codegen time (vector add: ~65 ms -> ~40 ms) and gain nothing measurable.
    The straight-line (SLP) vectorizer finds nothing there either (vector add's object
    code is byte-identical without it) but costs ~4 ms trying on the fast paths' guards.
    """
    pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    pto.loop_vectorization = True
    pto.slp_vectorization = unroll
    pto.loop_unrolling = unroll
    pto.loop_interleaving = unroll
    return pto


def compile_llvm(
    llmod: ir.Module, opt_level: int = 3, want_asm: bool = True, unroll: bool = True
) -> tuple[dict, bytes, dict]:
    """Optimize and emit ``llmod``: returns ``(asm, object bytes, seconds per phase)``.

    ``asm`` holds the optimized LLVM IR (``llir``) and, with ``want_asm``, the host
    assembly (``asm``); without it, ``assembly_from_llir`` can emit it later. ``unroll``
    picks the pipeline (see ``pipeline_options``).
    """
    times = {}
    tm = target_machine()
    llmod.triple = tm.triple
    llmod.data_layout = str(tm.target_data)
    t = time.perf_counter()
    try:
        mod = llvm.parse_assembly(str(llmod))
        mod.verify()
    except RuntimeError as e:
        raise InternalCompilerError(f"LLVM rejected the lowered kernel {llmod.name}: {e}") from None
    times["parse"] = time.perf_counter() - t
    t = time.perf_counter()
    pb = llvm.create_pass_builder(tm, pipeline_options(opt_level, unroll))
    pb.getModulePassManager().run(mod, pb)
    times["optimize"] = time.perf_counter() - t
    t = time.perf_counter()
    obj = tm.emit_object(mod)
    times["codegen"] = time.perf_counter() - t
    asm = {"llir": str(mod)}
    if want_asm:
        t = time.perf_counter()
        asm["asm"] = tm.emit_assembly(mod)
        times["asm"] = time.perf_counter() - t
    return asm, obj, times


def assembly_from_llir(llir: str) -> str:
    """The host assembly of optimized LLVM IR text (as ``compile_llvm`` would have emitted it).

    Why: emitting assembly costs about as much as emitting the object code, and only a
    reader of the ``asm`` text needs it, so the CPU target calls this on first access.
    """
    mod = llvm.parse_assembly(llir)
    return target_machine().emit_assembly(mod)


class LoadedObject:
    """An object file mapped into the process; ``address(symbol)`` gives function addresses."""

    def __init__(self, obj: bytes):
        tm = _new_target_machine()
        empty = llvm.parse_assembly("")
        empty.triple = tm.triple
        self.engine = llvm.create_mcjit_compiler(empty, tm)
        self.engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        self.engine.finalize_object()

    def address(self, symbol: str) -> int:
        addr = self.engine.get_function_address(symbol)
        if not addr:
            addr = self.engine.get_global_value_address(symbol)
        return addr


def load_object(obj: bytes) -> LoadedObject:
    return LoadedObject(obj)
