"""Fold constants and simplify: small local rewrites that leave fewer, simpler ops.

Why: the frontend writes what the user wrote, constexprs substituted. Many ops then
compute values known at compile time (``BLOCK * 2``), or do nothing (``x + 0``,
``addptr(p, 0)``), or branch on a constant. Folding them here gives the later passes
and the backends less to look at and exposes more for CSE and LICM.

Each rule is a function ``rule(op) -> Value | list[Value] | None``: it returns early when
it does not apply, else the values that replace the op's results (inserting new ops just
before ``op`` if it needs any). The driver applies the rules in one walk over the
function, repeats until nothing changes, then erases the pure ops left unused.
Floats are only folded where the result is exactly what the target computes: never a
rewrite that changes a NaN or a signed zero (``x + 0.0`` stays: ``-0.0 + 0.0`` is ``+0.0``).

before:
    tt.func @k(%x: !ptr<f32>) {
      %0 = arith.constant {value = 64} : i32
      %1 = arith.constant {value = 2} : i32
      %2 = arith.mul %0, %1 : i32
      %3 = arith.constant {value = 0} : i32
      %4 = tt.addptr %x, %3 : !ptr<f32>
      %5 = tt.cast %2 : f32
      tt.store %4, %5 : !ptr<f32>
      tt.return
    }
after:
    tt.func @k(%x: !ptr<f32>) {
      %0 = arith.constant {value = 128.0} : f32
      tt.store %x, %0 : !ptr<f32>
      tt.return
    }
"""

from __future__ import annotations

from ..ir.core import Module, Op, Value
from ..ir.ops import (
    AddPtrOp,
    BinaryOp,
    BitcastOp,
    BroadcastOp,
    CastOp,
    CmpOp,
    ConstantOp,
    DotOp,
    ExpandDimsOp,
    ForOp,
    FuncOp,
    IfOp,
    ReshapeOp,
    SelectOp,
    SplatOp,
    TransOp,
    UnaryOp,
)
from ..ir.rewriter import Rewriter
from . import constant_math, dce, tracing
from .utils import walk_live

NAME = "canonicalize"

_MAX_SWEEPS = 16


# --------------------------------------------------------------------------- helpers


def _const(v: Value) -> ConstantOp | None:
    """The ConstantOp defining ``v`` (a scalar, or a tile with every element equal), if any."""
    op = v.defining_op
    return op if isinstance(op, ConstantOp) else None


def _is(v: Value, *values) -> bool:
    """Whether ``v`` is a constant equal to one of ``values`` (type-exact: ``-0.0`` is not ``0.0``)."""
    c = _const(v)
    if c is None or isinstance(c.value, bool):
        return False
    return any(c.value == x and str(float(c.value)) == str(float(x)) for x in values)


def _new_constant(op: Op, value, type) -> Value:
    """A ConstantOp of ``value`` and ``type`` inserted just before ``op``, at its location."""
    return Rewriter.insert_before(op, ConstantOp(value, type, loc=op.loc)).result


# --------------------------------------------------------------------------- folding


def fold_binary(op: BinaryOp) -> Value | None:
    """``c1 op c2 -> c`` for constants, computed as the target would."""
    a, b = (_const(v) for v in op.operands)
    if a is None or b is None:
        return None
    r = constant_math.binary(op.kind, a.value, b.value, op.result.type.scalar)
    return None if r is None else _new_constant(op, r, op.result.type)


def fold_unary(op: UnaryOp) -> Value | None:
    """``neg c``, ``not c``, ``abs c -> c'`` for constants."""
    a = _const(op.operands[0])
    if a is None or op.result.type != op.operands[0].type:
        return None
    r = constant_math.unary(op.kind, a.value, op.result.type.scalar)
    return None if r is None else _new_constant(op, r, op.result.type)


def fold_cmp(op: CmpOp) -> Value | None:
    """``c1 < c2 -> true/false`` for constants."""
    a, b = (_const(v) for v in op.operands)
    if a is None or b is None:
        return None
    r = constant_math.compare(op.predicate, a.value, b.value, op.operands[0].type.scalar)
    return _new_constant(op, r, op.result.type)


