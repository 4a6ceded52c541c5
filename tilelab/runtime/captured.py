"""The globals a kernel reads, captured at compile time and re-checked at every launch.

Why: the compiled code bakes in the values of the globals a kernel (and the jit functions
it calls) reads: ``SCALE = 2.0`` becomes a constant. A key made of sources alone gave a
stale result when only the value changed (two scripts with ``SCALE = 2.0`` and ``5.0``
sharing a cache both printed 2.0), and so did a notebook whose helper ``@jit`` cell ran
again without the kernel's cell. As in Triton, the values are recorded when the kernel
compiles (they join the cache key) and compared at each launch; a change drops the
kernel's compiled code, so the next launch compiles again::

    SCALE = 2.0
    capture = Captured.of(kernel.fn)   # [(kernel.fn.__globals__, "SCALE", 2.0)]
    capture.changed()                  # False
    SCALE = 5.0
    capture.changed()                  # True

What counts: globals and closure variables whose value is a plain constant (numbers,
strings, ``None``, ``tl.constexpr``, dtypes, tuples of those) and the jit functions called
(by identity: a redefined helper is a new object). Modules and other objects are not
values the compiler bakes in, and are left out.
"""

from __future__ import annotations

from .sources import _code_names, called_jit_functions
from .specialize import stable_repr

_MISSING = object()
_PLAIN = (int, float, complex, str, bool, type(None), bytes)


def _is_captured(value) -> bool:
    if isinstance(value, _PLAIN):
        return True
    if isinstance(value, tuple):
        return all(_is_captured(v) for v in value)
    if callable(getattr(value, "_tilelab_fn", None)):
        return True
    name = type(value).__name__
    return name in ("constexpr", "dtype") or type(value).__module__.startswith("tilelab.language")


class Captured:
    """``(scope, name, value)`` of each global a kernel and its callees read."""

    __slots__ = ("entries",)

    def __init__(self, entries: list):
        self.entries = entries

    @classmethod
    def of(cls, fn) -> Captured:
        entries = []
        for f in [fn, *called_jit_functions(fn)]:
            entries += _read_by(f)
        return cls(entries)

    def key(self) -> list:
        """The captured values as stable texts, for the cache key."""
        return sorted({f"{name}={stable_repr(value)}" for _, name, value in self.entries})

    def changed(self) -> bool:
        """Whether any captured global now holds another value (or was deleted)."""
        for scope, name, value in self.entries:
            now = _current(scope, name)
            if now is value:
                continue
            if now is _MISSING or type(now) is not type(value) or stable_repr(now) != stable_repr(value):
                return True
        return False


def _read_by(fn) -> list:
    names = _code_names(fn.__code__)
    out = []
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        value = _current(cell, name)
        if value is not _MISSING and _is_captured(value):
            out.append((cell, name, value))
    scope = fn.__globals__
    for name in sorted(names):
        value = scope.get(name, _MISSING)
        if value is not _MISSING and _is_captured(value):
            out.append((scope, name, value))
    return out


def _current(scope, name: str):
    if isinstance(scope, dict):
        return scope.get(name, _MISSING)
    try:
        return scope.cell_contents
    except ValueError:
        return _MISSING
