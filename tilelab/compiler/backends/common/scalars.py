"""Scalar emitters for integer and float arithmetic, shared by every LLVM backend.

Integer division follows C (as Triton): ``div`` truncates toward zero, ``rem`` has the
dividend's sign. It never traps: ``x // 0 == 0`` and ``x % 0 == 0`` (as numpy), and
``INT_MIN // -1`` wraps to ``INT_MIN``. bf16 and fp8 values are raw bits; float
arithmetic on them runs in f32 between ``to_arith`` and ``from_arith``::

    r = from_arith(lw, lw.b.fadd(to_arith(lw, a, bf16), to_arith(lw, c, bf16)), bf16)
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from ..common.types import f32_to_soft, is_soft_float, register_type, soft_to_f32


def intrinsic(lw, name: str, *args: ir.Value) -> ir.Value:
    """Call ``llvm.<name>.<type>`` (type from the first argument) on ``args``: ``intrinsic(lw, "fabs", x)``."""
    t = args[0].type
    suffix = {"float": "f32", "double": "f64", "half": "f16"}.get(str(t), str(t))
    fn = lw.function(f"llvm.{name}.{suffix}", t, [a.type for a in args])
    return lw.b.call(fn, list(args))


def to_arith(lw, x: ir.Value, t) -> ir.Value:
    """A value ready for float arithmetic: bf16 / fp8 bits become f32; others pass through."""
    return soft_to_f32(lw, x, t) if is_soft_float(t) else x


def from_arith(lw, x: ir.Value, t) -> ir.Value:
    """The inverse of ``to_arith``: f32 results of bf16 / fp8 arithmetic are rounded back."""
    return f32_to_soft(lw, x, t) if is_soft_float(t) else x


def int_div(lw, a: ir.Value, c: ir.Value, signed: bool, rem: bool) -> ir.Value:
    """Guarded integer division or remainder: no trap on zero (gives 0) nor on ``INT_MIN / -1``."""
    b = lw.b
    zero, one = ir.Constant(a.type, 0), ir.Constant(a.type, 1)
    bad = b.icmp_unsigned("==", c, zero)
    if signed:
        minus1 = b.icmp_signed("==", c, ir.Constant(a.type, -1))
        safe = b.select(b.or_(bad, minus1), one, c)
        q = b.srem(a, safe) if rem else b.sdiv(a, safe)
        q = b.select(minus1, zero if rem else b.neg(a), q)
    else:
        safe = b.select(bad, one, c)
        q = b.urem(a, safe) if rem else b.udiv(a, safe)
    return b.select(bad, zero, q)


def int_binary(lw, kind: str, t, a: ir.Value, c: ir.Value) -> ir.Value:
    """``a <kind> c`` for integers of IR type ``t`` (signedness picks sdiv/udiv, ashr/lshr, min/max)."""
    b, signed = lw.b, t.is_signed
    simple = {"add": b.add, "sub": b.sub, "mul": b.mul, "and": b.and_, "or": b.or_, "xor": b.xor, "shl": b.shl}
    if kind in simple:
        return simple[kind](a, c)
    if kind in ("div", "rem"):
        return int_div(lw, a, c, signed, kind == "rem")
    if kind == "shr":
        return b.ashr(a, c) if signed else b.lshr(a, c)
    if kind in ("min", "max"):
        cmp = b.icmp_signed if signed else b.icmp_unsigned
        return b.select(cmp("<" if kind == "min" else ">", a, c), a, c)
    if kind == "umulhi":
        wide = ir.IntType(a.type.width * 2)
        prod = b.mul(b.zext(a, wide), b.zext(c, wide))  # the unsigned product, as the interpreter
        return b.trunc(b.lshr(prod, ir.Constant(wide, a.type.width)), a.type)
    raise NotImplementedError(f"integer {kind}")


def int_unary(lw, kind: str, t, x: ir.Value) -> ir.Value:
    """``neg``, ``not``, ``abs``, ``popc`` or ``clz`` of an integer of IR type ``t``."""
    b = lw.b
    if kind == "neg":
        return b.neg(x)
    if kind == "not":
        return b.not_(x)
    if kind == "abs":
        return b.select(b.icmp_signed("<", x, ir.Constant(x.type, 0)), b.neg(x), x) if t.is_signed else x
    if kind == "popc":
        return intrinsic(lw, "ctpop", x)
    if kind == "clz":
        ctlz = lw.function(f"llvm.ctlz.{x.type}", x.type, [x.type, ir.IntType(1)])
        return b.call(ctlz, [x, ir.Constant(ir.IntType(1), 0)])
    raise NotImplementedError(f"integer {kind}")


def float_min_max(b: ir.IRBuilder, kind: str, a: ir.Value, c: ir.Value) -> ir.Value:
    """IEEE 754-2019 ``minimumNumber`` / ``maximumNumber`` of floats or float vectors, by compares.

    The non-NaN operand wins over a NaN, and ``-0.0 < +0.0``. Written out instead of LLVM's
    ``llvm.minimumnum``: on a CPU with AVX-512 (an Emerald Rapids host) its lowering returned NaN
    for ``minimum(x, nan)`` where the interpreter and the GPU give ``x`` (the fuzzer's seeds 600756,
    618517, 626206); compares and selects lower the same on every CPU.

        min(1.0, nan) = 1.0     min(-0.0, 0.0) = -0.0     max(-0.0, 0.0) = 0.0
    """
    keep_a = b.fcmp_ordered("<" if kind == "min" else ">", a, c)
    r = b.select(keep_a, a, c)
    r = b.select(b.fcmp_unordered("uno", c, c), a, r)  # c is NaN: a (NaN too when both are)
    elem = a.type.element if isinstance(a.type, ir.VectorType) else a.type
    bits = ir.IntType({"half": 16, "bfloat": 16, "float": 32, "double": 64}[str(elem)])
    if isinstance(a.type, ir.VectorType):
        bits = ir.VectorType(bits, a.type.count)
    ai, ci = b.bitcast(a, bits), b.bitcast(c, bits)
    zeros = b.bitcast(b.or_(ai, ci) if kind == "min" else b.and_(ai, ci), a.type)  # equal: only +-0 differ
    return b.select(b.fcmp_ordered("==", a, c), zeros, r)


def float_predicate(lw, kind: str, x: ir.Value) -> ir.Value:
    """``isnan``, ``isinf`` or ``signbit`` of a float (an ``i1``); ``signbit(-0.0)`` is true."""
    b = lw.b
    if kind == "isnan":
        return b.fcmp_unordered("uno", x, x)
    if kind == "isinf":
        return b.fcmp_ordered("==", intrinsic(lw, "fabs", x), ir.Constant(x.type, float("inf")))
    width = {"half": 16, "float": 32, "double": 64}[str(x.type)]
    return b.icmp_signed("<", b.bitcast(x, ir.IntType(width)), ir.Constant(ir.IntType(width), 0))


def _rounded(value, dtype) -> float:
    """``value`` rounded to ``dtype`` as a conversion on the GPU would: too large becomes +-inf, not an error.

    llvmlite packs an f16 / f32 constant with ``struct``, which raises ``OverflowError`` for a
    value beyond the type's range (``x_f16 * 1e30``); numpy rounds it to infinity instead.
    """
    with np.errstate(over="ignore"):
        return float(np.asarray(value, dtype=np.float64).astype(dtype))


def arith_constant(t, value) -> ir.Constant:
    """An LLVM constant of IR scalar type ``t`` (bf16 and fp8 as their rounded bits): ``arith_constant(f32, 1.5)``."""
    if t.is_narrow_float:  # through f32 first, as a conversion from f32 rounds
        with np.errstate(over="ignore"):
            return ir.Constant(ir.IntType(t.bits), t.float_bits(float(np.float32(value))))
    lt = register_type(t)
    if t.is_float:
        return ir.Constant(lt, float(_rounded(value, t.np_dtype)))
    return ir.Constant(lt, int(value) & ((1 << lt.width) - 1))


__all__ = [
    "arith_constant",
    "float_predicate",
    "from_arith",
    "int_binary",
    "int_div",
    "int_unary",
    "intrinsic",
    "to_arith",
]


def soft_float_add(lw, p: ir.Value, val: ir.Value, elem, bits: ir.Type, ordering: str) -> ir.Value:
    """An atomic float add on a type held as raw bits (bf16), which LLVM's ``atomicrmw fadd`` takes only on its
    own float types: a compare-and-swap loop on the ``bits``-wide word at ``p``, each sum computed in f32 and
    rounded back (as the interpreter computes it). Gives the bits it replaced. (16-bit floats take no other
    atomic: the frontend refuses them, as Triton does.)"""
    b = lw.b
    pre = b.block
    loop, done = b.append_basic_block("soft_add"), b.append_basic_block("soft_add.done")
    first = b.load(p, typ=bits)
    b.branch(loop)
    b.position_at_end(loop)
    old = b.phi(bits)
    old.add_incoming(first, pre)
    new = from_arith(lw, b.fadd(to_arith(lw, old, elem), to_arith(lw, val, elem)), elem)
    failure = {"acq_rel": "acquire", "release": "monotonic"}.get(ordering, ordering)  # a failed exchange reads only
    pair = b.cmpxchg(p, old, new, ordering, failure)
    seen = b.extract_value(pair, 0)
    old.add_incoming(seen, b.block)
    b.cbranch(b.extract_value(pair, 1), done, loop)
    b.position_at_end(done)
    return seen
