"""Specialization: from launch values to the signature a kernel is compiled for.

A kernel is compiled once per *specialization* and reused while new launches look the
same. Following Triton, what counts is:

* arrays -> a pointer to their dtype (``*f32``), divisible by 16 when 16-byte aligned;
* ``bool`` -> ``i1``; ``float`` -> ``f32``; numpy scalars keep their dtype;
* ``int`` -> ``i32``, or ``i64`` / ``u64`` when out of range; the value ``1`` becomes the
  constant 1 (strides of 1 then fold away) and multiples of 16 are marked divisible by
  16 (the compiler can then vectorize), unless the parameter is in ``do_not_specialize``;
* ``None`` -> the constant ``None``.

    specialize_arg("n", 1024)   # ArgSpec('n', 'i32', 16, ...)
    specialize_arg("s", 1)      # ArgSpec('s', None, 1, constant=1)
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from tilelab.compiler.ir.types import scalar_from_numpy

from .arrays import array_info, element_name
from .errors import LaunchError

_UNSET = object()


@dataclass(frozen=True)
class ArgSpec:
    """One parameter's specialization: a type string and divisibility, or a constant."""

    name: str
    type: str | None  # "*f32", "i32"...; None for a constant
    divisibility: int = 1
    constant: object = _UNSET

    @property
    def is_constant(self) -> bool:
        return self.constant is not _UNSET

    @property
    def is_pointer(self) -> bool:
        return bool(self.type) and self.type.startswith("*")


def dtype_name(dtype: np.dtype, what: str) -> str:
    """The IR scalar name of a numpy dtype (``float32`` -> ``f32``); ``what`` names the argument."""
    try:
        return scalar_from_numpy(dtype).name
    except KeyError:
        raise LaunchError(f"{what}: unsupported dtype {dtype}") from None


def int_type(value: int, what: str) -> str:
    """``i32`` when the value fits, else ``i64``, else ``u64``."""
    if -(2**31) <= value < 2**31:
        return "i32"
    if -(2**63) <= value < 2**63:
        return "i64"
    if 0 <= value < 2**64:
        return "u64"
    raise LaunchError(f"{what}: integer {value} does not fit in 64 bits")


def specialize_arg(name: str, value, specialize: bool = True, what: str | None = None) -> ArgSpec:
    """The ``ArgSpec`` of a non-constexpr parameter's launch value."""
    what = what or f"argument '{name}'"
    info = array_info(value)
    if info is not None:
        div = 16 if specialize and info.address % 16 == 0 else 1
        elem = element_name(info)  # a CUDA tensor's bf16 / fp8 named without importing ml_dtypes
        if elem is None:
            raise LaunchError(f"{what}: unsupported dtype {info.elem}")
        return ArgSpec(name, "*" + elem, div)
    if value is None:
        return ArgSpec(name, None, constant=None)
    if isinstance(value, (bool, np.bool_)):
        return ArgSpec(name, "i1")
    if isinstance(value, (int, np.integer)):
        return _int_spec(name, value, specialize, what)
    if isinstance(value, float):
        return ArgSpec(name, "f32")
    if isinstance(value, np.floating):
        return ArgSpec(name, dtype_name(value.dtype, what))
    kind = type(value).__name__
    hint = "; pass a tuple (or the elements as arguments of their own)" if isinstance(value, list) else ""
    raise LaunchError(f"{what}: unsupported type {kind} (expected an array, int, float, bool or None){hint}")


def _int_spec(name: str, value, specialize: bool, what: str) -> ArgSpec:
    type_ = int_type(int(value), what) if isinstance(value, int) else dtype_name(value.dtype, what)
    if not specialize:
        return ArgSpec(name, type_)
    if int(value) == 1:
        return ArgSpec(name, None, constant=1)
    return ArgSpec(name, type_, 16 if int(value) % 16 == 0 else 1)


def check_constexpr(name: str, value, what: str | None = None) -> None:
    """A ``tl.constexpr`` takes a compile-time value, never an array."""
    if array_info(value) is not None:
        what = what or f"argument '{name}'"
        raise LaunchError(f"{what} is a tl.constexpr and needs a compile-time value, got an array")


def stable_repr(value) -> str:
    """A text for a constant that is the same in every process (for cache keys)."""
    fn = getattr(value, "_tilelab_fn", None)
    if fn is not None or callable(value) and hasattr(value, "__code__"):
        fn = fn or value
        h = hashlib.sha256(code_text(fn.__code__).encode())
        for cell in fn.__closure__ or ():  # values the function closes over change what it computes
            try:
                h.update(stable_repr(cell.cell_contents).encode())
            except ValueError:  # an empty cell
                continue
        h.update(stable_repr(fn.__defaults__ or ()).encode())
        return f"<function {fn.__module__}.{fn.__qualname__} {h.hexdigest()[:16]}>"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(stable_repr(v) for v in value) + ")"
    return f"{type(value).__name__}:{value!r}"


def code_text(code) -> str:
    """A text of what a code object computes: bytecode, constants (nested code too) and names.

    The bytecode alone is not enough: ``v * 2`` and ``v * 7`` differ only in a constant.
    """
    consts = [code_text(c) if hasattr(c, "co_code") else f"{type(c).__name__}:{c!r}" for c in code.co_consts]
    return f"{code.co_code.hex()}|{consts}|{code.co_names}"
