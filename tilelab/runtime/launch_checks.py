"""Launch-time checks of argument values, each failing with one line that names the argument.

A compiled kernel trusts its launch values; what it cannot check, a launch must:

* an array the kernel stores through must be writable (a read-only numpy array, or one
  over an immutable ``bytes``, was written without complaint);
* an array must own room for its elements: a broadcast view (a stride of 0) was read past
  its few bytes (a 0-d array is one element, as in Triton: a kernel reducing to a scalar
  writes it; reading beyond it is an out-of-bounds access like any other, which
  ``sanitize=True`` reports);
* an integer must fit the parameter's type (``2**40`` for an ``i32`` raised numpy's
  ``OverflowError``; ``np.int64(2**32 + 1000)`` wrapped to 1000 and ``999.9`` became 999).

    written = written_pointer_args(module.kernel)    # {"out"}: stored through
    check_array("add", "out", out, "out" in written)  # LaunchError when out is read-only
    scalar("add", "n", 2**40, parse_type("i32"))      # LaunchError: does not fit i32
"""

from __future__ import annotations

import functools
import numbers

import numpy as np

from tilelab.compiler.ir.ops import AtomicCASOp, AtomicRMWOp, StoreOp

from .errors import LaunchError

_WRITES = (StoreOp, AtomicRMWOp, AtomicCASOp)


def written_pointer_args(func) -> set[str]:
    """Names of the kernel's pointer parameters that a store or atomic writes through (traced back)."""
    names = list(func.attrs.get("arg_names") or [])
    args = {id(a): names[i] if i < len(names) else f"arg{i}" for i, a in enumerate(func.args)}
    found: set[str] = set()
    seen: set[int] = set()
    stack = [op.operands[0] for op in func.walk() if isinstance(op, _WRITES)]
    while stack:
        value = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if id(value) in args:
            found.add(args[id(value)])
            continue
        source = value.owner if value.defining_op is not None else _region_owner(value)
        if source is not None:
            stack += [v for v in source.operands if _is_pointer(v.type)]
    return found


def _region_owner(value):
    """The op whose region's block has ``value`` as an argument (a loop-carried pointer), or ``None``."""
    block = value.owner
    region = getattr(block, "parent", None)
    return getattr(region, "parent", None)


def _is_pointer(t) -> bool:
    element = getattr(t, "element", t)
    return bool(getattr(element, "is_pointer", False))


def check_array(kernel: str, name: str, array: np.ndarray, written: bool) -> None:
    """``LaunchError`` for a host array a kernel cannot use safely."""
    if written and not array.flags.writeable:
        raise LaunchError(f"{kernel}(): argument '{name}' is read-only, but the kernel stores through it")
    if array.size > 1 and 0 in array.strides:
        raise LaunchError(
            f"{kernel}(): argument '{name}' is a broadcast view (a stride of 0): its elements share memory; "
            f"pass np.ascontiguousarray({name})"
        )


@functools.cache
def int_range(type_name: str) -> tuple[int, int]:
    """``(min, max)`` of an integer IR type by name (``"i32"``)."""
    from tilelab.compiler.ir.types import parse_type

    info = np.iinfo(parse_type(type_name).np_dtype)
    return int(info.min), int(info.max)


def scalar(kernel: str, name: str, value, expected):
    """``value`` as a numpy scalar of the parameter type ``expected``; ``LaunchError`` when it does not fit."""
    what = f"{kernel}(): argument '{name}'"
    if expected.is_bool:
        if isinstance(value, (bool, np.bool_)) or (isinstance(value, numbers.Integral) and int(value) in (0, 1)):
            return np.bool_(bool(value))
        raise LaunchError(f"{what} expects a bool for {expected}, got {type(value).__name__} {value!r}")
    if expected.is_int:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            raise LaunchError(f"{what} expects an integer for {expected}, got {type(value).__name__} {value!r}")
        info = np.iinfo(expected.np_dtype)
        if not info.min <= int(value) <= info.max:
            raise LaunchError(f"{what} = {int(value)} does not fit the kernel's {expected} ({info.min} to {info.max})")
        return expected.np_dtype.type(int(value))
    if not isinstance(value, (numbers.Real, np.generic)) or isinstance(value, np.datetime64):
        raise LaunchError(f"{what} expects a number for {expected}, got {type(value).__name__}")
    return expected.np_dtype.type(value)
