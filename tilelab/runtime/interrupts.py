"""Ctrl-C and ``signal.alarm`` stop a running CPU launch within a second, raising ``KeyboardInterrupt``.

A CPU launch is one call into native code; Python runs its signal handlers only when the
call returns, so a kernel that never ends (``while tl.load(flag) == 0``) could not be
interrupted. Each loaded object carries a small signal handler and checks a stop flag
between programs and in ``while`` loops (compiler/backends/cpu/interrupt.py). Here:

* ``STATE`` is the process's stop flag and the table of replaced handlers the objects point at;
* ``arm(lib)``, on each launch from the main thread, clears the flag and makes sure the
  handler of a loaded object sits in front of Python's own for SIGINT (and SIGALRM when a
  Python handler is set), reinstalling it after ``signal.signal`` replaced it. The object
  that provides the handler is kept alive for good;
* ``stopped()`` after a launch that ended with the stopped status: Python's handler has
  already been called by ours, so ``PyErr_CheckSignals`` raises what it raises
  (``KeyboardInterrupt`` by default).

    interrupts.arm(lib)
    status = grid_fn(...)
    if status == STATUS_STOPPED:
        interrupts.stopped()       # raises KeyboardInterrupt

Only on Linux (the ``struct sigaction`` layout it edits); elsewhere launches are not interruptible.
"""

from __future__ import annotations

import _signal
import ctypes
import signal
import sys
import threading

STATE = (ctypes.c_int64 * 72)()  # [0]: the stop flag (low 32 bits); [1 + sig]: the handler replaced for sig
_SIGNALS = tuple(int(s) for s in (signal.SIGINT, getattr(signal, "SIGALRM", None)) if s is not None)
_LINUX = sys.platform.startswith("linux")
_MAIN_THREAD = threading.main_thread().ident
_getsignal = getattr(_signal, "getsignal", signal.getsignal)
_installed: dict[int, object] = {}  # signal -> the Python handler in place when ours was installed
_owners: list = []  # objects whose handler was installed: never unloaded
_lock = threading.Lock()
_libc = None


def state_address() -> int:
    return ctypes.addressof(STATE)


def arm(lib) -> None:
    """Clear the stop flag; from the main thread, put ``lib``'s handler in front of Python's where needed.

    Runs on every launch: ``_signal.getsignal`` (no enum conversion) and a thread id compare, ~0.3 us.
    """
    STATE[0] = 0
    if not _LINUX or threading.get_ident() != _MAIN_THREAD:
        return
    for sig in _SIGNALS:
        python_handler = _getsignal(sig)
        if _installed.get(sig, _installed) is python_handler or not callable(python_handler):
            continue
        with _lock:
            _install(sig, python_handler, lib)


def _install(sig: int, python_handler, lib) -> None:
    global _libc
    handler = lib.address("__tilelab_on_signal")
    if not handler:
        return
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    old = ctypes.create_string_buffer(512)  # a struct sigaction, whose first field is the handler
    if _libc.sigaction(sig, None, old) != 0:
        return
    previous = ctypes.c_uint64.from_buffer(old).value
    if previous != handler:
        new = ctypes.create_string_buffer(old.raw, len(old))
        ctypes.c_uint64.from_buffer(new).value = handler
        STATE[1 + sig] = previous
        if _libc.sigaction(sig, new, None) != 0:
            return
        _owners.append(lib)
    _installed[sig] = python_handler


def stopped() -> None:
    """After a launch the stop flag ended: raise what Python's handler raises (else a ``KeyboardInterrupt``)."""
    STATE[0] = 0
    ctypes.pythonapi.PyErr_CheckSignals()  # runs the Python handler; its exception propagates
    raise KeyboardInterrupt("the kernel launch was stopped by a signal")


def wait_all(waits: list) -> list:
    """Call each of ``waits`` to the end, also when a signal's exception interrupts one.

    Why: a launch split over threads must not return (or raise) while its other threads still
    run programs: the next launch clears the stop flag. On an exception the flag is set, so
    the other threads stop at their next program, and the exception is raised once all are done.
    """
    results, error = [], None
    for wait in waits:
        while True:
            try:
                results.append(wait())
                break
            except BaseException as e:  # noqa: BLE001 - KeyboardInterrupt, or an alarm handler's exception
                STATE[0] = 1
                error = error or e
    if error is not None:
        raise error
    return results