def fold_cast(op: CastOp) -> Value | None:
    """``cast(c) -> c'`` for constants (exact conversions only)."""
    a = _const(op.operands[0])
    src, dst = op.operands[0].type.element, op.result.type.element
    if a is None or not (src.is_scalar and dst.is_scalar):
        return None
    r = constant_math.cast(a.value, src, dst, op.attrs.get("rounding", "rtne"))
    return None if r is None else _new_constant(op, r, op.result.type)


def cast_to_same_type(op: Op) -> Value | None:
    """``cast(x) -> x`` and ``bitcast(x) -> x`` when the type does not change."""
    x = op.operands[0]
    return x if x.type == op.result.type else None


# --------------------------------------------------------------------------- algebra


def add_zero(op: BinaryOp) -> Value | None:
    """``x + 0 -> x`` (ints; for floats only ``x + -0.0``, since ``-0.0 + 0.0`` is ``+0.0``)."""
    if op.kind != "add":
        return None
    zero = (0,) if op.result.type.scalar.is_int else (-0.0,)
    a, b = op.operands
    if _is(b, *zero):
        return a
    return b if _is(a, *zero) else None


def sub_zero(op: BinaryOp) -> Value | None:
    """``x - 0 -> x`` (for floats ``x - 0.0``, which keeps ``-0.0`` and NaN)."""
    if op.kind != "sub":
        return None
    zero = 0 if op.result.type.scalar.is_int else 0.0
    return op.operands[0] if _is(op.operands[1], zero) else None


def mul_one(op: BinaryOp) -> Value | None:
    """``x * 1 -> x`` (exact for floats too, NaN and signed zeros included)."""
    if op.kind != "mul" or op.result.type.scalar.is_bool:
        return None
    a, b = op.operands
    if _is(b, 1):
        return a
    return b if _is(a, 1) else None


def mul_zero(op: BinaryOp) -> Value | None:
    """``x * 0 -> 0`` (ints only: for floats ``NaN * 0`` is NaN and ``-1.0 * 0`` is ``-0.0``)."""
    if op.kind != "mul" or not op.result.type.scalar.is_int:
        return None
    a, b = op.operands
    if _is(b, 0):
        return b
    return a if _is(a, 0) else None


def sub_self(op: BinaryOp) -> Value | None:
    """``x - x -> 0`` (ints only: ``inf - inf`` is NaN)."""
    if op.kind != "sub" or op.operands[0] is not op.operands[1] or not op.result.type.scalar.is_int:
        return None
    return _new_constant(op, 0, op.result.type)


def div_one(op: BinaryOp) -> Value | None:
    """``x / 1 -> x`` (integer ``div`` and float ``fdiv``)."""
    if op.kind not in ("div", "fdiv"):
        return None
    return op.operands[0] if _is(op.operands[1], 1) else None


def bitwise_identity(op: BinaryOp) -> Value | None:
    """``x | 0``, ``x ^ 0``, ``x << 0``, ``x >> 0 -> x``; ``x & x``, ``x | x -> x``."""
    a, b = op.operands
    if op.kind in ("or", "xor", "shl", "shr") and op.result.type.scalar.is_int and _is(b, 0):
        return a
    if op.kind in ("and", "or") and a is b:
        return a
    return None


def dot_accumulate(op: BinaryOp) -> Value | None:
    """``acc + dot(a, b, 0) -> dot(a, b, acc)`` where the dot has no other user.

    ``acc += tl.dot(a, b)`` is written as a dot into zeros, then an add. Accumulating in
    the dot itself is what the hardware does (mma adds into its accumulator registers):
    one tile of registers and one add per element fewer per iteration of a matmul loop.
    The sum is rounded in another order, as with Triton, which makes the same rewrite.
    """
    if op.kind != "add" or not op.result.type.is_tensor:
        return None
    for dot_value, acc in (op.operands, op.operands[::-1]):
        dot = dot_value.defining_op
        if isinstance(dot, DotOp) and _is(dot.operands[2], 0, 0.0) and acc.type == dot_value.type:
            if dot_value.has_one_use():
                new = DotOp(dot.operands[0], dot.operands[1], acc, loc=dot.loc, **dot.attrs)
                return Rewriter.insert_before(op, new).result
    return None


# --------------------------------------------------------------------------- shapes and pointers


