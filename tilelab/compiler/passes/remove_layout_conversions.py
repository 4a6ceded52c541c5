# ruff: noqa: E501  (the docstring example spells whole layouts)
"""Remove layout conversions that move nothing: to the layout the value has, or chains of them.

Why: ``assign-layouts`` inserts a ``ttg.convert_layout`` wherever a user needs another
layout; each one that survives to the backend may cost a trip through shared memory.
Two rewrites, repeated until nothing changes:

* ``convert(x : L) : L -> x`` (the same layout);
* ``convert(convert(x : A) : B) : C -> convert(x : A) : C`` (only the last one matters).

Unused conversions left behind are dropped. A conversion of a broadcast converts the
broadcast's source instead and broadcasts that (``_before_broadcasts``): one row, not the tile.

A third one moves a loop-carried value to the layout its loop computes it in (or, when the
loop only steps it by constants and splats, to the one layout the loop reads it in: a
pointer tile advanced with ``b_ptrs += BK * stride`` and loaded K-contiguous). Layouts
are assigned before ``accelerate-dot`` knows the mma layout of a dot's result, so a running
statistic of that result (attention's row sum ``l_i = l_i * alpha + tl.sum(p, 1)``) can be
carried in a blocked layout, each iteration converting its inputs to it through shared
memory. When every value computed from the carried one in the loop is elementwise, and
their other inputs are conversions from one layout ``L`` (or constants), the carried value,
those ops and the loop's result take ``L``: the conversions in the loop go, and at most
one is added before the loop (for its initial value) and one after (for its users there).
The pipeline runs this pass again after ``accelerate-dot`` for it.

``%2`` converts ``%1`` to the layout it already has and goes; of the chain ``%2 -> %3 -> %4``
(4, then 1, then 2 elements per thread) one conversion stays, from 4 straight to 2:

before:
    tt.func @k(%x: !ptr<f32>) {
      %0 = tt.splat %x : tensor<128x!ptr<f32>, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %1 = tt.load %0 : tensor<128xf32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %2 = ttg.convert_layout %1 : tensor<128xf32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %3 = ttg.convert_layout %2 : tensor<128xf32, #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %4 = ttg.convert_layout %3 : tensor<128xf32, #blocked<sizePerThread=[2], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %5 = ttg.convert_layout %0 : tensor<128x!ptr<f32>, #blocked<sizePerThread=[2], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      tt.store %5, %4 : tensor<128x!ptr<f32>, #blocked<sizePerThread=[2], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      tt.return
    }
after:
    tt.func @k(%x: !ptr<f32>) {
      %0 = tt.splat %x : tensor<128x!ptr<f32>, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %1 = tt.load %0 : tensor<128xf32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %2 = ttg.convert_layout %1 : tensor<128xf32, #blocked<sizePerThread=[2], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %3 = ttg.convert_layout %0 : tensor<128x!ptr<f32>, #blocked<sizePerThread=[2], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      tt.store %3, %2 : tensor<128x!ptr<f32>, #blocked<sizePerThread=[2], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      tt.return
    }
"""

from __future__ import annotations

from tilelab.compiler.ir.core import Block, Module
from tilelab.compiler.ir.ops import (
    BroadcastOp,
    ConvertLayoutOp,
    ForOp,
)
from tilelab.compiler.ir.rewriter import Rewriter
from tilelab.compiler.ir.traits import Elementwise, Uniform
from tilelab.compiler.passes.assign_layouts import collapse

NAME = "remove-layout-conversions"


def _fold(block: Block) -> bool:
    changed = False
    for op in block.ops:
        for region in op.regions:
            for b in region.blocks:
                changed |= _fold(b)
        if not isinstance(op, ConvertLayoutOp):
            continue
        inner = op.src.defining_op
        if isinstance(inner, ConvertLayoutOp):  # convert(convert(x)) -> convert(x)
            op.operands[0] = inner.src
            changed = True
        if op.src.type == op.result.type and op.result.has_uses():  # convert to the same layout -> x
            op.result.replace_all_uses_with(op.src)
            changed = True
    return changed


