"""Dead code elimination: drop ops whose results nobody uses and that have no side effects.

Why: folding, CSE and inlining leave values behind that nothing reads any more; a
kernel also often computes things it then ignores. Every op removed is work the
backends need not lower. Removed: unused pure ops (an ``scf.if`` or ``scf.for`` counts
as pure when every op inside is), unused non-volatile loads (a load only reads), and
loop-carried values of ``scf.for`` whose result is unused and whose chain inside the
body feeds nothing but its own ``scf.yield`` slot. Stores, atomics, prints, asserts
and calls always stay.

before:
    tt.func @k(%x: !ptr<f32>, %n: i32) {
      %0 = arith.constant {value = 0} : i32
      %1 = arith.constant {value = 1} : i32
      %2 = arith.constant {value = 0.0} : f32
      %3 = tt.load %x : f32
      %4 = arith.add %n, %n : i32
      %5 = scf.for %i = %0 to %n step %1 iter_args(%acc = %2) -> (f32) {
        %6 = arith.add %acc, %3 : f32
        scf.yield %6 : f32
      }
      tt.store %x, %3 : !ptr<f32>
      tt.return
    }
after:
    tt.func @k(%x: !ptr<f32>, %n: i32) {
      %0 = tt.load %x : f32
      tt.store %x, %0 : !ptr<f32>
      tt.return
    }
"""

from __future__ import annotations

from ..ir.core import Block, Module, Op
from ..ir.ops import ForOp, LoadOp, YieldOp
from ..ir.rewriter import Rewriter
from . import tracing
from .utils import has_side_effects

NAME = "dce"


def removable(op: Op, loads: bool = True) -> bool:
    """Whether ``op`` may go once its results are unused."""
    if op.is_terminator:
        return False
    if isinstance(op, LoadOp):
        return loads and not op.attrs.get("volatile", False)
    return not has_side_effects(op)


def dead_op(op: Op) -> bool:
    """An op with no used results and no side effects is removed."""
    Rewriter.erase(op)
    return True


def _erase_dead_in_block(block: Block, loads: bool) -> bool:
    """Erase dead ops of ``block`` (last first, so whole chains go in one walk), inner blocks too."""
    changed = False
    for op in reversed(list(block.ops)):
        if not any(r.has_uses() for r in op.results) and removable(op, loads):
            tracing.fired(dead_op, op)
            changed |= dead_op(op)
            continue
        for region in op.regions:
            for inner in region.blocks:
                changed |= _erase_dead_in_block(inner, loads)
    return changed


def erase_dead_ops(module: Module, loads: bool = True) -> bool:
    """Remove every dead op of ``module`` (unused non-volatile loads too when ``loads``)."""
    changed = False
    for func in module.funcs:
        while _erase_dead_in_block(func.body, loads):
            changed = True
    return changed


# --------------------------------------------------------------------------- dead loop-carried values


def _feeds_only_its_slot(loop: ForOp, i: int) -> bool:
    """Whether carried value ``i`` only flows, through pure ops of the body, into ``yield`` slot ``i``."""
    yield_op = loop.body.terminator
    seen, work = set(), [loop.body.args[i + 1]]
    while work:
        v = work.pop()
        for user in v.users:  # values of the body are used only inside it
            if user is yield_op:
                if any(u is v and k != i for k, u in enumerate(user.operands)):
                    return False
            elif user.parent is not loop.body or user.regions or not removable(user, loads=False):
                return False
            elif user not in seen:
                seen.add(user)
                work.extend(user.results)
    return True


def dead_loop_carried_value(loop: ForOp, i: int) -> None:
    """``scf.for`` carried value ``i`` with an unused result and a self-contained chain is removed."""
    loop.body.terminator.operands.pop(i)
    loop.operands.pop(3 + i)
    loop.results.pop(i)
    loop.body.args.pop(i + 1)
    for k, r in enumerate(loop.results):
        r.index = k
    for k, a in enumerate(loop.body.args):
        a.index = k


def _drop_dead_carried(module: Module) -> bool:
    changed = False
    for func in module.funcs:
        for loop in [op for op in func.walk() if isinstance(op, ForOp)]:
            if not isinstance(loop.body.terminator, YieldOp):
                continue
            for i in reversed(range(len(loop.results))):
                if loop.results[i].has_uses() or not _feeds_only_its_slot(loop, i):
                    continue
                tracing.fired(dead_loop_carried_value, loop)
                dead_loop_carried_value(loop, i)
                changed = True
    return changed


def run(module: Module) -> bool:
    """Drop dead ops and dead loop-carried values until none is left."""
    changed = False
    while True:
        step = erase_dead_ops(module)
        step |= _drop_dead_carried(module)
        if not step:
            return changed
        changed = True
