"""Lowering of elementwise ops: each is a scalar emitter mapped over tiles.

``map_elements`` applies a scalar emitter ``fn(*operand_elements) -> element`` to
scalar operands directly, or builds a lazy tile whose element ``i`` is ``fn`` of the
operands' elements ``i`` (fusion.py decides whether it later gets a buffer).

Integer division semantics (C, as Triton): ``div`` truncates toward zero, ``rem`` has
the dividend's sign. Division by zero does not trap: ``x // 0 == 0`` and ``x % 0 == 0``
(as numpy), and ``INT_MIN // -1`` wraps to ``INT_MIN``.
"""

from __future__ import annotations

from llvmlite import ir

from tilelab.compiler.ir.ops import BinaryOp, BitcastOp, CmpOp, FmaOp, SelectOp, UnaryOp

from .context import Tile, lower
from .types import F32, arith_type, from_arith, register_type, to_arith
from .vector_math import exp_f32


def map_elements(lw, op, fn, operands=None) -> None:
    """Define ``op``'s result as ``fn`` applied elementwise to ``operands`` (default: all)."""
    vals = [lw.get(v) for v in (op.operands if operands is None else operands)]
    rtype = op.result.type
    if not rtype.is_tensor:
        lw.set(op.result, fn(*vals))
        return

    def element(lin):
        return fn(*[lw.elem_at(v, lin) for v in vals])

    lw.set(op.result, Tile(rtype.shape, rtype.element, fn=element))


def intrinsic(lw, name: str, *args: ir.Value) -> ir.Value:
    """Call ``llvm.<name>.<type>`` (type from the first argument) on ``args``."""
    t = args[0].type
    suffix = {"float": "f32", "double": "f64", "half": "f16"}.get(str(t), str(t))
    fn = lw.function(f"llvm.{name}.{suffix}", t, [a.type for a in args])
    return lw.b.call(fn, list(args))


def libm(lw, name: str, *args: ir.Value) -> ir.Value:
    """Call the C math library's ``name`` (``namef`` for f32; f16 goes through f32)."""
    b = lw.b
    t = args[0].type
    if str(t) == "half":
        wide = [b.fpext(a, ir.FloatType()) for a in args]
        return b.fptrunc(libm(lw, name, *wide), t)
    sym = name + ("f" if str(t) == "float" else "")
    return b.call(lw.function(sym, t, [t] * len(args)), list(args))


# ------------------------------------------------------------------ binary

_FLOAT_BINARY = {
    "add": lambda lw, a, c: lw.b.fadd(a, c),
    "sub": lambda lw, a, c: lw.b.fsub(a, c),
    "mul": lambda lw, a, c: lw.b.fmul(a, c),
    "fdiv": lambda lw, a, c: lw.b.fdiv(a, c),
    "div": lambda lw, a, c: lw.b.fdiv(a, c),
    "rem": lambda lw, a, c: lw.b.frem(a, c),
    "min": lambda lw, a, c: intrinsic(lw, "minnum", a, c),
    "max": lambda lw, a, c: intrinsic(lw, "maxnum", a, c),
    "pow": lambda lw, a, c: intrinsic(lw, "pow", a, c),
    "atan2": lambda lw, a, c: libm(lw, "atan2", a, c),
}


def _int_div(lw, a, c, signed: bool, rem: bool):
    """Guarded integer division: no trap on zero (gives 0) nor on ``INT_MIN / -1``."""
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


def _int_binary(lw, kind: str, t, a, c):
    b, signed = lw.b, t.is_signed
    simple = {"add": b.add, "sub": b.sub, "mul": b.mul, "and": b.and_, "or": b.or_, "xor": b.xor, "shl": b.shl}
    if kind in simple:
        return simple[kind](a, c)
    if kind in ("div", "rem"):
        return _int_div(lw, a, c, signed, kind == "rem")
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


@lower(BinaryOp)
def lower_binary(lw, op):
    t = op.result.type.element
    if t.is_float:

        def emit(a, c):
            r = _FLOAT_BINARY[op.kind](lw, to_arith(lw, a, t), to_arith(lw, c, t))
            return from_arith(lw, r, t)
    else:

        def emit(a, c):
            return _int_binary(lw, op.kind, t, a, c)

    map_elements(lw, op, emit)


# ------------------------------------------------------------------ compare, select, fma

_ORDERED = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


