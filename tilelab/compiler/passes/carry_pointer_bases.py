"""A loop that moves a whole pointer tile by one step carries one scalar pointer instead.

Why: the way Triton users walk K, ``a_ptrs = a_ptr + offs`` before the loop and
``a_ptrs += BLOCK_K * stride_ak`` in it, carries a pointer per element of the tile from one
iteration to the next: a 64-bit register pair each, all advanced alike. Every element moves by
the same step, so the tile is always ``base + offs`` where only the scalar ``base`` changes: the
loop carries ``base`` (one pointer, advanced by the step) and rebuilds the tile from it where the
body starts, from the loop-invariant ``offs`` computed once before the loop (32-bit integers,
where the tile held 64-bit pointers). Same
addresses (pointer arithmetic is associative: ``(p + o) + s == (p + s) + o``, in 64 bits as the
backends compute it), loaded and stored the same way (the axis analysis sees the same contiguity
and divisibility, and the software pipeliner the same loop-invariant step), with fewer registers
held across the loop: the batched 3-d dot of the corpus, 216 -> 180 registers a thread.

Carried this way: an ``scf.for`` value whose next value is ``tt.addptr`` of it by a uniform
step (a splat of a scalar, or a constant tile), whose initial value is built from a splat of
a scalar pointer through ``tt.addptr`` (on its pointer) and single-operand shape ops
(expand_dims, broadcast, reshape, trans). Its value after the loop is rebuilt from the final
base the same way. Other carried pointer tiles (moved by a tile of steps, built from a load)
stay as they are.

before:
    tt.func @k(%x: !ptr<f32>, %n: i32, %s: i32) {
      %0 = arith.constant {value = 0} : i32
      %1 = arith.constant {value = 1} : i32
      %2 = tt.make_range {start = 0, end = 4} : tensor<4xi32>
      %3 = tt.splat %x : tensor<4x!ptr<f32>>
      %4 = tt.addptr %3, %2 : tensor<4x!ptr<f32>>
      %5 = tt.splat %s : tensor<4xi32>
      %6 = scf.for %i = %0 to %n step %1 iter_args(%p = %4) -> (tensor<4x!ptr<f32>>) {
        %7 = tt.load %p : tensor<4xf32>
        tt.store %p, %7 : tensor<4x!ptr<f32>>
        %8 = tt.addptr %p, %5 : tensor<4x!ptr<f32>>
        scf.yield %8 : tensor<4x!ptr<f32>>
      }
      %9 = arith.constant {value = 0.0} : tensor<4xf32>
      tt.store %6, %9 : tensor<4x!ptr<f32>>
      tt.return
    }
after:
    tt.func @k(%x: !ptr<f32>, %n: i32, %s: i32) {
      %0 = arith.constant {value = 0} : i32
      %1 = arith.constant {value = 1} : i32
      %2 = tt.make_range {start = 0, end = 4} : tensor<4xi32>
      %3 = scf.for %i = %0 to %n step %1 iter_args(%p = %x) -> (!ptr<f32>) {
        %4 = tt.splat %p : tensor<4x!ptr<f32>>
        %5 = tt.addptr %4, %2 : tensor<4x!ptr<f32>>
        %6 = tt.load %5 : tensor<4xf32>
        tt.store %5, %6 : tensor<4x!ptr<f32>>
        %7 = tt.addptr %p, %s : !ptr<f32>
        scf.yield %7 : !ptr<f32>
      }
      %8 = tt.splat %3 : tensor<4x!ptr<f32>>
      %9 = tt.addptr %8, %2 : tensor<4x!ptr<f32>>
      %10 = arith.constant {value = 0.0} : tensor<4xf32>
      tt.store %9, %10 : tensor<4x!ptr<f32>>
      tt.return
    }
"""

from __future__ import annotations

from ..ir.core import Module, Op, Value
from ..ir.ops import AddPtrOp, ConstantOp, ForOp, SplatOp, YieldOp
from ..ir.rewriter import Rewriter
from ..ir.traits import ShapeOnly
from . import tracing
from .dce import dead_loop_carried_value, removable

