"""Small helpers shared by the passes: walking while editing, and what counts as a side effect."""

from __future__ import annotations

from collections.abc import Iterator

from ..ir.core import Block, Op
from ..ir.ops import FuncOp, WhileOp
from ..ir.traits import MemoryRead


def walk_live(block: Block) -> Iterator[Op]:
    """Ops of ``block`` and its nested regions in program order, skipping ops erased meanwhile.

    The caller may erase or insert ops while iterating: an op erased before it is reached
    (or whose parent was erased) is not yielded; ops inserted are seen on the next walk.
    """
    for op in list(block.ops):
        if op.parent is not block:
            continue
        yield op
        if op.parent is not block:
            continue
        for region in op.regions:
            for inner in region.blocks:
                yield from walk_live(inner)


def has_side_effects(op: Op) -> bool:
    """Whether removing or moving ``op`` could change what the program does.

    Pure ops without regions have none; ops with regions (if, for, reduce) have none when
    every op inside is pure (terminators aside). Memory reads count as effects (a store may
    come between); ``while`` loops too (they may not terminate); so do functions and calls.
    """
    if isinstance(op, (FuncOp, WhileOp)) or op.has_trait(MemoryRead):
        return True
    if not op.regions:
        return not op.pure
    for inner in op.walk():
        if inner is op or inner.is_terminator:
            continue
        if has_side_effects(inner):
            return True
    return False
