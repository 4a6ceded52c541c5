# ruff: noqa: E501  (the docstring example spells whole types)
"""Load the next iteration's tiles of a reduction loop one iteration ahead, into registers.

Why: ``for start in range(0, M, BM): acc += tl.sum(tl.load(x + rows * stride + cols), 0)``
(column sums, layer norm's statistics, a cross-entropy's running max and sum) waits for its
own loads every iteration. The PTX issues all of a tile's loads before the first add, but
ptxas, keeping registers few, may put the adds between them; each add then waits for the
load before it, and the warp has two loads in flight instead of eight (the probe's column
sums of an 8191x8000 matrix ran at 1.6x Triton's time on an H100 for that alone; loaded
ahead, 0.7x: ``benchmarks/RESULTS.md``). Loaded one iteration ahead, a tile is in flight
during the whole of the previous iteration's work, whatever ptxas does with it.

A loop is prefetched when its ``num_stages`` (its own, else the module's) is at least 2, its
step is a positive constant, and nothing in it writes global memory (a later iteration might
read what an earlier one writes) nor computes a dot or copies asynchronously (loops with dots
are ``software-pipeline``'s, through shared memory). Each load directly in its body whose
pointers, mask and ``other`` depend, in the loop, only on the induction variable and on
values that advance by a loop-invariant step (``carried_steps``) becomes a loop-carried
value: loaded before the loop for the first iteration (masked off when the loop runs no
iteration) and, at the top of the body, for the next one (masked off on the last). The
loads of a loop go ahead together only while they hold at most 64 registers a thread more.

before:
    tt.func @k(%x: !ptr<f32>, %n: i32) {
      %0 = arith.constant {value = 0} : i32
      %1 = arith.constant {value = 128} : i32
      %2 = tt.make_range {start = 0, end = 128} : tensor<128xi32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %3 = tt.splat %x : tensor<128x!ptr<f32>, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %4 = arith.constant {value = 0.0} : f32
      %5 = scf.for %i = %0 to %n step %1 iter_args(%acc = %4) -> (f32) {
        %6 = tt.splat %i : tensor<128xi32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
        %7 = arith.add %6, %2 : tensor<128xi32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
        %8 = tt.addptr %3, %7 : tensor<128x!ptr<f32>, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
        %9 = tt.load %8 : tensor<128xf32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
        %10 = tt.reduce %9 {axis = 0} : f32 {
        ^bb(%a: f32, %b: f32):
          %11 = arith.add %a, %b : f32
          tt.reduce.return %11 : f32
        }
        %12 = arith.add %acc, %10 : f32
        scf.yield %12
      }
      tt.return
    }

after:
    tt.func @k(%x: !ptr<f32>, %n: i32) {
      %0 = arith.constant {value = 0} : i32
      %1 = arith.constant {value = 128} : i32
      %2 = tt.make_range {start = 0, end = 128} : tensor<128xi32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %3 = tt.splat %x : tensor<128x!ptr<f32>, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %4 = arith.constant {value = 0.0} : f32
      %5 = arith.cmp lt %0, %n : i1
      %6 = tt.splat %0 : tensor<128xi32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %7 = arith.add %6, %2 : tensor<128xi32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %8 = tt.addptr %3, %7 : tensor<128x!ptr<f32>, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %9 = tt.splat %5 : tensor<128xi1, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %10 = tt.load %8, %9 : tensor<128xf32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %11, %12 = scf.for %i = %0 to %n step %1 iter_args(%acc = %4, %ahead = %10) -> (f32, tensor<128xf32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>) {
        %13 = arith.constant {value = 128} : i32
        %14 = arith.add %i, %13 : i32
        %15 = arith.cmp lt %14, %n : i1
        %16 = tt.splat %14 : tensor<128xi32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
        %17 = arith.add %16, %2 : tensor<128xi32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
        %18 = tt.addptr %3, %17 : tensor<128x!ptr<f32>, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
        %19 = tt.splat %15 : tensor<128xi1, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
        %20 = tt.load %18, %19 : tensor<128xf32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
        %21 = tt.reduce %ahead {axis = 0} : f32 {
          ^bb(%a: f32, %b: f32):
            %22 = arith.add %a, %b : f32
            tt.reduce.return %22 : f32
        }
        %23 = arith.add %acc, %21 : f32
        scf.yield %23, %20 : f32
      }
      tt.return
    }
"""

from __future__ import annotations

