"""Remove layout conversions that move nothing: to the layout the value has, or chains of them.

Why: ``assign-layouts`` inserts a ``ttg.convert_layout`` wherever a user needs another
layout; each one that survives to the backend may cost a trip through shared memory.
Two rewrites, repeated until nothing changes:

* ``convert(x : L) : L -> x`` (the same layout);
* ``convert(convert(x : A) : B) : C -> convert(x : A) : C`` (only the last one matters).

Unused conversions left behind are dropped.

before::

    %1 = ttg.convert_layout %0 : tensor<128xf32, #A>   (where %0 : tensor<128xf32, #A>)
    %2 = arith.add %1, %1 : tensor<128xf32, #A>

after::

    %2 = arith.add %0, %0 : tensor<128xf32, #A>
"""

from __future__ import annotations

from tilelab.compiler.ir.core import Block, Module, replace_uses, users
from tilelab.compiler.ir.ops import ConvertLayoutOp

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


def run(module: Module) -> bool:
    """Fold away conversions that change nothing (see the module docstring)."""
    changed = False
    for func in module.funcs:
        mapping: dict = {}
        changed |= _fold(func.body, mapping)
        if mapping:
            replace_uses(func, mapping)
        changed |= _drop_unused(func.body, users(func))
    return changed
