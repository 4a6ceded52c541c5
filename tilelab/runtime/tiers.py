"""Tiered compilation: a kernel's first code is quick to make, its optimized code comes in the background.

Why: a notebook cell waits for the first launch, compile included, and LLVM's optimizing
code generator is the largest part of a small kernel's compile (vector add on the CPU:
~8 ms of instruction selection, scheduling and register allocation, against ~2 ms for
the quick ``-O0`` code generator). The quick code is correct and not much slower on a
kernel that waits for memory; it runs while the optimized code is made on another core.

    artifact = target.compile(module, options)   # artifact.upgrade is set: the blobs are the quick tier
    ck.launcher = target.load(artifact, module)  # launches run the quick code at once
    submit(ck, store)                            # a background thread: artifact.upgrade(),
                                                 # ck.launcher.upgrade(blobs), then store(ck)

``submit`` runs each upgrade on a daemon thread of its own, one at a time. The launcher swaps
its entry point between two launches (one assignment); code that a launch on another thread
is running stays loaded. ``store`` then writes the disk cache entry: the cache only ever
holds the optimized tier, so a warm process loads it and never upgrades, and a compile of
the same kernel meanwhile waits for that entry (``wait(key)``) rather than compiling again.
``wait()`` blocks until every upgrade submitted so far is done (benchmarks call it before
they time anything); a ``fork`` and the interpreter's exit wait too. An upgrade that fails leaves the kernel on its
quick code, caches nothing and says why in ``metadata["tier_error"]``.

``metadata["tier"]`` says which code runs: ``"quick"``, then ``"optimized"``.
``TILELAB_TIERED=0`` compiles the optimized code on the first launch instead.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Callable

from . import options

_lock = threading.Lock()  # guards _pending and _registered
_one_at_a_time = threading.Lock()  # upgrades run one after another, each on a thread of its own
_pending: list[threading.Thread] = []  # upgrades submitted and not yet waited for
_registered = False


def enabled() -> bool:
    """Whether targets may hand back a quick tier first (``TILELAB_TIERED`` is not ``0``)."""
    return options.tiered()


def submit(ck, store: Callable[[object], None] | None, key: str | None = None) -> None:
    """Make ``ck``'s optimized code on a background thread, swap it in, then ``store(ck)``.

    ``key`` (the cache key) lets a compile of the same kernel wait for the entry instead of
    compiling it again (``wait(key)``). A plain thread per upgrade (kernels are compiled a
    few at a time): a thread pool's module costs more to import than the thread costs to start.
    """
    global _registered
    thread = threading.Thread(target=_serialized, args=(ck, store), name="tilelab-optimize", daemon=True)
    thread.tilelab_key = key
    with _lock:
        if not _registered:
            if hasattr(os, "register_at_fork"):
                os.register_at_fork(before=wait)
            atexit.register(wait)
            _registered = True
        _pending.append(thread)
        thread.start()  # under the lock: ``wait`` never sees a thread it cannot join yet


def wait(key: str | None = None) -> None:
    """Block until every upgrade submitted so far (of the kernel ``key`` names, if given) has finished."""
    if threading.current_thread().name == "tilelab-optimize":
        return
    with _lock:
        threads = [t for t in _pending if key is None or t.tilelab_key == key]
    for thread in threads:
        thread.join()
    with _lock:
        _pending[:] = [t for t in _pending if t.is_alive()]


def _serialized(ck, store) -> None:
    with _one_at_a_time:
        _upgrade(ck, store)


def _upgrade(ck, store) -> None:
    artifact = ck.artifact
    try:
        blobs = artifact.upgrade()
        ck.launcher.upgrade(blobs)
    except Exception as e:  # the quick code stays; a bug report, not a wrong answer
        ck.metadata["tier_error"] = f"{type(e).__name__}: {e}"
        artifact.upgrade = None
        return
    artifact.blobs = blobs
    artifact.upgrade = None
    for meta in (artifact.metadata, ck.metadata):
        meta["tier"] = "optimized"
    if store is not None:
        store(ck)
