"""Machine code for the host CPU: the target machine, LLVM's optimizer, object emission, loading.

``compile_llvm`` optimizes with llvmlite's new pass manager for the host CPU (its name
and features, so loops vectorize with AVX2/AVX-512 where present) and emits an object
file. The pipeline is sized to the kernel (``build_llvm_module`` picks it):

* ``"unroll"`` -- O3 with loop unrolling, interleaving and straight-line (SLP)
  vectorization, for kernels whose loops carry an accumulator (``tt.dot``,
  ``tt.reduce``, ``tt.scan``) or that have 2-D tiles, where they pay at run time;
* ``"vectorize"`` -- O3 with the loop vectorizer only: 1-D kernels, memory bound and as
  fast without unrolling, whose loops are left to LLVM;
* ``"lanes"`` -- ``short_pipeline``: 1-D kernels whose loops the backend wrote as
  vector code itself (lanes.py); a few clean-up passes, about a tenth of O3's time.

``load_object`` maps such an object file into the process with MCJIT -- no optimization
or code generation: a warm process loads cached objects in a few milliseconds. Math
functions (``expf``, ``atan2``) resolve to the process's C library.

LLVM itself is ``llvmlite.binding``, imported at the first compile, not with the backend
(``llvm_library.binding()``; ``preload()``, called when the CPU target is made, maps its
shared library on another core meanwhile). ``warm_up()`` compiles a small loop once, off
the first kernel's path, so that LLVM's one-time set-up is done when that kernel arrives.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from typing import TYPE_CHECKING

from llvmlite import ir

from ..llvm_library import binding

if TYPE_CHECKING:
    import llvmlite.binding as llvm

#: tile IR ops whose lowered loops carry an accumulator: unrolled and interleaved loops run faster
ACCUMULATING_OPS = frozenset({"tt.dot", "tt.reduce", "tt.scan"})


class InternalCompilerError(Exception):
    """LLVM rejected the IR the CPU backend produced: a compiler bug, not a user error."""


_machine_lock = threading.Lock()  # the warm-up thread and the main thread may both ask first


def target_machine() -> llvm.TargetMachine:
    """The host's target machine for compiling (created once per process, on whichever thread asks first)."""
    with _machine_lock:
        return _cached_target_machine()


@functools.cache
def _cached_target_machine() -> llvm.TargetMachine:
    return _new_target_machine()


def quick_machine() -> llvm.TargetMachine:
    """The host's target machine for the quick tier: LLVM's ``-O0`` code generator (created once)."""
    with _machine_lock:
        return _cached_quick_machine()


@functools.cache
def _cached_quick_machine() -> llvm.TargetMachine:
    return _new_target_machine(opt=0)


def _new_target_machine(opt: int = 3) -> llvm.TargetMachine:
    """A fresh host target machine (an execution engine owns and frees the one it is given)."""
    target, cpu, features = _host()
    return target.create_target_machine(cpu=cpu, features=features, opt=opt, reloc="static", codemodel="jitdefault")


@functools.cache
def _host() -> tuple[llvm.Target, str, str]:
    """LLVM's target, CPU name and feature string for this host (asked once per process: ~0.5 ms)."""
    llvm = binding()
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    cpu, features = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
    for option in llvm_workarounds(cpu, features):
        llvm.set_option("", option)
    return target, cpu, features


def host_vector_bits() -> int:
    """The widest SIMD register of this host, in bits: 512 (AVX-512), 256 (AVX), else 128 (SSE, NEON)."""
    features = _host()[2].split(",")
    return 512 if "+avx512f" in features else 256 if "+avx" in features else 128


def llvm_workarounds(cpu: str, features: str) -> list[str]:
    """LLVM options that keep this host's code generator clear of its known bugs.

    On Intel AVX-512 hosts, the loop vectorizer's interleaved groups (a 16x8 row sum's strided
    ``shufflevector``s of a ``<64 x float>``) make the x86 code generator abort the process
    ("Unexpected illegal type!" in ``LegalizeDAG``, LLVM 22): those loops use gathers instead.
    ``tests/cpu/test_llvm_workarounds.py`` compiles that kernel for such a CPU in a subprocess.
    """
    intel_avx512 = "+avx512f" in features.split(",") and not cpu.startswith("znver")
    return ["-enable-interleaved-mem-accesses=0"] if intel_avx512 else []


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
    pto = binding().create_pipeline_tuning_options(speed_level=opt_level)
    pto.loop_vectorization = True
    pto.slp_vectorization = unroll
    pto.loop_unrolling = unroll
    pto.loop_interleaving = unroll
    return pto


def short_pipeline(tm: llvm.TargetMachine, opt_level: int):
    """The passes for a kernel whose loops are vector code already (lanes.py): ``(manager, builder)``.

    Inline the program function into the grid loop, drop it, then clean up once
    (SROA, instruction combining, CFG simplification). Why: the O3 pipeline's time goes to
    loop analyses and the vectorizer, which have nothing left to do here; the code
    generator does its own loop strength reduction and invariant code motion.
    """
    llvm = binding()
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=opt_level))
    mpm = llvm.create_new_module_pass_manager()
    mpm.add_always_inliner_pass()
    mpm.add_global_dead_code_eliminate_pass()
    mpm.add_sroa_pass()
    mpm.add_instruction_combine_pass()
    mpm.add_simplify_cfg_pass()
    return mpm, pb


