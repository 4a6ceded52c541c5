"""Small IR surgery shared by the passes: walking while editing, erasing, cloning, side effects."""

from __future__ import annotations

from collections.abc import Iterator

from ..ir.core import Block, Op, Region, Value
from ..ir.ops import FuncOp, LoadOp, WhileOp


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


def erase_op(op: Op) -> None:
    """Detach ``op`` from its block (its results must be unused by then)."""
    op.parent.remove(op)


def use_counts(root: Op) -> dict[Value, int]:
    """How many operand slots use each value, within ``root``."""
    counts: dict[Value, int] = {}
    for op in root.walk():
        for v in op.operands:
            counts[v] = counts.get(v, 0) + 1
    return counts


def resolve(mapping: dict[Value, Value], v: Value) -> Value:
    """Follow ``mapping`` (old -> new) to the end of its chain."""
    while v in mapping:
        v = mapping[v]
    return v


def clone_op(op: Op, mapping: dict[Value, Value]) -> Op:
    """A deep copy of ``op``: operands through ``mapping``; new results and block args are added to it."""
    regions = [Region([_clone_block(b, mapping) for b in r.blocks]) for r in op.regions]
    new = type(op).create(
        [mapping.get(v, v) for v in op.operands],
        [r.type for r in op.results],
        op.clone_attrs(),
        regions,
        op.loc,
    )
    for old, res in zip(op.results, new.results):
        res.name_hint = old.name_hint
        mapping[old] = res
    return new


def _clone_block(block: Block, mapping: dict[Value, Value]) -> Block:
    new = Block([a.type for a in block.args], [a.name_hint for a in block.args])
    mapping.update(zip(block.args, new.args))
    for op in block.ops:
        new.append(clone_op(op, mapping))
    return new


def has_side_effects(op: Op) -> bool:
    """Whether removing or moving ``op`` could change what the program does.

    Pure ops without regions have none; ops with regions (if, for, reduce) have none when
    every op inside is pure (terminators aside). Loads count as effects; ``while`` loops too
    (they may not terminate); so do functions and calls.
    """
    if isinstance(op, (FuncOp, WhileOp, LoadOp)):
        return True
    if not op.regions:
        return not op.pure
    for inner in op.walk():
        if inner is op or inner.is_terminator:
            continue
        if has_side_effects(inner):
            return True
    return False
