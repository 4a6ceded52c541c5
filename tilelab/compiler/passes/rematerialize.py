# ruff: noqa: E501  (the docstring example spells whole layouts)
"""Compute index tiles again in the layout their user wants instead of moving them between threads.

Why: ``expand_dims``, ``broadcast`` and ``convert_layout`` move elements between threads
(through shared memory: a store, a barrier, a load, a barrier) when their source's layout
is not the one they want. Most such sources are *index tiles*: offsets, pointers and
masks built from ``make_range``, splats of scalars and constants by a few integer ops.
Computing one again in the wanted layout costs a few register ops per element and no
shared memory, so each op whose source would cross threads gets a copy of the source's
chain in the layout it wants (Triton calls this rematerialization).

Layouts travel backwards through the chain: elementwise ops (``arith``, ``tt.addptr``,
casts, selects) ask the same layout of their operands, ``expand_dims`` asks the slice of
it, ``broadcast`` asks it with the broadcast dims collapsed, a ``convert_layout`` is
skipped; ``make_range``, ``splat`` and constants take any layout. A chain that reaches
anything else (a load, a reduction, a dot, a loop-carried tile) stays where it is, and so
does one that would take more than ``MAX_OPS`` new ops.

Each copy goes right after the op it copies, so it is defined wherever the original is:
the loop-invariant part of a chain used in a loop stays outside the loop. Copies made
for one layout are shared by every user that wants that layout; originals left unused
are dropped.

before:
    tt.func @k(%x: !ptr<f32>) {
      %0 = tt.make_range {start = 0, end = 128} : tensor<128xi32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %1 = tt.splat %x : tensor<128x!ptr<f32>, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %2 = tt.addptr %1, %0 : tensor<128x!ptr<f32>, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %3 = ttg.convert_layout %2 : tensor<128x!ptr<f32>, #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %4 = tt.load %3 : tensor<128xf32, #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      tt.store %3, %4 : tensor<128x!ptr<f32>, #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      tt.return
    }

after:
    tt.func @k(%x: !ptr<f32>) {
      %0 = tt.make_range {start = 0, end = 128} : tensor<128xi32, #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %1 = tt.splat %x : tensor<128x!ptr<f32>, #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %2 = tt.addptr %1, %0 : tensor<128x!ptr<f32>, #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %3 = tt.load %2 : tensor<128xf32, #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      tt.store %2, %3 : tensor<128x!ptr<f32>, #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      tt.return
    }
"""

from __future__ import annotations

from tilelab.compiler.ir.core import FuncOp, Module, Op, Value
from tilelab.compiler.ir.ops import (
    BroadcastOp,
    ConvertLayoutOp,
    ExpandDimsOp,
)
from tilelab.compiler.ir.rewriter import Rewriter
from tilelab.compiler.ir.traits import Elementwise, LayoutFree
from tilelab.compiler.layouts import LinearLayout, conversion_kind, slice_layout

from .assign_layouts import collapse

NAME = "rematerialize"

#: the most ops one rewrite may add: past it, the shared-memory trip is the cheaper one
MAX_OPS = 30


def wanted_source_layout(op: Op) -> LinearLayout | None:
    """The layout ``op``'s source must have for ``op`` to move no data (None: ``op`` never moves any).

    ``convert_layout`` wants its result's layout, ``expand_dims`` the slice of its result's
    layout along the new axis, ``broadcast`` its result's layout with the stretched dims collapsed.
    """
    result = op.results[0].type if len(op.results) == 1 else None
    if result is None or not result.is_tensor or result.layout is None:
        return None
    if isinstance(op, ConvertLayoutOp):
        return result.layout
    if isinstance(op, ExpandDimsOp):
        return slice_layout(result.layout, op.attrs["axis"])
    if isinstance(op, BroadcastOp):
        dims = [d for d, (a, b) in enumerate(zip(op.operands[0].type.shape, result.shape)) if a != b]
        return collapse(result.layout, dims)
    return None


def crossing_target(op: Op) -> LinearLayout | None:
    """The layout to rebuild ``op``'s source in, when ``op`` would move it between threads; else None."""
    want = wanted_source_layout(op)
    src = op.operands[0].type if op.operands else None
    if want is None or not src.is_tensor or src.layout is None:
        return None
    if conversion_kind(src.layout, want) in ("none", "register"):
        return None
    return want


