"""Lowering of structured control flow, printing and assertions.

Loop-carried and branch-result values live in *slots*: one stack buffer per value
(a one-element buffer for a scalar, which LLVM promotes back to a register). A
``yield`` writes its values into the slots in two phases -- first each value that
could read a slot is copied aside, then all are written -- so ``a, b = b, a`` in a
loop body swaps correctly. The body reads its arguments straight from the slots.

    scf.for %i = %lb to %ub step %s iter_args(%acc = %init)
    ->  slot = %init; for (i = lb; s > 0 ? i < ub : i > ub; i += s) { body; slot = yielded }

``device_print`` hands each value's buffer to the runtime's report callback, which
formats it with numpy; ``device_assert`` checks each element and, on the first
false one, reports it and ends the program with status 1.
"""

from __future__ import annotations

from llvmlite import ir

from tilelab.compiler.ir.ops import (
    AssertOp,
    BarrierOp,
    ConditionOp,
    ForOp,
    IfOp,
    PrintOp,
    ReduceReturnOp,
    ReturnOp,
    WhileOp,
    YieldOp,
)

from ..common.types import I1, I64
from . import interrupt
from .context import REPORT_ASSERT, REPORT_PRINT, REPORT_ZERO_STEP, Tile, i64, lower, report


def make_slots(lw, values) -> list:
    """One buffer per IR value (its element count; 1 for scalars)."""
    return [lw.alloca(v.type.element, v.type.numel) for v in values]


def read_slots(lw, slots, values) -> list:
    """The lowered values held by ``slots`` (tiles read the slot buffer in place)."""
    out = []
    for slot, v in zip(slots, values):
        t = v.type
        out.append(Tile(t.shape, t.element, buf=slot) if t.is_tensor else lw.load_elem(slot, t.element, i64(0)))
    return out


def write_slots(lw, slots, ir_values, lowered) -> None:
    """Write ``lowered`` values into ``slots``: copy anything that may read a slot aside first."""
    staged = []
    slot_set = {id(s) for s in slots}
    for x in lowered:
        if isinstance(x, Tile) and (x.buf is None or id(x.buf) in slot_set):
            x = lw.materialize(x)
        staged.append(x)
    for slot, v, x in zip(slots, ir_values, staged):
        if isinstance(x, Tile):
            lw.copy_into(x, slot)
        else:
            lw.store_elem(slot, v.type.element, i64(0), x)


def lower_body(lw, block, arg_values) -> list:
    """Lower a region's block with its arguments bound; returns its terminator's operands."""
    for arg, x in zip(block.args, arg_values):
        lw.values[arg] = x
    for op in block.ops[:-1] if block.terminator else block.ops:
        lw.lower_op(op)
    term = block.terminator
    return [lw.get(v) for v in term.operands] if term is not None else []


@lower(ForOp)
def lower_for(lw, op):
    b = lw.b
    lb, ub, step = (lw.get(v) for v in op.operands[:3])
    inits = op.init_args
    slots = make_slots(lw, inits)
    write_slots(lw, slots, inits, [lw.get(v) for v in inits])
    signed = op.operands[0].type.is_signed
    _fail_on_zero_step(lw, op, step)
    pre = b.block
    head, body, done = (b.append_basic_block(n) for n in ("for.head", "for.body", "for.end"))
    b.branch(head)
    b.position_at_end(head)
    iv = b.phi(lb.type)
    iv.add_incoming(lb, pre)
    cmp = b.icmp_signed if signed else b.icmp_unsigned
    zero = ir.Constant(step.type, 0)
    going_up = b.icmp_signed(">", step, zero)
    more = b.select(going_up, cmp("<", iv, ub), cmp(">", iv, ub))
    b.cbranch(more, body, done)
    b.position_at_end(body)
    yielded = lower_body(lw, op.body, [iv, *read_slots(lw, slots, inits)])
    write_slots(lw, slots, op.body.terminator.operands, yielded)
    iv.add_incoming(b.add(iv, step), b.block)
    b.branch(head)
    b.position_at_end(done)
    for r, x in zip(op.results, read_slots(lw, slots, op.results)):
        lw.values[r] = x


