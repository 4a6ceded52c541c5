"""Elementwise ops: arithmetic, math functions, comparisons, select, casts.

Each op maps numpy ufuncs over whole tiles. The semantics are those the IR states:
integer ``div`` truncates toward zero and ``rem`` takes the dividend's sign (C, as
Triton); ``shr`` is arithmetic for signed types, logical for unsigned; float ``min`` /
``max`` return the non-NaN operand; math functions of f16 / bf16 / fp8 run in f32 and
round back once. Integer division by zero gives 0 rather than a crash (the GPU result
is undefined). Booleans are ``i1`` integers that wrap modulo 2, as in Triton (whose
``c + c`` is an ``i1`` add): ``add`` and ``sub`` are ``xor``, ``mul`` is ``and``, and
``-c`` is ``c`` (``0 - c`` modulo 2), where numpy would take ``+`` for ``or`` and refuse
``-``.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir.ops import BinaryOp, BitcastOp, CastOp, CmpOp, FmaOp, HintOp, InlineAsmOp, SelectOp, UnaryOp
from .numeric import cast, compute_dtype, dtype_of, is_float, unsigned_dtype
from .registry import handles


def _int_div(a, b):
    """C division: the quotient truncated toward zero."""
    if np.asarray(a).dtype.kind == "u":
        return np.floor_divide(a, b)
    r = np.fmod(a, b)
    return np.floor_divide(a - r, b)


def _umulhi(a, b):
    """The high half of the unsigned product of two same-width integers."""
    a, b = np.asarray(a), np.asarray(b)
    bits = a.dtype.itemsize * 8
    ua, ub = a.view(unsigned_dtype(bits)), b.view(unsigned_dtype(bits))
    if bits < 64:
        wide = ua.astype(np.uint64) * ub.astype(np.uint64)
        return (wide >> np.uint64(bits)).astype(ua.dtype).view(a.dtype)
    half, low = np.uint64(32), np.uint64(0xFFFFFFFF)
    ah, al, bh, bl = ua >> half, ua & low, ub >> half, ub & low
    hi_lo, lo_hi = ah * bl, al * bh
    cross = ((al * bl) >> half) + (hi_lo & low) + lo_hi
    return (ah * bh + (hi_lo >> half) + (cross >> half)).view(a.dtype)


def _shift_amount(b, a):
    return np.asarray(b).astype(np.asarray(a).dtype)


_INT_BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": _int_div,
    "rem": np.fmod,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
    "shl": lambda a, b: np.left_shift(a, _shift_amount(b, a)),
    "shr": lambda a, b: np.right_shift(a, _shift_amount(b, a)),
    "min": np.minimum,
    "max": np.maximum,
    "umulhi": _umulhi,
}

#: ``i1`` arithmetic modulo 2 (numpy's bool ``+`` is ``or``, its ``-`` an error)
_BOOL_BINARY = {"add": np.logical_xor, "sub": np.logical_xor, "mul": np.logical_and}


def _signed_zero_pick(result, a, b, negative_if):
    """``min`` / ``max`` of two zeros as IEEE 754-2019 orders them (-0.0 < +0.0); numpy returns the first."""
    zeros = (a == 0) & (b == 0)
    if not np.any(zeros):
        return result
    negative = negative_if(np.signbit(a), np.signbit(b))
    return np.where(zeros, np.where(negative, -np.zeros_like(result), np.zeros_like(result)), result)


def _number_max(a, b):
    """IEEE 754-2019 maximumNumber: the non-NaN operand when one is NaN, a signaling NaN too (numpy's
    ``fmax``, C's ``fmax``, returns NaN for a signaling one, as 754-2008's maxNum did; the CPU's and
    GPU's instructions return the number); -0.0 < +0.0."""
    return _signed_zero_pick(_non_nan(a, b, np.maximum(a, b)), a, b, np.logical_and)


def _number_min(a, b):
    """IEEE 754-2019 minimumNumber: as ``_number_max``."""
    return _signed_zero_pick(_non_nan(a, b, np.minimum(a, b)), a, b, np.logical_or)


def _non_nan(a, b, both):
    """``both`` where neither operand is NaN, else the other operand (NaN only where both are)."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isnan(a), b, np.where(np.isnan(b), a, both))


_FLOAT_BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "fdiv": np.divide,
    "rem": np.fmod,
    "min": _number_min,
    "max": _number_max,
}

#: Float binaries computed in f32 (or f64) and rounded back once.
_FLOAT_MATH_BINARY = {"pow": np.power, "atan2": np.arctan2, "copysign": np.copysign, "hypot": np.hypot}


@handles(BinaryOp)
def binary(it, op, a, b):
    kind = op.attrs["kind"]
    if not is_float(op.operands[0].type):
        if it.sanitize and kind in ("div", "rem") and not np.all(b):
            raise it.error(op, f"integer division by zero in program {it.pid}")
        if np.asarray(a).dtype == np.bool_ and kind in _BOOL_BINARY:
            return _BOOL_BINARY[kind](a, b)
        return _INT_BINARY[kind](a, b)
    fn = _FLOAT_BINARY.get(kind)
    if fn is not None:
        return fn(a, b)
    wide = compute_dtype(op.operands[0].type)
    out = _FLOAT_MATH_BINARY[kind](np.asarray(a).astype(wide), np.asarray(b).astype(wide))
    return out.astype(dtype_of(op.results[0].type))


def _round_half_away(x):
    t = np.trunc(x)
    return t + np.where(np.abs(x - t) >= 0.5, np.sign(x), 0).astype(x.dtype)


_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])

_FLOAT_UNARY = {
    "neg": np.negative,
    "abs": np.abs,
    "exp": np.exp,
    "exp2": np.exp2,
    "log": np.log,
    "log2": np.log2,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "sqrt": np.sqrt,
    "sqrt_rn": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "tanh": np.tanh,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "erf": lambda x: _erf(x).astype(x.dtype),
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "round": _round_half_away,
    "rint": np.rint,
    "log10": np.log10,
    "cbrt": np.cbrt,
    "erfc": lambda x: _erfc(x).astype(x.dtype),
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "signbit": np.signbit,
}


def _popcount(u):
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(u)
    bytes_ = np.ascontiguousarray(u).view(np.uint8).reshape(*np.shape(u), -1)
    return np.unpackbits(bytes_, axis=-1).sum(axis=-1)


def _clz(u):
    """Leading zero bits of unsigned ``u``: width minus the bit length."""
    bits = u.dtype.itemsize * 8
    v = u.astype(np.uint64)
    length = np.zeros(np.shape(u), np.int64)
    for step in (32, 16, 8, 4, 2, 1):
        big = v >= np.uint64(1 << step)
        length += np.where(big, step, 0)
        v = np.where(big, v >> np.uint64(step), v)
    return bits - (length + (v > 0))


_INT_UNARY = {
    "neg": np.negative,
    "not": np.invert,
    "abs": np.abs,
    "popc": lambda x: _popcount(x.view(unsigned_dtype(x.dtype.itemsize * 8))),
    "clz": lambda x: _clz(x.view(unsigned_dtype(x.dtype.itemsize * 8))),
}


@handles(UnaryOp)
def unary(it, op, x):
    kind = op.attrs["kind"]
    out_dtype = dtype_of(op.results[0].type)
    x = np.asarray(x)
    if is_float(op.operands[0].type):
        wide = compute_dtype(op.operands[0].type)
        return np.asarray(_FLOAT_UNARY[kind](x.astype(wide))).astype(out_dtype)
    if x.dtype == np.bool_ and kind in ("not", "neg", "abs"):
        return ~x if kind == "not" else x.copy()  # -c == 0 - c == c modulo 2
    return np.asarray(_INT_UNARY[kind](x)).astype(out_dtype)


_CMP = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


@handles(CmpOp)
def compare(it, op, a, b):
    return _CMP[op.attrs["predicate"]](a, b)


@handles(SelectOp)
def select(it, op, cond, a, b):
    return np.where(cond, a, b)


@handles(FmaOp)
def fma(it, op, a, b, c):
    """``a * b + c``: the product is exact in f64 for f32 and narrower inputs."""
    wide = [np.asarray(v).astype(np.float64) for v in (a, b, c)]
    return (wide[0] * wide[1] + wide[2]).astype(dtype_of(op.results[0].type))


@handles(CastOp)
def cast_op(it, op, x):
    return cast(x, op.operands[0].type, op.results[0].type, op.attrs.get("rounding", "rtne"))


@handles(BitcastOp)
def bitcast(it, op, x):
    return np.asarray(x).view(dtype_of(op.results[0].type))


@handles(HintOp)
def hint(it, op, x):
    return x


@handles(InlineAsmOp)
def inline_asm(it, op, *args):
    """The interpreter runs no assembly (nor does Triton's): the kernel's line is named."""
    raise it.error(op, "inline_asm_elementwise runs the GPU's assembly: the interpreter cannot execute it")
