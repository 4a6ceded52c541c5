# ruff: noqa: E501  (the docstring example spells whole types)
"""Issue the loads of a spin-locked critical section together, before the math that uses them.

Why: a kernel that adds its partial results into shared rows under a lock (layer norm's
backward adding dw and db into ``GROUP_M`` partial rows, a split-k reduction, a histogram's
merge) takes the lock with ``while tl.atomic_cas(lock, 0, 1) == 1: pass``, reads the rows,
adds, stores them and gives the lock back with ``tl.atomic_xchg(lock, 0)``. Every program
waiting on the lock waits for the whole section, so each memory latency inside it counts once
per program of the group, one after the other: no other warp's work hides it. Written as users
write it, ``dw += tl.load(dw_row); db += tl.load(db_row)`` puts an add between the two loads;
ptxas keeps that order where registers are scarce, and the second load is issued only after
the first one's data came back. Issued together, both rows are in flight at once (the probe's
spin-locked layer norm backward: 1.08x Triton's time on an H100 without this pass, 0.98x with it:
``benchmarks/RESULTS.md``, the forty-eighth run).

A critical section is the ops between an ``scf.while`` whose condition region takes the lock
(``tt.atomic_cas``, or an exchange, on a scalar pointer whose result the condition reads) and
the next ``tt.atomic_rmw`` of kind ``xchg`` on the same pointer in the same block, with the
blocks nested in those ops. Each ``tt.load`` of the section moves up its block past the pure
ops before it (``Pure``: arithmetic, reductions, layout and shape ops), as far as the previous
load or any op that is not pure (a store, an atomic, a barrier, an ``scf.if``); the pure ops
that compute its pointers, mask and ``other`` on the way move up with it, in their order.
Nothing moves across a memory access, a barrier or the lock itself, so what the section reads
and writes, and in what order, is unchanged; only the math waits longer.

before:
    tt.func @k(%lock: !ptr<i32>, %a: !ptr<f32>, %b: !ptr<f32>) {
      %0 = arith.constant {value = 0} : i32
      %1 = arith.constant {value = 1} : i32
      %2 = tt.make_range {start = 0, end = 128} : tensor<128xi32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %3 = tt.splat %a : tensor<128x!ptr<f32>, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %4 = tt.addptr %3, %2 : tensor<128x!ptr<f32>, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %5 = arith.constant {value = 1.0} : tensor<128xf32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      scf.while () -> () {
        %6 = tt.atomic_cas %lock, %0, %1 {sem = "acq_rel", scope = "gpu"} : i32
        %7 = arith.cmp eq %6, %1 : i1
        scf.condition %7 : i1
      } do { ^bb():
        scf.yield
      }
      %8 = tt.load %4 : tensor<128xf32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %9 = arith.add %8, %5 : tensor<128xf32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %10 = tt.splat %b : tensor<128x!ptr<f32>, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %11 = tt.addptr %10, %2 : tensor<128x!ptr<f32>, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %12 = tt.load %11 : tensor<128xf32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %13 = arith.add %12, %5 : tensor<128xf32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      tt.store %4, %9 : tensor<128x!ptr<f32>, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      tt.store %11, %13 : tensor<128x!ptr<f32>, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      gpu.barrier
      %14 = tt.atomic_rmw %lock, %0 {kind = "xchg", sem = "acq_rel", scope = "gpu"} : i32
      tt.return
    }

after:
    tt.func @k(%lock: !ptr<i32>, %a: !ptr<f32>, %b: !ptr<f32>) {
      %0 = arith.constant {value = 0} : i32
      %1 = arith.constant {value = 1} : i32
      %2 = tt.make_range {start = 0, end = 128} : tensor<128xi32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %3 = tt.splat %a : tensor<128x!ptr<f32>, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %4 = tt.addptr %3, %2 : tensor<128x!ptr<f32>, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %5 = arith.constant {value = 1.0} : tensor<128xf32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      scf.while () -> () {
        %6 = tt.atomic_cas %lock, %0, %1 {sem = "acq_rel", scope = "gpu"} : i32
        %7 = arith.cmp eq %6, %1 : i1
        scf.condition %7 : i1
      } do { ^bb():
        scf.yield
      }
      %8 = tt.load %4 : tensor<128xf32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %9 = tt.splat %b : tensor<128x!ptr<f32>, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %10 = tt.addptr %9, %2 : tensor<128x!ptr<f32>, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %11 = tt.load %10 : tensor<128xf32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %12 = arith.add %8, %5 : tensor<128xf32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %13 = arith.add %11, %5 : tensor<128xf32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      tt.store %4, %12 : tensor<128x!ptr<f32>, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      tt.store %10, %13 : tensor<128x!ptr<f32>, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      gpu.barrier
      %14 = tt.atomic_rmw %lock, %0 {kind = "xchg", sem = "acq_rel", scope = "gpu"} : i32
      tt.return
    }
"""