def splat_constant(op: SplatOp) -> Value | None:
    """``splat(c) -> c`` as a tile constant."""
    c = _const(op.src)
    return None if c is None else _new_constant(op, c.value, op.result.type)


def reshape_constant(op: Op) -> Value | None:
    """``broadcast / expand_dims / reshape / trans`` of a tile constant -> a constant of the new shape."""
    c = _const(op.operands[0])
    return None if c is None else _new_constant(op, c.value, op.result.type)


def broadcast_splat(op: BroadcastOp) -> Value | None:
    """``broadcast(splat(x)) -> splat(x)`` straight to the final shape."""
    splat = op.src.defining_op
    if not isinstance(splat, SplatOp):
        return None
    return Rewriter.insert_before(op, SplatOp(splat.src, op.result.type, loc=op.loc)).result


def same_shape_noop(op: Op) -> Value | None:
    """``broadcast(x)`` or ``reshape(x)`` to its own type -> ``x``."""
    return cast_to_same_type(op)


def addptr_zero(op: AddPtrOp) -> Value | None:
    """``addptr(p, 0) -> p``."""
    return op.operands[0] if _is(op.operands[1], 0) else None


# --------------------------------------------------------------------------- selection and control flow


def select_constant_cond(op: SelectOp) -> Value | None:
    """``select(true, a, b) -> a``, ``select(false, a, b) -> b``; ``select(c, x, x) -> x``."""
    cond, a, b = op.operands
    if a is b:
        return a
    c = _const(cond)
    if c is None or a.type != op.result.type:
        return None
    return a if c.value else b


def if_constant_cond(op: IfOp) -> list[Value] | None:
    """``scf.if true {A} else {B} -> A`` (and ``false -> B``): the taken branch moves out."""
    c = _const(op.operands[0])
    if c is None:
        return None
    block = op.then_block if c.value else op.else_block
    if block.terminator is None:  # an else that was never written: no results, nothing to run
        return []
    return Rewriter.inline_block_before(block, op)


def for_zero_trips(op: ForOp) -> list[Value] | None:
    """``scf.for`` with constant bounds that runs zero times -> its initial values."""
    lb, ub, step = (_const(v) for v in op.operands[:3])
    if lb is None or ub is None or step is None:
        return None
    if not (step.value > 0 and lb.value >= ub.value):
        return None
    return list(op.init_args)


RULES: dict[type, list] = {
    BinaryOp: [fold_binary, add_zero, sub_zero, mul_one, mul_zero, sub_self, div_one, bitwise_identity, dot_accumulate],
    UnaryOp: [fold_unary],
    CmpOp: [fold_cmp],
    CastOp: [cast_to_same_type, fold_cast],
    BitcastOp: [cast_to_same_type],
    SplatOp: [splat_constant],
    BroadcastOp: [same_shape_noop, reshape_constant, broadcast_splat],
    ExpandDimsOp: [reshape_constant],
    ReshapeOp: [same_shape_noop, reshape_constant],
    TransOp: [reshape_constant],
    AddPtrOp: [addptr_zero],
    SelectOp: [select_constant_cond],
    IfOp: [if_constant_cond],
    ForOp: [for_zero_trips],
}


# --------------------------------------------------------------------------- driver


def _apply_rules(op: Op) -> list[Value] | None:
    """The first rule of ``op``'s class that fires: its replacement values (recorded when tracing)."""
    for rule in RULES.get(type(op), ()):
        new = rule(op)  # rules only add ops before ``op`` or move its regions' ops: its own line is intact
        if new is None:
            continue
        new = new if isinstance(new, list) else [new]
        tracing.fired(rule, op, new)
        return new
    return None


def _sweep(func: FuncOp) -> bool:
    """One walk over ``func`` applying the rules; True if any fired."""
    changed = False
    for op in walk_live(func.body):
        new = _apply_rules(op)
        if new is None:
            continue
        Rewriter.replace_op(op, new)
        changed = True
    return changed


def run(module: Module) -> bool:
    """Apply the rules to every function until none fires; drop the pure ops left unused."""
    changed = False
    for func in module.funcs:
        for _ in range(_MAX_SWEEPS):
            if not _sweep(func):
                break
            changed = True
    if changed:
        dce.erase_dead_ops(module, loads=False)
    return changed
