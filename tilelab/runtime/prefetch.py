"""The compiler's modules, imported on a background thread once a kernel is defined.

Why: a notebook defines a kernel in one cell and launches it in a later one. In between,
the interpreter's main thread waits for input and holds no lock, so a background thread can
do the imports the first launch would otherwise pay (~30 ms of a vector add's ~75 ms cold
compile on a 2-core machine): ``llvmlite.ir`` (pure Python) and ``llvmlite.binding`` (its
~180 MB shared library mapped and relocated), which both targets need (the CPU target's
machine code and the CUDA target's PTX come from LLVM), the passes every pipeline runs, and
-- where no CUDA driver library can be loaded, so that the CPU target is the default -- the
CPU target and its backend.

    @tilelab.jit                 # cell 1: the thread starts importing
    def add(...): ...
    add[(n // 1024,)](x, y, ...) # cell 2: the modules are there

A script that launches right after the definition gains little and loses nothing: its first
compile waits for the thread (``wait``, called before a target is made or a kernel compiled)
and then finds the modules it needs imported. Waiting, rather than importing beside the
thread, keeps two threads from entering a cycle of imports from both ends (Python resolves
that with an ``ImportError`` in one of them). The thread only imports; an import that fails
is left for the first compile to report. ``TILELAB_PREFETCH=0`` turns it off. A ``fork`` and the interpreter's exit
wait for it (a child never inherits an import half done).
"""

from __future__ import annotations

import atexit
import importlib
import os
import sys
import threading

#: imported in this order by the thread, then the passes every pipeline runs (``pipeline.COMMON``)
MODULES = ("llvmlite.ir", "llvmlite.binding", "tilelab.compiler.passes.pipeline")
#: then, on a machine without a CUDA driver, the CPU target (and so its backend)
CPU_MODULES = ("tilelab.runtime.cpu_target",)

_thread: threading.Thread | None = None


def start() -> None:
    """Start the background imports (once per process; not when they are done or switched off)."""
    global _thread
    if _thread is not None or os.environ.get("TILELAB_PREFETCH", "1") == "0":
        return
    if all(name in sys.modules for name in MODULES):
        return
    _thread = threading.Thread(target=_import_all, name="tilelab-prefetch", daemon=True)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(before=wait)
    atexit.register(wait)
    _thread.start()


def wait() -> None:
    """Block until the background imports are done (at once when none were started)."""
    if _thread is not None and _thread is not threading.current_thread():
        _thread.join()


def _import_all() -> None:
    try:
        for name in MODULES:
            importlib.import_module(name)
        from tilelab.compiler.passes.pipeline import COMMON

        from .cuda_driver import driver_library_present

        passes = [f"tilelab.compiler.passes.{name}" for name in COMMON]
        for name in passes + ([] if driver_library_present() else list(CPU_MODULES)):
            importlib.import_module(name)
    except Exception:  # the first compile imports it again and reports the error there
        return
