"""LLVM's shared library, mapped on a background thread before ``llvmlite.binding`` needs it.

Both backends reach LLVM through ``llvmlite.binding``, whose import maps and relocates a
~180 MB shared library (~6-9 ms of the dynamic loader) before it sets up its ctypes
prototypes. ``preload()`` starts that ``dlopen`` on a thread through libc -- a foreign
call, so it runs without the GIL, on another core, while Python imports or lowers
something else; ``binding()`` waits for it, then imports ``llvmlite.binding``, which finds
the library mapped (the same flags as ctypes', so ``dlopen`` hands back the same handle).

    preload()            # when a kernel is defined (runtime/prefetch.py) or a target made
    ...                  # import llvmlite.ir, the passes, the backend
    llvm = binding()     # the loader's work is done by now

This module imports nothing heavy itself: it is the first thing the background imports
run. The thread imports nothing, and a ``fork`` waits for it (``os.register_at_fork``): a
child never inherits the loader's lock half-taken.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
import threading

_loading: threading.Thread | None = None
_start_lock = threading.Lock()


def preload() -> None:
    """Start mapping llvmlite's shared library on a background thread (once; not when it is loaded)."""
    global _loading
    with _start_lock:
        if _loading is not None or os.name != "posix" or "llvmlite.binding" in sys.modules:
            return
        path = library_path()
        if path is None:
            return
        dlopen = ctypes.CDLL(None).dlopen
        dlopen.restype, dlopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_int]
        # the flags ctypes.CDLL uses, so that llvmlite's own dlopen returns this very handle
        args = (os.fsencode(path), os.RTLD_NOW | os.RTLD_LOCAL)
        _loading = threading.Thread(target=dlopen, args=args, name="tilelab-llvm-load", daemon=True)
        os.register_at_fork(before=wait)
        _loading.start()


def library_path() -> str | None:
    """Where llvmlite's shared library is, found without importing ``llvmlite.binding``."""
    from llvmlite.utils import get_library_name

    spec = importlib.util.find_spec("llvmlite.binding")
    folders = list(spec.submodule_search_locations or ()) if spec is not None else []
    path = os.path.join(folders[0], get_library_name()) if folders else None
    return path if path is not None and os.path.isfile(path) else None


def wait() -> None:
    """Block until a ``preload`` started is done (at once when none was)."""
    if _loading is not None:
        _loading.join()


def binding():
    """``llvmlite.binding`` (imported on first use, once the background ``dlopen`` is done)."""
    wait()
    import llvmlite.binding

    return llvmlite.binding