def compile_llvm(
    llmod: ir.Module, opt_level: int = 3, want_asm: bool = True, pipeline: str = "unroll", quick: bool = False
) -> tuple[dict, bytes, dict]:
    """Optimize and emit ``llmod``: returns ``(asm, object bytes, seconds per phase)``.

    ``asm`` holds the optimized LLVM IR (``llir``) and, with ``want_asm``, the host
    assembly (``asm``); without it, ``assembly_from_llir`` can emit it later. ``pipeline``
    is ``"lanes"`` (``short_pipeline``), ``"vectorize"`` or ``"unroll"`` (O3 with the
    ``pipeline_options`` of that name). ``quick`` emits the object code with the ``-O0``
    code generator (``quick_machine``; the optimized IR is the same): the quick tier of
    runtime/tiers.py, whose upgrade is ``emit_optimized(asm["llir"])``.
    """
    llvm = binding()
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
    if pipeline == "lanes":
        mpm, pb = short_pipeline(tm, opt_level)
    else:
        pb = llvm.create_pass_builder(tm, pipeline_options(opt_level, pipeline == "unroll"))
        mpm = pb.getModulePassManager()
    mpm.run(mod, pb)
    times["optimize"] = time.perf_counter() - t
    asm = {"llir": str(mod)}  # before code generation, which rewrites the module for the target
    t = time.perf_counter()
    obj = (quick_machine() if quick else tm).emit_object(mod)
    times["codegen"] = time.perf_counter() - t
    if want_asm:
        t = time.perf_counter()
        asm["asm"] = tm.emit_assembly(mod)
        times["asm"] = time.perf_counter() - t
    return asm, obj, times


def emit_optimized(llir: str) -> bytes:
    """The optimizing code generator's object code for optimized LLVM IR text (a quick tier's upgrade).

    The text is parsed into an LLVM context of its own: this runs on the upgrade thread,
    beside compiles on the main thread (llvmlite runs one LLVM call at a time).
    """
    with _module_of_its_own(llir) as mod:
        return target_machine().emit_object(mod)


@contextlib.contextmanager
def _module_of_its_own(text: str):
    """``text`` parsed into an LLVM context of its own; the module is freed before the context.

    Why by hand: left to the garbage collector, a module and its context caught in a
    reference cycle are freed in either order, and a module freed after its context crashes.
    """
    llvm = binding()
    context = llvm.create_context()
    mod = llvm.parse_assembly(text, context=context)
    try:
        yield mod
    finally:
        mod.close()
        context.close()


def assembly_from_llir(llir: str) -> str:
    """The host assembly of optimized LLVM IR text (as ``compile_llvm`` would have emitted it).

    Why: emitting assembly costs about as much as emitting the object code, and only a
    reader of the ``asm`` text needs it, so the CPU target calls this on first access.
    """
    mod = binding().parse_assembly(llir)
    return target_machine().emit_assembly(mod)


class LoadedObject:
    """An object file mapped into the process; ``address(symbol)`` gives function addresses."""

    def __init__(self, obj: bytes):
        llvm = binding()
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


#: ``warm_up``'s module: a loop over vectors of floats, loaded, added, compared, selected and stored
WARM_UP_IR = """
define void @tilelab_warm_up(ptr noalias %x, ptr noalias %out, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %src = getelementptr inbounds float, ptr %x, i64 %i
  %v = load <16 x float>, ptr %src, align 4
  %twice = fadd <16 x float> %v, %v
  %big = fcmp ogt <16 x float> %twice, %v
  %kept = select <16 x i1> %big, <16 x float> %twice, <16 x float> zeroinitializer
  %dst = getelementptr inbounds float, ptr %out, i64 %i
  store <16 x float> %kept, ptr %dst, align 4
  %next = add i64 %i, 16
  %more = icmp slt i64 %next, %n
  br i1 %more, label %loop, label %exit
exit:
  ret void
}
"""


def warm_up() -> None:
    """Optimize, emit and load a small vector loop, so that LLVM's one-time set-up is done.

    Why: the first module a process compiles costs ~12 ms more than the next ones (vector
    add: ~46 -> ~34 ms from launch to result, medians of 11 fresh processes): LLVM fills
    its instruction-selection and scheduling tables, the target machine makes its
    subtarget, the pass builder registers its passes, MCJIT sets up. The background
    imports (runtime/prefetch.py) run this on a thread of its own where the CPU target is
    the default, as soon as the backend and ``llvmlite.binding`` are imported: the set-up
    then runs on another core -- llvmlite's calls release the GIL -- while the remaining
    imports go on and the main thread parses, transforms and lowers the first kernel.

    The loop goes through the short pipeline and the quick tier's code generator (the
    first code of 1-D kernels; the optimizing one runs in the background anyway), with the
    shared target machines: the subtarget is made and kept per target machine. It is safe
    beside the main thread's compiles: llvmlite runs one LLVM call at a time (a
    process-wide lock), and the loop lives in an LLVM context of its own.
    """
    tm = target_machine()
    with _module_of_its_own(WARM_UP_IR) as mod:
        mod.triple = tm.triple
        mod.data_layout = str(tm.target_data)
        mpm, pb = short_pipeline(tm, 3)
        mpm.run(mod, pb)
        LoadedObject(quick_machine().emit_object(mod)).address("tilelab_warm_up")
