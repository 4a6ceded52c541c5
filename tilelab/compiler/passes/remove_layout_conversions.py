"""Remove layout conversions that move nothing: to the layout the value has, or chains of them.

Why: ``assign-layouts`` inserts a ``ttg.convert_layout`` wherever a user needs another
layout; each one that survives to the backend may cost a trip through shared memory.
Two rewrites, repeated until nothing changes:

* ``convert(x : L) : L -> x`` (the same layout);
* ``convert(convert(x : A) : B) : C -> convert(x : A) : C`` (only the last one matters).

Unused conversions left behind are dropped.

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

before::

    %1 = ttg.convert_layout %0 : tensor<128xf32, #A>   (where %0 : tensor<128xf32, #A>)
    %2 = arith.add %1, %1 : tensor<128xf32, #A>

after::

    %2 = arith.add %0, %0 : tensor<128xf32, #A>
"""

from __future__ import annotations

from tilelab.compiler.ir.core import Block, Module, replace_uses, users
from tilelab.compiler.ir.ops import (
    AddPtrOp,
    BinaryOp,
    CastOp,
    CmpOp,
    ConstantOp,
    ConvertLayoutOp,
    FmaOp,
    ForOp,
    SelectOp,
    SplatOp,
    UnaryOp,
)

#: pure elementwise ops: their tensor operands and result share one layout
_ELEMENTWISE = (AddPtrOp, BinaryOp, UnaryOp, CastOp, CmpOp, FmaOp, SelectOp)

NAME = "remove-layout-conversions"


def _fold(block: Block, mapping: dict) -> bool:
    changed = False
    for op in block.ops:
        for region in op.regions:
            for b in region.blocks:
                changed |= _fold(b, mapping)
        if not isinstance(op, ConvertLayoutOp):
            continue
        src = mapping.get(op.src, op.src)
        inner = src.defining_op
        if isinstance(inner, ConvertLayoutOp):  # convert(convert(x)) -> convert(x)
            op.operands[0] = inner.src
            src = inner.src
            changed = True
        if src.type == op.result.type:  # convert to the same layout -> x
            mapping[op.result] = src
            changed = True
    return changed


def _drop_unused(block: Block, used) -> bool:
    changed = False
    for op in list(block.ops):
        for region in op.regions:
            for b in region.blocks:
                changed |= _drop_unused(b, used)
        if isinstance(op, ConvertLayoutOp) and not used.get(op.result):
            block.remove(op)
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
    uses, term = users(func), loop.body.terminator
    ops, component, work, exits = [], {arg}, [arg], set()
    while work:  # the values computed from ``arg`` in this iteration
        for user in uses.get(work.pop(), []):
            if user is term:
                continue
            if isinstance(user, ConvertLayoutOp) and user.parent is body:
                exits.add(user.result.type.layout)  # read in another layout (a load's pointers)
                continue
            if user.parent is not body or not isinstance(user, _ELEMENTWISE) or user in ops:
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
            if v in component or not v.type.is_tensor or isinstance(source, (ConstantOp, SplatOp)):
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
    _retype(loop, index, ops, component, target, uses)
    return True


def _retype(loop: ForOp, index: int, ops: list, component: set, target, uses) -> None:
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
                home = source.parent  # next to the original: a step made before the loop stays there
                home.insert(home.ops.index(source) + 1, again)
                op.operands[k] = again.result
        for r in op.results:
            r.type = r.type.with_layout(target)
    arg = loop.body.args[1 + index]
    arg.type = arg.type.with_layout(target)
    home, init = loop.parent, loop.init_args[index]
    source = init.defining_op
    if isinstance(source, (ConstantOp, SplatOp)):  # ``tl.zeros``: made again in the new layout
        entry = type(source).create(
            source.operands, [init.type.with_layout(target)], dict(source.attrs), loc=source.loc
        )
    else:
        entry = ConvertLayoutOp(init, init.type.with_layout(target), loc=loop.loc)
    home.insert(home.ops.index(loop), entry)
    loop.operands[3 + index] = entry.results[0]
    result = loop.results[index]
    readers = uses.get(result, [])
    result.type = result.type.with_layout(target)
    if readers:
        exit_ = ConvertLayoutOp(result, result.type.with_layout(old), loc=loop.loc)
        home.insert(home.ops.index(loop) + 1, exit_)
        for reader in readers:
            reader.operands = [exit_.result if v is result else v for v in reader.operands]


def run(module: Module) -> bool:
    """Fold away conversions that change nothing (see the module docstring)."""
    changed = False
    for func in module.funcs:
        changed |= _carried(func)
        mapping: dict = {}
        changed |= _fold(func.body, mapping)
        if mapping:
            replace_uses(func, mapping)
        changed |= _drop_unused(func.body, users(func))
    return changed
