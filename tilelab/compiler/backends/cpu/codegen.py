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

LLVM itself is ``llvmlite.binding`` (``binding()``), imported at the first compile, not
with the backend: the dynamic loader needs ~6 ms to map and relocate its ~180 MB shared
library. ``preload()`` (called when the CPU target is made) starts that ``dlopen`` on a
background thread through libc -- a foreign call, so it runs without the GIL, on another
core, while the kernel is parsed, its passes run and it is lowered; ``llvmlite.binding``
then finds the library mapped. The thread imports nothing, and a ``fork`` waits for it
(``os.register_at_fork``): a child never inherits the loader's lock half-taken.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import os
import sys
import threading
import time
from typing import TYPE_CHECKING

from llvmlite import ir

if TYPE_CHECKING:
    import llvmlite.binding as llvm

#: tile IR ops whose lowered loops carry an accumulator: unrolled and interleaved loops run faster
ACCUMULATING_OPS = frozenset({"tt.dot", "tt.reduce", "tt.scan"})


class InternalCompilerError(Exception):
    """LLVM rejected the IR the CPU backend produced: a compiler bug, not a user error."""


_loading: threading.Thread | None = None


def preload() -> None:
    """Start mapping llvmlite's shared library on a background thread (see the module docstring)."""
    global _loading
    if _loading is not None or os.name != "posix" or "llvmlite.binding" in sys.modules:
        return
    path = _library_path()
    if path is None:
        return
    dlopen = ctypes.CDLL(None).dlopen
    dlopen.restype, dlopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_int]
    # the flags ctypes.CDLL uses, so that llvmlite's own dlopen returns this very handle
    args = (os.fsencode(path), os.RTLD_NOW | os.RTLD_LOCAL)
    _loading = threading.Thread(target=dlopen, args=args, name="tilelab-llvm-load", daemon=True)
    os.register_at_fork(before=_wait_for_library)
    _loading.start()


def _library_path() -> str | None:
    """Where llvmlite's shared library is, found without importing ``llvmlite.binding``."""
    from llvmlite.utils import get_library_name

    spec = importlib.util.find_spec("llvmlite.binding")
    folders = list(spec.submodule_search_locations or ()) if spec is not None else []
    path = os.path.join(folders[0], get_library_name()) if folders else None
    return path if path is not None and os.path.isfile(path) else None


def _wait_for_library() -> None:
    if _loading is not None:
        _loading.join()


def binding():
    """``llvmlite.binding`` (imported on first use, once the background ``dlopen`` is done)."""
    _wait_for_library()
    import llvmlite.binding

    return llvmlite.binding


@functools.cache
def target_machine() -> llvm.TargetMachine:
    """The host's target machine for compiling (created once per process)."""
    return _new_target_machine()


def _new_target_machine() -> llvm.TargetMachine:
    """A fresh host target machine (an execution engine owns and frees the one it is given)."""
    target, cpu, features = _host()
    return target.create_target_machine(cpu=cpu, features=features, opt=3, reloc="static", codemodel="jitdefault")


@functools.cache
def _host() -> tuple[llvm.Target, str, str]:
    """LLVM's target, CPU name and feature string for this host (asked once per process: ~0.5 ms)."""
    llvm = binding()
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target, llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


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
    llmod: ir.Module, opt_level: int = 3, want_asm: bool = True, pipeline: str = "unroll"
) -> tuple[dict, bytes, dict]:
    """Optimize and emit ``llmod``: returns ``(asm, object bytes, seconds per phase)``.

    ``asm`` holds the optimized LLVM IR (``llir``) and, with ``want_asm``, the host
    assembly (``asm``); without it, ``assembly_from_llir`` can emit it later. ``pipeline``
    is ``"lanes"`` (``short_pipeline``), ``"vectorize"`` or ``"unroll"`` (O3 with the
    ``pipeline_options`` of that name).
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
