"""Launch keys: a cheap fingerprint of launch arguments that decides the specialization.

Why: specializing a launch (``specialize.py``) builds type strings, divisibility tables and a
cache key for every call; a hot loop launching the same kernel pays that each time. Like
Triton's launcher, tilelab first computes a *launch key* from what specialization looks at,
and nothing more: per argument, its kind, dtype, 16-byte alignment, integer range class,
whether it equals 1 or is a multiple of 16; constexprs by value. Two launches with equal keys
get the same compiled kernel, so ``JITFunction`` maps launch keys to its cache keys::

    launch_key({"x": x, "n": 1024, "BLOCK": 128}, {"BLOCK"}, ("cpu", 4, 3))
    # (("x", "n", "BLOCK"), (ndarray, float32, True), (int, 32, False, True), (int, 128), ...)

A key is a tuple of hashables; ``None`` means "no shortcut" (an argument kind the key does not
cover, such as a torch tensor): the launch then takes the full specialization path.
"""

from __future__ import annotations

import os

import numpy as np

from .specialize import stable_repr

_PLAIN_CONSTANTS = (int, bool, str, type(None))


def launch_key(bound: dict, constexprs: set, extra: tuple) -> tuple | None:
    """The launch key of ``bound`` (parameter name -> value), or ``None`` when it has no shortcut.

    ``extra`` holds the launch options that choose the kernel (target, num_warps, ...).
    """
    parts = [tuple(bound), extra, os.environ.get("TILELAB_TARGET")]
    for name, value in bound.items():
        part = constant_part(value) if name in constexprs else argument_part(value)
        if part is None:
            return None
        parts.append(part)
    return tuple(parts)


def constant_part(value):
    """A constexpr's value, as precise as ``stable_repr`` (so ``0.0`` and ``-0.0`` differ)."""
    if type(value) in _PLAIN_CONSTANTS:
        return type(value), value
    if isinstance(value, np.ndarray):
        return None  # an error the full path reports
    return "repr", stable_repr(value)


def argument_part(value):
    """What specialization reads from a runtime argument, or ``None`` for kinds not covered."""
    kind = type(value)
    if kind is np.ndarray:
        return kind, value.dtype, value.__array_interface__["data"][0] % 16 == 0
    if kind is int:
        return kind, _int_class(value), value == 1, value % 16 == 0
    if kind is float or kind is bool or value is None:
        return (kind,)
    if isinstance(value, np.integer):
        return kind, value == 1, value % 16 == 0
    if isinstance(value, (np.floating, np.bool_)):
        return (kind,)
    return None


def _int_class(value: int) -> int | None:
    """32, 64 or -64 (unsigned) by the range ``int_type`` would pick; ``None`` past 64 bits."""
    if -(2**31) <= value < 2**31:
        return 32
    if -(2**63) <= value < 2**63:
        return 64
    return -64 if 0 <= value < 2**64 else None
