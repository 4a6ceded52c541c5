"""Loop-invariant code motion: compute, once before a loop, what every iteration computes alike.

Why: kernels loop over K (matmul) or over blocks of a row (softmax), and the body
often rebuilds the same offsets, masks and splats each time. A pure op whose operands
all come from outside the loop gives the same value in every iteration: it moves to
just before the ``scf.for`` / ``scf.while``. Inner loops are handled first, so a value
can climb out of several loops. Never moved: loads, stores, atomics, ops with regions,
and integer division or remainder (the loop may run zero times, and a hoisted division
by zero would then run when the program never asked for it).
A value an ``scf.for`` carries but yields back unchanged (a block pointer's base, shape
and strides, carried because ``tl.advance`` moves only its offsets) is the same in every
iteration too: its uses become the initial value first, so what is built from it can
move out (``dce`` then drops the carried slot).

before:
    tt.func @k(%x: !ptr<f32>, %n: i32) {
      %0 = arith.constant {value = 0} : i32
      %1 = arith.constant {value = 1} : i32
      scf.for %i = %0 to %n step %1 {
        %2 = arith.mul %n, %n : i32
        %3 = arith.add %2, %i : i32
        %4 = tt.addptr %x, %3 : !ptr<f32>
        %5 = tt.cast %2 : f32
        tt.store %4, %5 : !ptr<f32>
        scf.yield
      }
      tt.return
    }
after:
    tt.func @k(%x: !ptr<f32>, %n: i32) {
      %0 = arith.constant {value = 0} : i32
      %1 = arith.constant {value = 1} : i32
      %2 = arith.mul %n, %n : i32
      %3 = tt.cast %2 : f32
      scf.for %i = %0 to %n step %1 {
        %4 = arith.add %2, %i : i32
        %5 = tt.addptr %x, %4 : !ptr<f32>
        tt.store %5, %3 : !ptr<f32>
        scf.yield
      }
      tt.return
    }
"""

from __future__ import annotations

from ..ir.core import Module, Op, Value
from ..ir.ops import BinaryOp, ForOp, YieldOp
from ..ir.rewriter import Rewriter
from ..ir.traits import Loop
from . import tracing

NAME = "licm"


def _hoistable(op: Op) -> bool:
    """Pure, region-free, not a terminator, and never trapping."""
    if op.regions or op.is_terminator or not op.pure:
        return False
    return not (isinstance(op, BinaryOp) and op.kind in ("div", "rem"))


def _defined_inside(loop: Op) -> set[Value]:
    """Every value defined in ``loop``'s regions (block arguments and op results)."""
    inside: set[Value] = set()
    for region in loop.regions:
        for block in region.blocks:
            inside.update(block.args)
            for top in block.ops:
                for op in top.walk():
                    inside.update(op.results)
                    for r in op.regions:
                        for b in r.blocks:
                            inside.update(b.args)
    return inside


def invariant_op(op: Op, loop: Op) -> None:
    """A pure op whose operands are all defined outside the loop moves before the loop."""
    Rewriter.move_before(op, loop)


def unchanged_carried_value(loop: ForOp, i: int) -> None:
    """A carried value yielded back unchanged is its initial value, inside the loop and after it."""
    init = loop.init_args[i]
    loop.body.args[i + 1].replace_all_uses_with(init)
    loop.results[i].replace_all_uses_with(init)


def _fold_unchanged_carried(loop: Op) -> bool:
    if not isinstance(loop, ForOp) or not isinstance(loop.body.terminator, YieldOp):
        return False
    changed = False
    yielded = loop.body.terminator.operands
    for i, arg in enumerate(loop.body.args[1:]):
        if yielded[i] is not arg:
            continue
        tracing.fired(unchanged_carried_value, loop)
        unchanged_carried_value(loop, i)
        changed = True
    return changed


def _hoist_from(loop: Op) -> bool:
    changed = _fold_unchanged_carried(loop)
    inside = _defined_inside(loop)
    for region in loop.regions:
        for op in list(region.block.ops):
            if not _hoistable(op) or any(v in inside for v in op.operands):
                continue
            tracing.fired(invariant_op, op)
            invariant_op(op, loop)
            inside.difference_update(op.results)
            changed = True
    return changed


def run(module: Module) -> bool:
    """Hoist invariant ops out of every loop, innermost loops first."""
    changed = False
    for func in module.funcs:
        loops = [op for op in func.walk() if op.has_trait(Loop)]
        for loop in reversed(loops):  # post-order of nesting: inner loops before outer ones
            changed |= _hoist_from(loop)
    return changed