from tilelab.compiler.ir.core import Module, Op, Value
from tilelab.compiler.ir.ops import (
    CmpOp,
    ConstantOp,
    DotOp,
    ForOp,
    LoadOp,
    WarpGroupDotOp,
)
from tilelab.compiler.ir.rewriter import Rewriter
from tilelab.compiler.ir.traits import AsyncCopy
from tilelab.compiler.ir.types import i1
from tilelab.compiler.options import options_of

from .software_pipeline import address_slice, advance, carried_steps, drop_dead_slice, masked_load, writes_global

NAME = "prefetch-loads"

#: the most 32-bit registers a thread may hold for the loads a loop runs ahead
REGISTER_BUDGET = 64


def _blocks_prefetch(op: Op) -> bool:
    """Whether ``op`` in a loop keeps its loads in their iteration (a dot, an async copy; global writes:
    ``writes_global``)."""
    return isinstance(op, (DotOp, WarpGroupDotOp)) or op.has_trait(AsyncCopy)


def _candidates(loop: ForOp) -> list[tuple[LoadOp, list[Op]]]:
    """The loads of ``loop``'s body that go one iteration ahead, each with the address ops it needs."""
    step = loop.operands[2].defining_op
    if loop.attrs.get("static") or not isinstance(step, ConstantOp) or not step.value > 0:
        return []
    if writes_global(loop) or any(_blocks_prefetch(op) for op in loop.walk() if op is not loop):
        return []
    found = []
    for op in loop.body.ops:
        if not isinstance(op, LoadOp) or op.attrs.get("volatile") or op.descriptor is not None:
            continue
        t = op.result.type
        if not t.is_tensor or not op.ptr.type.is_tensor or not op.result.has_uses():
            continue
        if op.mask is not None and op.mask.type != op.ptr.type.with_element(i1):
            continue
        roots = [v for v in (op.ptr, op.mask, op.other) if v is not None]
        slice_ = address_slice(loop, roots)
        if slice_ is not None:
            found.append((op, slice_))
    return found


def _words_per_thread(load: LoadOp, threads: int) -> int:
    t = load.result.type
    return max(1, t.numel * max(1, t.element.itemsize) // 4 // threads)


def _load_at(rw: Rewriter, load: LoadOp, slice_: list[Op], at: dict[Value, Value], pred: Value) -> Value:
    """``load`` of the iteration whose leaves are ``at``, masked off where ``pred`` is false."""
    mapping: dict[Value, Value] = dict(at)
    for op in slice_:
        rw.insert(Rewriter.clone(op, mapping))
    return masked_load(rw, load, mapping, pred)


def prefetch_loop(loop: ForOp, threads: int) -> bool:
    """Load ``loop``'s matching tiles one iteration ahead (see the module docstring); whether any."""
    cands = _candidates(loop)
    budget, chosen = REGISTER_BUDGET, []
    for load, slice_ in cands:
        words = _words_per_thread(load, threads)
        if words <= budget:
            chosen.append((load, slice_))
            budget -= words
    if not chosen:
        return False
    lb, ub = loop.operands[:2]
    inits = dict(zip(loop.body.args[1:], loop.init_args))
    leaves = [loop.induction_var] + list(carried_steps(loop))
    before = Rewriter()
    before.set_insertion_point_before(loop)
    start = {leaf: lb if leaf is loop.induction_var else inits[leaf] for leaf in leaves}
    in_body = Rewriter()
    in_body.set_insertion_point_to_start(loop.body)
    first_pred = before.add(CmpOp("lt", lb, ub, loc=loop.loc))  # the loop runs at least once
    ahead = advance(in_body, loop, {leaf: leaf for leaf in leaves}, 1)
    ahead_pred = in_body.add(CmpOp("lt", ahead[loop.induction_var], ub, loc=loop.loc))  # not the last trip
    yield_op = loop.body.terminator
    for load, slice_ in chosen:
        first = _load_at(before, load, slice_, start, first_pred)
        current = loop.add_carried(first, "ahead")
        nxt = _load_at(in_body, load, slice_, ahead, ahead_pred)
        load.result.replace_all_uses_with(current)
        yield_op.operands.append(nxt)
        Rewriter.erase(load)
        drop_dead_slice(loop, slice_)
    return True


def run(module: Module) -> bool:
    """Prefetch the loads of every matching loop (see the module docstring)."""
    options = options_of(module)
    threads = options.num_warps * options.warp_size
    changed = False
    for func in module.funcs:
        for loop in [op for op in func.walk() if isinstance(op, ForOp)]:
            if (loop.attrs.get("num_stages") or options.num_stages) >= 2:
                changed |= prefetch_loop(loop, threads)
    return changed
