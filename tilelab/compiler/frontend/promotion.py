"""Triton's type promotion rules, as pure functions over IR scalar types.

When a binary operator meets two operands of different types, both are converted
to one *computation type* first:

* a Python scalar (``x + 1``, ``x * 0.5``) is *weak*: when its kind (bool < integer <
  float; signed and unsigned are one kind) is not above the tensor's, the tensor's type
  wins (``f16 tensor * 0.5 -> f16``; ``u32 tensor % 7 -> u32``; ``i32 tensor * 0.5 -> f32``);
  the literal must then fit that type (``check_fits``);
* f64 > f32 > f16/bf16 (f16 with bf16 gives f32; ``/`` and ``%`` on half types compute in f32);
* an int with a float gives the float;
* two ints promote by width; at equal width the unsigned one wins (``i32 + u32 -> u32``).

>>> computation_type(i32, False, f16, False)
f16
"""

from __future__ import annotations

from ..ir.types import ScalarType, f16, f32, f64, i1, i32, i64, u32, u64
from .errors import SemanticError

_KIND_RANK = {"bool": 0, "uint": 1, "int": 1, "float": 2}


def python_scalar_type(value) -> ScalarType:
    """The type Triton gives a Python literal: bool -> i1, int -> i32/u32/i64/u64 by range, float -> f32."""
    if isinstance(value, bool):
        return i1
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return i32
        if 2**31 <= value < 2**32:
            return u32
        if -(2**63) <= value < 2**63:
            return i64
        if 2**63 <= value < 2**64:
            return u64
        raise SemanticError(f"integer constant {value} does not fit in 64 bits")
    if isinstance(value, float):
        return f32
    raise SemanticError(f"expected a number, got {value!r}")


def check_fits(value, elem: ScalarType) -> None:
    """Refuse a weak Python int that the integer type ``elem`` cannot hold (``u32 tile + -1``, ``i8 tile * 300``).

    ``check_fits(255, u8)`` passes; ``check_fits(-1, u32)`` raises
    "the constant -1 is out of range for u32 (range 0 to 4294967295); cast the tile or the constant".
    """
    if not elem.is_int or elem.is_bool or isinstance(value, bool) or not isinstance(value, int):
        return
    low, high = (0, 2**elem.bits - 1) if elem.is_unsigned else (-(2 ** (elem.bits - 1)), 2 ** (elem.bits - 1) - 1)
    if not low <= value <= high:
        raise SemanticError(
            f"the constant {value} is out of range for {elem} (range {low} to {high}); cast the tile or the constant"
        )


def integer_promote(a: ScalarType, b: ScalarType) -> ScalarType:
    """Promotion of two integer types: the wider wins; at equal width, the unsigned one."""
    if a.is_unsigned == b.is_unsigned:
        return a if a.bits > b.bits else b
    unsigned, signed = (a, b) if a.is_unsigned else (b, a)
    return unsigned if unsigned.bits >= signed.bits else signed


def _float_type(a: ScalarType, b: ScalarType, div_or_mod: bool) -> ScalarType | None:
    names = {a.name, b.name}
    if "f64" in names:
        return f64
    if "f32" in names:
        return f32
    if names & {"f16", "bf16"}:
        if div_or_mod or names == {"f16", "bf16"}:
            return f32
        if "f16" in names:
            return f16
        return a if a == b else f32  # bf16 only stays bf16 with itself
    if a.is_float and b.is_float:  # two fp8 types
        return a if a == b else f16
    if a.is_float or b.is_float:  # fp8 with an int
        return a if a.is_float else b
    return None


def computation_type(a: ScalarType, a_weak: bool, b: ScalarType, b_weak: bool, div_or_mod: bool = False) -> ScalarType:
    """The type both operands of a binary op are converted to (Triton's ``computation_type_impl``)."""
    if a_weak != b_weak:
        scalar, tile = (a, b) if a_weak else (b, a)
        if _KIND_RANK[scalar.kind] <= _KIND_RANK[tile.kind]:
            if div_or_mod and tile.name in ("f16", "bf16"):
                return f32
            return tile
    floating = _float_type(a, b, div_or_mod)
    if floating is not None:
        return floating
    if div_or_mod and a.is_unsigned != b.is_unsigned and not (a.is_bool or b.is_bool):
        raise SemanticError(
            f"Cannot use /, //, or % with {a} and {b} because they have different signedness; "
            "cast them to the same signedness"
        )
    return integer_promote(a, b)