from __future__ import annotations

from tilelab.compiler.ir.core import Block, Module, Op, Value
from tilelab.compiler.ir.ops import AtomicCASOp, AtomicRMWOp, ConditionOp, LoadOp, WhileOp
from tilelab.compiler.ir.rewriter import Rewriter
from tilelab.compiler.ir.traits import Pure

NAME = "critical-sections"


def _lock_taken(loop: WhileOp) -> Value | None:
    """The pointer of the lock ``loop`` spins on: a scalar compare-and-swap (or exchange) in its condition
    region whose result the condition reads; None for any other while loop."""
    before = loop.regions[0].blocks[0]
    cond = before.terminator
    if not isinstance(cond, ConditionOp):
        return None
    reads = _slice_of(cond.operands[0], before)
    for op in before.ops:
        takes = isinstance(op, AtomicCASOp) or (isinstance(op, AtomicRMWOp) and op.attrs.get("kind") == "xchg")
        if takes and not op.ptr.type.is_tensor and op.results[0] in reads:
            return op.ptr
    return None


def _slice_of(value: Value, block: Block) -> set[Value]:
    """``value`` and the values of ``block`` it is computed from."""
    seen, todo = set(), [value]
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        op = v.defining_op
        if op is not None and op.parent is block:
            todo.extend(op.operands)
    return seen


def _released(lock: Value, op: Op) -> bool:
    return isinstance(op, AtomicRMWOp) and op.attrs.get("kind") == "xchg" and op.ptr is lock


def sections(block: Block) -> list[list[Op]]:
    """The critical sections of ``block`` (and of the blocks nested in it): each the ops between an
    acquiring while loop and the exchange on the same lock that releases it."""
    found, ops = [], list(block.ops)
    for i, op in enumerate(ops):
        lock = _lock_taken(op) if isinstance(op, WhileOp) else None
        end = next((j for j in range(i + 1, len(ops)) if lock is not None and _released(lock, ops[j])), None)
        if end is not None:
            found.append(ops[i + 1 : end])
        for region in op.regions:
            for inner in region.blocks:
                found.extend(sections(inner))
    return found


def _issue_early(load: LoadOp) -> bool:
    """Move ``load`` up its block past pure ops, taking along those that compute its operands; whether it moved."""
    ops = load.parent.ops
    at = ops.index(load)
    needed, along, stop = set(load.operands), [], None
    for op in reversed(ops[:at]):
        if isinstance(op, LoadOp) or not op.has_trait(Pure):
            stop = op
            break
        if any(r in needed for r in op.results):
            along.append(op)
            needed.update(op.operands)
    first = ops.index(stop) + 1 if stop is not None else 0
    if all(op in along for op in ops[first:at]):
        return False  # nothing to pass: already as early as it can be
    anchor = next(op for op in ops[first:at] if op not in along)
    for op in [*reversed(along), load]:
        Rewriter.move_before(op, anchor)
    return True


def run(module: Module) -> bool:
    """Issue every critical section's loads before the pure ops they need not wait for (see the module docstring)."""
    changed = False
    for func in module.funcs:
        for section in sections(func.body):
            for op in section:
                for load in [o for o in op.walk() if isinstance(o, LoadOp)]:
                    changed |= _issue_early(load)
    return changed