class Chain:
    """The copies one rewrite needs: planned first, inserted only if the whole chain qualifies.

    ``memo`` holds the copies earlier rewrites inserted, ``(value, layout) -> copy``.
    """

    def __init__(self, memo: dict):
        self.memo = memo
        self.planned: dict = {}
        self.visits = 0
        self.copies: list[tuple[Op, Op]] = []  # (original, copy), operands before users

    def build(self, v: Value, layout: LinearLayout) -> Value | None:
        """``v`` computed in ``layout`` (planned), or None when its chain does not qualify."""
        if v.type.layout == layout:
            return v
        key = (v, layout)
        found = self.memo.get(key) or self.planned.get(key)
        if found is not None:
            return found
        op = v.defining_op
        if isinstance(op, ConvertLayoutOp):  # a conversion in the chain: start from its source
            return self.build(op.src, layout)
        self.visits += 1  # each visit makes at most one copy: counting them also bounds the recursion
        if op is None or len(op.results) != 1 or self.visits > MAX_OPS:
            return None
        operands = self.operands(op, layout)
        if operands is None:
            return None
        copy = type(op).create(operands, [v.type.with_layout(layout)], dict(op.attrs), loc=op.loc)
        self.copies.append((op, copy))
        self.planned[key] = copy.result
        return copy.result

    def operands(self, op: Op, layout: LinearLayout) -> list[Value] | None:
        """The operands of ``op``'s copy in ``layout``, or None when ``op`` cannot be copied."""
        if op.has_trait(LayoutFree):  # built from attributes and scalars: any layout
            return list(op.operands)
        shape = op.result.type.shape
        if op.has_trait(Elementwise):
            wants = [layout if v.type.is_tensor else None for v in op.operands]
            if any(v.type.is_tensor and v.type.shape != shape for v in op.operands):
                return None
        elif isinstance(op, ExpandDimsOp):
            wants = [slice_layout(layout, op.attrs["axis"])]
        elif isinstance(op, BroadcastOp):
            wants = [collapse(layout, [d for d, (a, b) in enumerate(zip(op.src.type.shape, shape)) if a != b])]
        else:
            return None
        built = [v if want is None else self.build(v, want) for v, want in zip(op.operands, wants)]
        return None if any(b is None for b in built) else built

    def insert(self) -> None:
        """Put each planned copy right after its original and remember it for later rewrites."""
        for original, copy in self.copies:
            Rewriter.insert_after(original, copy)
        self.memo.update(self.planned)

    def discard(self) -> None:
        """Drop the planned copies (the chain did not qualify): they must not stay users of their operands."""
        for _, copy in self.copies:
            copy.drop_references()


def drop_unused(func: FuncOp, values: list[Value]) -> None:
    """Remove the pure ops defining ``values`` that nothing uses any more, and their chains in turn."""
    work = [v.defining_op for v in values]
    while work:
        op = work.pop()
        if op is None or op.parent is None or not op.pure or op.regions:
            continue
        if any(r.has_uses() for r in op.results):
            continue
        operands = list(op.operands)
        Rewriter.erase(op)
        work.extend(v.defining_op for v in operands)


def rematerialize(func: FuncOp) -> bool:
    """Give every data-moving op whose source is an index tile a copy of it in the wanted layout."""
    memo: dict = {}
    replaced: list[Value] = []
    for op in list(func.walk()):
        want = crossing_target(op)
        if want is None:
            continue
        chain = Chain(memo)
        new = chain.build(op.operands[0], want)
        if new is None:
            chain.discard()
            continue
        chain.insert()
        replaced.append(op.operands[0])
        op.operands[0] = new
        if isinstance(op, ConvertLayoutOp):  # now converts to its own layout: the copy replaces it
            op.result.replace_all_uses_with(new)
            replaced.append(op.result)
    drop_unused(func, replaced)
    return bool(replaced)


def run(module: Module) -> bool:
    """Rematerialize index tiles across each function (see the module docstring)."""
    changed = False
    for func in module.funcs:
        changed |= rematerialize(func)
    return changed
