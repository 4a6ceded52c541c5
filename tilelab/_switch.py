"""``SharedSwitch``: a process-wide setting held changed while any of several concurrent users needs it.

Compiles run on more than one thread (the user's and the background tier's), and some settings a
compile changes belong to the whole process: Python's cyclic collector, an LLVM option. The first
user in switches the setting, the last one out puts it back; users in between change nothing.

    paused = SharedSwitch(gc.disable, gc.enable)
    with paused.held():
        ...
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import contextmanager


class SharedSwitch:
    """``held()``: ``on()`` when the first holder enters, ``off()`` when the last one leaves."""

    def __init__(self, on: Callable[[], None], off: Callable[[], None]):
        self._on, self._off = on, off
        self._lock = threading.Lock()
        self._holders = 0

    @contextmanager
    def held(self):
        with self._lock:
            if self._holders == 0:
                self._on()
            self._holders += 1
        try:
            yield
        finally:
            with self._lock:
                self._holders -= 1
                if self._holders == 0:
                    self._off()