NAME = "carry-pointer-bases"


def base_chain(tile: Value) -> list[Op] | None:
    """The ops that build ``tile`` from a splat of a scalar pointer, splat first; None if it is not built so.

    Followed: ``tt.addptr`` (through its pointer operand) and single-operand shape ops.
    """
    chain: list[Op] = []
    v = tile
    while True:
        op = v.defining_op
        if isinstance(op, SplatOp):
            chain.append(op)
            return chain[::-1]
        if isinstance(op, AddPtrOp) or (op is not None and op.has_trait(ShapeOnly) and len(op.operands) == 1):
            chain.append(op)
            v = op.operands[0]
            continue
        return None


def uniform_step(step: Value) -> Value | ConstantOp | None:
    """The scalar every element of ``step`` equals: a splat's source, or a constant tile's op."""
    op = step.defining_op
    if isinstance(op, SplatOp):
        return op.src
    if isinstance(op, ConstantOp) and step.type.is_tensor and isinstance(op.value, int):
        return op
    return None


def _rebuild(chain: list[Op], base: Value, rw: Rewriter) -> Value:
    """``chain`` again at ``rw``'s insertion point, starting from a splat of ``base``; its last value."""
    mapping = {chain[0].operands[0]: base}
    for op in chain:
        rw.insert(Rewriter.clone(op, mapping))
    return mapping[chain[-1].result]


def _erase_if_dead(ops: list[Op]) -> None:
    """Erase those of ``ops`` left unused, last first (an op's operands come before it)."""
    for op in reversed(ops):
        if op.parent is not None and not op.result.has_uses() and removable(op):
            Rewriter.erase(op)


def carried_pointer_tile(loop: ForOp, i: int, chain: list[Op], step_op: AddPtrOp, step) -> None:
    """Carried tile ``i`` (``base + offs``, moved by a uniform step) becomes a carried scalar ``base``."""
    body, yield_op = loop.body, loop.body.terminator
    arg = body.args[i + 1]
    base = loop.add_carried(chain[0].operands[0], arg.name_hint)
    rw = Rewriter(body, loop.loc)
    rw.set_insertion_point_to_start(body)
    arg.replace_all_uses_with(_rebuild(chain, base, rw))
    if isinstance(step, ConstantOp):  # a scalar constant before the loop: the step stays loop-invariant
        rw.set_insertion_point_before(loop)
        step = rw.add(ConstantOp(step.value, step.result.type.element, loc=step.loc))
    rw.set_insertion_point_before(yield_op)
    yield_op.operands.append(rw.add(AddPtrOp(base, step, loc=step_op.loc)))
    after = loop.results[i]
    if after.has_uses():
        rw.set_insertion_point_after(loop)
        after.replace_all_uses_with(_rebuild(chain, loop.results[-1], rw))
    dead_loop_carried_value(loop, i)
    _erase_if_dead([*chain, step_op.operands[1].defining_op, step_op])


def _candidate(loop: ForOp, i: int):
    """``(chain, step_op, step)`` when carried value ``i`` of ``loop`` qualifies, else None."""
    arg = loop.body.args[i + 1]
    if not (arg.type.is_tensor and arg.type.element.is_pointer):
        return None
    step_op = loop.body.terminator.operands[i].defining_op
    if not isinstance(step_op, AddPtrOp) or step_op.operands[0] is not arg or step_op.parent is not loop.body:
        return None
    step = uniform_step(step_op.operands[1])
    chain = base_chain(loop.init_args[i])
    if step is None or chain is None:
        return None
    return chain, step_op, step


def run(module: Module) -> bool:
    changed = False
    for func in module.funcs:
        for loop in [op for op in func.walk() if isinstance(op, ForOp)]:
            if not isinstance(loop.body.terminator, YieldOp):
                continue
            i = 0
            while i < len(loop.results):
                found = _candidate(loop, i)
                if found is None:
                    i += 1
                    continue
                tracing.fired(carried_pointer_tile, loop)
                carried_pointer_tile(loop, i, *found)  # slot i is gone: the next one is now at i
                changed = True
    return changed