def _before_broadcasts(block: Block) -> bool:
    """``convert(broadcast(x)) : L -> broadcast(convert(x) : collapse(L))``: move the small tile, not the big one.

    A row statistic broadcast against an mma result (``s - lse[None, :]``) is broadcast in a
    blocked layout when layouts are assigned; converting the whole broadcast tile to the
    accumulator's layout moved every element of it through shared memory in every iteration.
    Converting the statistic first and broadcasting it in ``L`` (a broadcast moves no data)
    moves one row or column.
    """
    changed = False
    for op in list(block.ops):
        for region in op.regions:
            for b in region.blocks:
                changed |= _before_broadcasts(b)
        if not isinstance(op, ConvertLayoutOp) or not isinstance(op.src.defining_op, BroadcastOp):
            continue
        bc, layout = op.src.defining_op, op.result.type.layout
        src = bc.src
        if layout is None or src.type.layout is None:
            continue
        dims = [d for d, (a, b) in enumerate(zip(src.type.shape, op.result.type.shape)) if a == 1 and b != 1]
        small = src.type.with_layout(collapse(layout, dims))
        moved = src if src.type == small else Rewriter.insert_before(op, ConvertLayoutOp(src, small, loc=op.loc)).result
        new = Rewriter.insert_before(op, BroadcastOp(moved, op.result.type, loc=bc.loc, **bc.attrs))
        op.result.replace_all_uses_with(new.result)
        Rewriter.erase(op)
        if not bc.result.has_uses():
            Rewriter.erase(bc)
        changed = True
    return changed


def _drop_unused(block: Block) -> bool:
    changed = False
    for op in list(block.ops):
        for region in op.regions:
            for b in region.blocks:
                changed |= _drop_unused(b)
        if isinstance(op, ConvertLayoutOp) and not op.result.has_uses():
            Rewriter.erase(op)
            changed = True
    return changed


def _carried(func) -> bool:
    """Move loop-carried values to the layout their loop computes (see the module docstring)."""
    changed = False
    for loop in [op for op in func.walk() if isinstance(op, ForOp)]:
        for index in range(len(loop.results)):
            changed |= _move_carried(func, loop, index)
    return changed


def _move_carried(func, loop: ForOp, index: int) -> bool:
    body, arg = loop.body, loop.body.args[1 + index]
    if not arg.type.is_tensor or arg.type.layout is None:
        return False
    term = loop.body.terminator
    ops, component, work, exits = [], {arg}, [arg], set()
    while work:  # the values computed from ``arg`` in this iteration
        for user in work.pop().users:
            if user is term:
                continue
            if isinstance(user, ConvertLayoutOp) and user.parent is body:
                exits.add(user.result.type.layout)  # read in another layout (a load's pointers)
                continue
            if user.parent is not body or not user.has_trait(Elementwise) or user in ops:
                if user in ops:
                    continue
                return False
            ops.append(user)
            component.add(user.results[0])
            work.append(user.results[0])
    yielded = [i for i, v in enumerate(term.operands) if v in component]
    if yielded != [index]:
        return False
    target, removed = None, 0
    for op in ops:
        for v in op.operands:
            source = v.defining_op
            if v in component or not v.type.is_tensor or v.defined_by(Uniform):
                continue
            if not isinstance(source, ConvertLayoutOp) or (target is not None and source.src.type.layout != target):
                return False
            target = source.src.type.layout
            removed += 1
    if target is None and len(exits) == 1:  # ``ptrs += step`` carried in one layout, loaded in another
        (target,) = exits
        removed = 1
    if target is None or target == arg.type.layout or not removed or (exits and exits != {target}):
        return False
    _retype(loop, index, ops, component, target)
    return True


def _retype(loop: ForOp, index: int, ops: list, component: set, target) -> None:
    old = loop.body.args[1 + index].type.layout
    for op in ops:
        for k, v in enumerate(op.operands):
            if v in component or not v.type.is_tensor:
                continue
            source = v.defining_op
            if isinstance(source, ConvertLayoutOp):
                op.operands[k] = source.src
            else:  # a constant or splat: made again in the new layout
                again = type(source).create(
                    source.operands, [v.type.with_layout(target)], dict(source.attrs), loc=source.loc
                )
                Rewriter.insert_after(source, again)  # next to the original: a step made before the loop stays there
                op.operands[k] = again.result
        for r in op.results:
            r.type = r.type.with_layout(target)
    arg = loop.body.args[1 + index]
    arg.type = arg.type.with_layout(target)
    init = loop.init_args[index]
    source = init.defining_op
    if init.defined_by(Uniform):  # ``tl.zeros``: made again in the new layout
        entry = type(source).create(
            source.operands, [init.type.with_layout(target)], dict(source.attrs), loc=source.loc
        )
    else:
        entry = ConvertLayoutOp(init, init.type.with_layout(target), loc=loop.loc)
    Rewriter.insert_before(loop, entry)
    loop.operands[3 + index] = entry.results[0]
    result = loop.results[index]
    result.type = result.type.with_layout(target)
    if result.has_uses():  # its readers read it converted back
        exit_ = Rewriter.insert_after(loop, ConvertLayoutOp(result, result.type.with_layout(old), loc=loop.loc))
        result.replace_uses_if(exit_.result, lambda user: user is not exit_)


def run(module: Module) -> bool:
    """Fold away conversions that change nothing (see the module docstring)."""
    changed = False
    for func in module.funcs:
        changed |= _carried(func)
        changed |= _before_broadcasts(func.body)
        changed |= _fold(func.body)
        changed |= _drop_unused(func.body)
    return changed