@lower(CmpOp)
def lower_cmp(lw, op):
    t = op.operands[0].type.element
    pred = _ORDERED[op.predicate]

    def emit(a, c):
        b = lw.b
        if t.is_pointer:
            return b.icmp_unsigned(pred, b.ptrtoint(a, ir.IntType(64)), b.ptrtoint(c, ir.IntType(64)))
        if t.is_float:
            a, c = to_arith(lw, a, t), to_arith(lw, c, t)
            return b.fcmp_unordered(pred, a, c) if pred == "!=" else b.fcmp_ordered(pred, a, c)
        return (b.icmp_signed if t.is_signed else b.icmp_unsigned)(pred, a, c)

    map_elements(lw, op, emit)


@lower(SelectOp)
def lower_select(lw, op):
    map_elements(lw, op, lambda c, a, d: lw.b.select(c, a, d))


@lower(FmaOp)
def lower_fma(lw, op):
    t = op.result.type.element

    def emit(a, c, d):
        r = intrinsic(lw, "fma", *(to_arith(lw, x, t) for x in (a, c, d)))
        return from_arith(lw, r, t)

    map_elements(lw, op, emit)


@lower(BitcastOp)
def lower_bitcast(lw, op):
    target = register_type(op.result.type.element)
    map_elements(lw, op, lambda x: x if x.type == target else lw.b.bitcast(x, target))


# ------------------------------------------------------------------ unary

_INTRINSIC_UNARY = {
    "exp": "exp",
    "exp2": "exp2",
    "log": "log",
    "log2": "log2",
    "sqrt": "sqrt",
    "sqrt_rn": "sqrt",
    "sin": "sin",
    "cos": "cos",
    "floor": "floor",
    "ceil": "ceil",
    "trunc": "trunc",
    "round": "round",
    "abs": "fabs",
}
_LIBM_UNARY = ("log1p", "expm1", "tan", "tanh", "sinh", "cosh", "asin", "acos", "atan", "erf")


def _float_unary(lw, kind: str, x):
    b = lw.b
    if kind in ("exp", "exp2") and x.type == F32:
        return exp_f32(lw, x, base2=kind == "exp2")
    if kind in _INTRINSIC_UNARY:
        return intrinsic(lw, _INTRINSIC_UNARY[kind], x)
    if kind in _LIBM_UNARY:
        return libm(lw, kind, x)
    if kind == "neg":
        return b.fneg(x)
    if kind == "rsqrt":
        return b.fdiv(ir.Constant(x.type, 1.0), intrinsic(lw, "sqrt", x))
    raise NotImplementedError(f"float {kind}")


def _float_predicate(lw, kind: str, x):
    b = lw.b
    if kind == "isnan":
        return b.fcmp_unordered("uno", x, x)
    if kind == "isinf":
        return b.fcmp_ordered("==", intrinsic(lw, "fabs", x), ir.Constant(x.type, float("inf")))
    width = {"half": 16, "float": 32, "double": 64}[str(x.type)]
    return b.icmp_signed("<", b.bitcast(x, ir.IntType(width)), ir.Constant(ir.IntType(width), 0))


def _int_unary(lw, kind: str, t, x):
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
        return b.call(
            lw.function(f"llvm.ctlz.{x.type}", x.type, [x.type, ir.IntType(1)]), [x, ir.Constant(ir.IntType(1), 0)]
        )
    raise NotImplementedError(f"integer {kind}")


@lower(UnaryOp)
def lower_unary(lw, op):
    t = op.operands[0].type.element
    rt = op.result.type.element
    kind = op.kind

    def emit(x):
        if not t.is_float:
            return _int_unary(lw, kind, t, x)
        xa = to_arith(lw, x, t)
        if kind in ("isnan", "isinf", "signbit"):
            return _float_predicate(lw, kind, xa)
        return from_arith(lw, _float_unary(lw, kind, xa), rt)

    map_elements(lw, op, emit)


def arith_constant(t, value) -> ir.Constant:
    """An LLVM constant of IR scalar type ``t`` (bf16 and fp8 as their rounded bits)."""
    if t.name in ("bf16", "fp8e4nv", "fp8e5"):
        import numpy as np

        bits = np.array(value, dtype=np.float32).astype(t.np_dtype).view(f"u{t.itemsize}")
        return ir.Constant(ir.IntType(t.bits), int(bits))
    lt = register_type(t)
    if t.is_float:
        return ir.Constant(lt, float(value))
    bits = lt.width
    return ir.Constant(lt, int(value) & ((1 << bits) - 1))


__all__ = ["map_elements", "arith_constant", "arith_type"]
