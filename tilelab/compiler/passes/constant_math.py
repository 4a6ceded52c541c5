"""Scalar arithmetic exactly as the targets compute it, for constant folding.

Integers wrap to their width (two's complement), divide toward zero and take the
remainder's sign from the dividend; floats round once to their format (numpy and
ml_dtypes compute f16/bf16 in f32 and round back, which is exact for + - * /).
Every function returns ``None`` when it cannot fold safely (division by zero, shifts
past the width, fp8, out-of-range conversions): the op then stays for run time.

    >>> binary("add", 127, 1, i8)
    -128
    >>> binary("div", -7, 2, i32)
    -3
"""

from __future__ import annotations

import numpy as np

from ..ir.types import ScalarType

_FLOATS = ("f16", "bf16", "f32", "f64")  # fp8 has no arithmetic of its own: never folded


def wrap(x: int, t: ScalarType):
    """``x`` reduced to the width and signedness of integer type ``t`` (bools give ``bool``)."""
    x = int(x) & ((1 << t.bits) - 1)
    if t.is_bool:
        return bool(x)
    if t.is_signed and x >= 1 << (t.bits - 1):
        x -= 1 << t.bits
    return x


def _int_binary(kind: str, a: int, b: int, t: ScalarType):
    if kind in ("div", "rem"):
        if b == 0:
            return None
        q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
        return q if kind == "div" else a - b * q
    if kind in ("shl", "shr"):
        if not 0 <= b < t.bits:
            return None
        return a << b if kind == "shl" else a >> b  # a is already signed or unsigned, as t says
    table = {
        "add": lambda: a + b,
        "sub": lambda: a - b,
        "mul": lambda: a * b,
        "and": lambda: a & b,
        "or": lambda: a | b,
        "xor": lambda: a ^ b,
        "min": lambda: min(a, b),
        "max": lambda: max(a, b),
    }
    return table[kind]() if kind in table else None


def binary(kind: str, a, b, t: ScalarType):
    """``a kind b`` in type ``t``, or ``None`` when it must not be folded."""
    if t.is_int:
        r = _int_binary(kind, wrap(a, t), wrap(b, t), t)
        return None if r is None else wrap(r, t)
    if t.name not in _FLOATS:
        return None
    ops = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "fdiv": np.divide}
    if kind not in ops:
        return None  # min/max/pow/...: signed zeros and NaN rules differ between targets
    # bf16 arithmetic is f32 arithmetic rounded once more, as ml_dtypes and the GPU do it.
    work = np.float32 if t.name == "bf16" else t.np_dtype
    with np.errstate(all="ignore"):
        x, y = np.asarray(t.rounded(a), dtype=work), np.asarray(t.rounded(b), dtype=work)
        return t.rounded(float(ops[kind](x, y)))


def unary(kind: str, a, t: ScalarType):
    """``kind(a)`` for the exact unary ops (neg, not, abs), or ``None``."""
    if t.is_int:
        if t.is_bool and kind == "not":
            return not a
        table = {"neg": lambda x: -x, "not": lambda x: ~x, "abs": abs}
        return wrap(table[kind](wrap(a, t)), t) if kind in table else None
    if t.name in _FLOATS and kind in ("neg", "abs"):
        return -float(a) if kind == "neg" else abs(float(a))
    return None


def compare(predicate: str, a, b, t: ScalarType) -> bool:
    """``a predicate b``: ordered compares (``ne`` is unordered: NaN != x holds)."""
    if t.is_int:
        a, b = wrap(a, t), wrap(b, t)
    table = {
        "eq": lambda: a == b,
        "ne": lambda: a != b,
        "lt": lambda: a < b,
        "le": lambda: a <= b,
        "gt": lambda: a > b,
        "ge": lambda: a >= b,
    }
    return bool(table[predicate]())


def cast(a, src: ScalarType, dst: ScalarType, rounding: str = "rtne"):
    """``a`` converted from ``src`` to ``dst``, or ``None`` (fp8, rtz, out-of-range float->int)."""
    if not (src.is_int or src.name in _FLOATS) or not (dst.is_int or dst.name in _FLOATS):
        return None
    if dst.is_bool:
        return a != 0
    if src.is_int:
        a = int(wrap(a, src))
        if dst.is_int:
            return wrap(a, dst)
        return dst.rounded(float(a)) if abs(a) <= 2**53 else None
    if dst.is_int:
        return _float_to_int(float(a), dst)
    if rounding != "rtne" and dst.bits < src.bits:
        return None
    return dst.rounded(float(a))


def _float_to_int(a: float, dst: ScalarType):
    """Truncation toward zero; ``None`` when the result does not fit (undefined on the targets)."""
    if not np.isfinite(a):
        return None
    r = int(a)
    lo, hi = (-(1 << (dst.bits - 1)), (1 << (dst.bits - 1)) - 1) if dst.is_signed else (0, (1 << dst.bits) - 1)
    return r if lo <= r <= hi else None
