"""The compiler's modules, imported on a background thread from ``import tilelab`` on.

Why: a notebook imports tilelab in one cell and defines and launches a kernel in a later
one. In between, the interpreter's main thread waits for input and holds no lock, so a
background thread can do the imports the first launch would otherwise pay (~30 ms of a
vector add's ~75 ms cold compile on a 2-core machine): ``llvmlite.ir`` (pure Python) and
``llvmlite.binding`` (its ~180 MB shared library mapped and relocated, on a third thread
while the Python imports run: ``backends/llvm_library.py``), which both targets need (the
CPU target's machine code and the CUDA target's PTX come from LLVM), the passes every
pipeline runs, the compiler's fingerprint for cache keys, and -- where no CUDA driver
library can be loaded, so that the CPU target is the default -- the CPU target and its
backend. There the thread goes on to warm LLVM up (``backends.cpu.warm_up``: a small loop
compiled, ~10 ms of one-time set-up taken off the first kernel).

    import tilelab               # cell 1: the thread starts (import tilelab itself does not wait)
    @tilelab.jit                 # cell 2: the modules are there, LLVM is warm
    def add(...): ...
    add[(n // 1024,)](x, y, ...)

The thread starts once ``tilelab``'s own imports are done, so it never imports beside
them. A script that launches right away still gains: its first compile waits for the
imports (``wait``, called before a target is made or a kernel compiled), then parses,
transforms and lowers the kernel while the warm-up runs beside it -- LLVM's calls release
the GIL, and llvmlite runs one of them at a time. Waiting, rather than importing beside the
thread, keeps two threads from entering a cycle of imports from both ends (Python resolves
that with an ``ImportError`` in one of them). An import or a warm-up that fails is left for
the first compile to report. ``TILELAB_PREFETCH=0`` turns it off. A ``fork`` and the
interpreter's exit wait for the whole thread (``join``: a child never inherits an import or
an LLVM call half done).
"""

from __future__ import annotations

import atexit
import importlib
import os
import sys
import threading

from . import options

#: what the thread imports (in ``_import_all``'s order: the CPU backend before ``llvmlite.binding``, so that
#: LLVM's warm-up starts as soon as the bindings are there; the passes every pipeline runs, ``pipeline.COMMON``,
#: after ``PIPELINE``)
LLVM_IR, LLVM_BINDING, PIPELINE = "llvmlite.ir", "llvmlite.binding", "tilelab.compiler.passes.pipeline"
#: on a machine without a CUDA driver, where the CPU target is the default: its backend, then the target
CPU_BACKEND, CPU_TARGET = "tilelab.compiler.backends.cpu", "tilelab.runtime.cpu_target"

_thread: threading.Thread | None = None
_warming: threading.Thread | None = None
_imported = threading.Event()  # set when the imports are done (or have failed); LLVM may still be warming up


def start() -> None:
    """Start the background imports (once per process; not when they are done or switched off)."""
    global _thread
    if _thread is not None or not options.prefetch_enabled():
        return
    if all(name in sys.modules for name in (LLVM_IR, LLVM_BINDING, PIPELINE)):
        return
    _thread = threading.Thread(target=_run, name="tilelab-prefetch", daemon=True)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(before=join)
    atexit.register(join)
    _thread.start()


def wait() -> None:
    """Block until the background imports are done (at once when none were started)."""
    if _thread is not None and _thread is not threading.current_thread():
        _imported.wait()


def join() -> None:
    """Block until the threads have finished, LLVM's warm-up included (before a ``fork`` and at exit)."""
    for thread in (_thread, _warming):
        if thread is not None and thread is not threading.current_thread():
            thread.join()


def _run() -> None:
    try:
        _import_all()
    except Exception:  # the first compile imports it again and reports the error there
        return
    finally:
        _imported.set()


def _import_all() -> None:
    """Import the compiler's modules; on the way, start LLVM's warm-up where the CPU target is the default."""
    from tilelab.compiler.backends import llvm_library

    from .cuda_driver import driver_library_present

    llvm_library.preload()  # the loader maps LLVM on another thread while these imports run
    cpu = not driver_library_present()
    importlib.import_module(LLVM_IR)
    if cpu:
        importlib.import_module(CPU_BACKEND)
    llvm_library.binding()  # llvmlite.binding, once its library is mapped
    if cpu:
        _start_warm_up()
    importlib.import_module(PIPELINE)
    from tilelab.compiler.passes.pipeline import COMMON

    for name in [f"tilelab.compiler.passes.{name}" for name in COMMON] + ([CPU_TARGET] if cpu else []):
        importlib.import_module(name)
    from .sources import compiler_fingerprint

    compiler_fingerprint()  # every cache key needs it; taken once per process


def _start_warm_up() -> None:
    """LLVM's one-time set-up on a thread of its own: it releases the GIL, the imports go on beside it."""
    global _warming
    from tilelab.compiler.backends.cpu import warm_up

    def run():
        try:
            warm_up()
        except Exception:  # the first compile meets the same problem and reports it
            return

    _warming = threading.Thread(target=run, name="tilelab-llvm-warm-up", daemon=True)
    _warming.start()