def _fail_on_zero_step(lw, op, step) -> None:
    """A step of 0 would loop forever: report it and end the program instead."""
    b = lw.b
    if isinstance(step, ir.Constant) and step.constant != 0:
        return
    bad = b.append_basic_block("for.zero_step")
    ok = b.append_basic_block("for.start")
    b.cbranch(b.icmp_signed("==", step, ir.Constant(step.type, 0)), bad, ok)
    b.position_at_end(bad)
    report(lw, REPORT_ZERO_STEP, op, i64(0))
    b.branch(lw.fail())
    b.position_at_end(ok)


@lower(IfOp)
def lower_if(lw, op):
    b = lw.b
    cond = lw.get(op.operands[0])
    slots = make_slots(lw, op.results)
    with b.if_else(cond) as (then, otherwise):
        for branch, block in ((then, op.then_block), (otherwise, op.else_block)):
            with branch:
                yielded = lower_body(lw, block, [])
                write_slots(lw, slots, block.terminator.operands if block.terminator else [], yielded)
    for r, x in zip(op.results, read_slots(lw, slots, op.results)):
        lw.values[r] = x


@lower(WhileOp)
def lower_while(lw, op):
    b = lw.b
    before_slots = make_slots(lw, op.operands)
    after_slots = make_slots(lw, op.after.args)
    write_slots(lw, before_slots, op.operands, [lw.get(v) for v in op.operands])
    head, body, done = (b.append_basic_block(n) for n in ("while.head", "while.body", "while.end"))
    b.branch(head)
    b.position_at_end(head)
    with b.if_then(interrupt.stop_requested(b), likely=False):  # Ctrl-C stops an endless loop
        b.ret(ir.Constant(ir.IntType(32), interrupt.STATUS_STOPPED))
    cond, *forwarded = lower_body(lw, op.before, read_slots(lw, before_slots, op.before.args))
    write_slots(lw, after_slots, op.before.terminator.operands[1:], forwarded)
    b.cbranch(cond, body, done)
    b.position_at_end(body)
    yielded = lower_body(lw, op.after, read_slots(lw, after_slots, op.after.args))
    write_slots(lw, before_slots, op.after.terminator.operands, yielded)
    b.branch(head)
    b.position_at_end(done)
    for r, x in zip(op.results, read_slots(lw, after_slots, op.results)):
        lw.values[r] = x


@lower(YieldOp, ConditionOp, ReduceReturnOp)
def lower_terminator(lw, op):
    raise AssertionError(f"{op.name} is lowered by its parent op")


@lower(ReturnOp)
def lower_return(lw, op):
    lw.b.ret(ir.Constant(ir.IntType(32), 0))


@lower(BarrierOp)
def lower_barrier(lw, op):
    """One thread runs a whole program: a barrier has nothing to wait for."""


@lower(PrintOp)
def lower_print(lw, op):
    for k, v in enumerate(op.operands):
        x = lw.get(v)
        if isinstance(x, Tile):
            buf = x.buf if x.buf is not None else lw.materialize(x).buf
        else:
            buf = lw.alloca(v.type.element, 1)
            lw.store_elem(buf, v.type.element, i64(0), x)
        report(lw, REPORT_PRINT, op, i64(k), data=buf, n=i64(v.type.numel))
    if not op.operands:
        report(lw, REPORT_PRINT, op, i64(-1))


@lower(AssertOp)
def lower_assert(lw, op):
    b = lw.b
    cond = lw.get(op.operands[0])
    t = op.operands[0].type

    def check(lin):
        c = lw.elem_at(cond, lin)
        if c.type != I1:
            c = b.icmp_unsigned("!=", c, ir.Constant(c.type, 0))
        bad = b.append_basic_block("assert.fail")
        ok = b.append_basic_block("assert.ok")
        b.cbranch(c, ok, bad)
        b.position_at_end(bad)
        report(lw, REPORT_ASSERT, op, lin)
        b.branch(lw.fail())
        b.position_at_end(ok)

    if t.is_tensor:
        with lw.loop(t.numel) as lin:
            check(lin)
    else:
        check(ir.Constant(I64, 0))
