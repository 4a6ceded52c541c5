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

from tilelab.compiler.ir.ops import BinaryOp, BitcastOp, CmpOp, FmaOp, InlineAsmOp, SelectOp, UnaryOp
from tilelab.errors import CompilationError

from ..common.scalars import arith_constant, float_min_max, from_arith, intrinsic, to_arith
from ..common.scalars import float_predicate as _float_predicate
from ..common.scalars import int_binary as _int_binary
from ..common.scalars import int_unary as _int_unary
from ..common.types import F32, arith_type, register_type
from .context import Tile, lower
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
    # IEEE 754-2019 minimumNumber / maximumNumber: the non-NaN operand, and -0.0 < +0.0 (``minnum``
    # may return either zero, and x86 returns the second: the targets disagreed on max(0.0, -0.0))
    "min": lambda lw, a, c: float_min_max(lw.b, "min", a, c),
    "max": lambda lw, a, c: float_min_max(lw.b, "max", a, c),
    "pow": lambda lw, a, c: intrinsic(lw, "pow", a, c),
    "atan2": lambda lw, a, c: libm(lw, "atan2", a, c),
    "hypot": lambda lw, a, c: libm(lw, "hypot", a, c),
    "copysign": lambda lw, a, c: intrinsic(lw, "copysign", a, c),
}


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
        args = [to_arith(lw, x, t) for x in (a, c, d)]
        if str(args[0].type) == "half":  # llvm.fma.f16 is a call to a helper the JIT does not link
            wide = intrinsic(lw, "fma", *(lw.b.fpext(x, F32) for x in args))
            return lw.b.fptrunc(wide, args[0].type)  # the f16 product is exact in f32
        r = intrinsic(lw, "fma", *args)
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
    "rint": "rint",
    "log10": "log10",
    "abs": "fabs",
}
_LIBM_UNARY = ("log1p", "expm1", "tan", "tanh", "sinh", "cosh", "asin", "acos", "atan", "erf")
_LIBM_UNARY += ("erfc", "cbrt", "asinh", "acosh", "atanh")


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
    if kind == "rsqrt":  # f16 in f32, rounded once (two f16 roundings disagreed with the interpreter)
        wide = b.fpext(x, F32) if str(x.type) == "half" else x
        r = b.fdiv(ir.Constant(wide.type, 1.0), intrinsic(lw, "sqrt", wide))
        return b.fptrunc(r, x.type) if wide is not x else r
    raise NotImplementedError(f"float {kind}")


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


__all__ = ["map_elements", "arith_constant", "arith_type", "intrinsic"]


@lower(InlineAsmOp)
def lower_inline_asm(lw, op):
    """The CPU runs no PTX: the kernel's line is named, as for any op a target cannot run."""
    raise CompilationError.at(
        op.loc, "inline_asm_elementwise runs the GPU's assembly: only the 'cuda' target can compile it"
    )
