# ruff: noqa: E501  (the docstring example spells whole layouts)
"""Compute index tiles and small loads again in the layout their user wants instead of moving them between threads.

Why: ``expand_dims``, ``broadcast`` and ``convert_layout`` move elements between threads
(through shared memory: a store, a barrier, a load, a barrier) when their source's layout
is not the one they want. Most such sources are *index tiles*: offsets, pointers and
masks built from ``make_range``, splats of scalars and constants by a few integer ops.
Computing one again in the wanted layout costs a few register ops per element and no
shared memory, so each op whose source would cross threads gets a copy of the source's
chain in the layout it wants (Triton calls this rematerialization).

Layouts travel backwards through the chain: elementwise ops (``arith``, ``tt.addptr``,
casts, selects) ask the same layout of their operands, ``expand_dims`` asks the slice of
it, ``broadcast`` asks it with the broadcast dims collapsed, ``trans`` asks it with the
dims put back (a transposed copy's store mask, ``mask.T``), a ``convert_layout`` is
skipped; ``make_range``, ``splat`` and constants take any layout. A *cheap* ``tt.load``
is loaded again in the wanted layout, its pointer, mask and ``other`` built in that
layout like any operand: cheap as in Triton, a load that only reads (not volatile) of a
tile with no more elements than the CTA has threads (a row of per-row statistics, such
as attention's log-sum-exp), where the threads reading the same addresses hit in cache.
Stores, atomics and bigger loads are never copied. A chain that reaches anything else
(an expensive load, a reduction, a dot, a loop-carried tile) stays where it is, and so
does one that would take more than ``MAX_OPS`` new ops.

Each copy goes right after the op it copies, so it is defined wherever the original is:
the loop-invariant part of a chain used in a loop stays outside the loop. Copies made
for one layout are shared by every user that wants that layout; originals left unused
are dropped (a load the copy replaces too). A copied load then moves down its block to
just before its first user when only ops that write no memory come between, and so do
the copies feeding it: its values (replicated, often several per thread) would otherwise
live across a dot or a loop, and spill.

before:
    tt.func @k(%x: !ptr<f32>) {
      %0 = tt.make_range {start = 0, end = 32} : tensor<32xi32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %1 = tt.splat %x : tensor<32x!ptr<f32>, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %2 = tt.addptr %1, %0 : tensor<32x!ptr<f32>, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %3 = tt.load %2 : tensor<32xf32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %4 = ttg.convert_layout %3 : tensor<32xf32, #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %5 = ttg.convert_layout %2 : tensor<32x!ptr<f32>, #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      tt.store %5, %4 : tensor<32x!ptr<f32>, #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      tt.return
    }

after:
    tt.func @k(%x: !ptr<f32>) {
      %0 = tt.make_range {start = 0, end = 32} : tensor<32xi32, #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %1 = tt.splat %x : tensor<32x!ptr<f32>, #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %2 = tt.addptr %1, %0 : tensor<32x!ptr<f32>, #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %3 = tt.load %2 : tensor<32xf32, #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      tt.store %2, %3 : tensor<32x!ptr<f32>, #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      tt.return
    }
"""

from __future__ import annotations

from tilelab.compiler.ir.core import FuncOp, Module, Op, Value
from tilelab.compiler.ir.ops import (
    BroadcastOp,
    ConvertLayoutOp,
    ExpandDimsOp,
    LoadOp,
    TransOp,
)
from tilelab.compiler.ir.rewriter import Rewriter
from tilelab.compiler.ir.traits import Elementwise, LayoutFree, MemoryRead, MemoryWrite
from tilelab.compiler.layouts import LANE, WARP, LinearLayout, conversion_kind, slice_layout

from .assign_layouts import collapse
from .convert_through_shared import permuted
from .dce import removable

NAME = "rematerialize"

#: the most ops one rewrite may add: past it, the shared-memory trip is the cheaper one
MAX_OPS = 30


def wanted_source_layout(op: Op) -> LinearLayout | None:
    """The layout ``op``'s source must have for ``op`` to move no data (None: ``op`` never moves any).

    ``convert_layout`` wants its result's layout, ``expand_dims`` the slice of its result's
    layout along the new axis, ``broadcast`` its result's layout with the stretched dims collapsed,
    ``trans`` its result's layout with the dims put back (then every thread keeps its elements).
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
    if isinstance(op, TransOp):
        return untransposed(result.layout, op.attrs["order"])
    return None


def untransposed(layout: LinearLayout, order) -> LinearLayout:
    """The layout whose ``tt.trans`` by ``order`` is ``layout`` (result dim ``i`` is source dim ``order[i]``)."""
    return permuted(layout, sorted(range(len(order)), key=lambda d: order[d]))


def cheap_load(op: Op, layout: LinearLayout) -> bool:
    """Whether loading ``op``'s tile again in ``layout`` costs less than moving it: Triton's test.

    A load that only reads (not volatile) of a tile with no more elements than the CTA has
    threads: each thread reads a few elements, and the threads that read the same addresses
    hit in cache. A bigger tile read again would multiply its memory traffic.
    """
    if not isinstance(op, LoadOp) or op.attrs.get("volatile"):
        return False
    threads = layout.in_size(LANE) * layout.in_size(WARP)  # warp_size * num_warps
    return op.result.type.numel <= threads


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
        elif isinstance(op, TransOp):
            wants = [untransposed(layout, op.attrs["order"])]
        elif cheap_load(op, layout):  # pointer, mask and other: one shape and layout with the result
            wants = [layout if v.type.is_tensor else None for v in op.operands]
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
    """Remove the ops defining ``values`` that nothing uses any more, and their chains in turn."""
    work = [v.defining_op for v in values]
    while work:
        op = work.pop()
        if op is None or op.parent is None or op.regions or not removable(op):  # dce's test: loads go too
            continue
        if any(r.has_uses() for r in op.results):
            continue
        operands = list(op.operands)
        Rewriter.erase(op)
        work.extend(v.defining_op for v in operands)


def moves_past(op: Op) -> bool:
    """Whether a load may move from before ``op`` to after it: ``op`` and all it holds only compute or read."""
    return all(
        o.pure or o.is_terminator or (o.has_trait(MemoryRead) and not o.has_trait(MemoryWrite)) for o in op.walk()
    )


def first_user(op: Op) -> int | None:
    """The index in ``op``'s block of the first op there that uses ``op`` (or holds a user); None if unused."""
    block = op.parent
    first = None
    for user in op.result.users:
        while user.parent is not block:
            user = user.parent_op
        at = block.ops.index(user)
        first = at if first is None else min(first, at)
    return first


def sink(load: Op) -> None:
    """Move a copied load, and the copies feeding it, down to just before their first users.

    The copies start where their originals were, often before a dot or a loop: their values
    (as many per thread as the wanted layout gives, replicated) would live across it.
    Computed where first used, they do not; the load moves only past ops that write no memory.
    """
    block = load.parent
    first, start = first_user(load), block.ops.index(load)
    if first is not None and first > start + 1 and all(moves_past(op) for op in block.ops[start + 1 : first]):
        Rewriter.move_before(load, block.ops[first])
    work = [load]
    while work:
        for v in work.pop().operands:
            d = v.defining_op
            if d is None or d.parent is not block or not d.pure or d.regions or len(d.results) != 1:
                continue
            first = first_user(d)
            if first > block.ops.index(d) + 1:
                Rewriter.move_before(d, block.ops[first])
                work.append(d)


def rematerialize(func: FuncOp) -> bool:
    """Give every data-moving op whose source is an index tile a copy of it in the wanted layout."""
    memo: dict = {}
    replaced: list[Value] = []
    loads: list[Op] = []
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
        loads.extend(copy for _, copy in chain.copies if isinstance(copy, LoadOp))
        replaced.append(op.operands[0])
        op.operands[0] = new
        if isinstance(op, ConvertLayoutOp):  # now converts to its own layout: the copy replaces it
            op.result.replace_all_uses_with(new)
            replaced.append(op.result)
    drop_unused(func, replaced)
    for load in loads:
        if load.parent is not None:  # a later rewrite may have replaced the copy itself
            sink(load)
    return bool(replaced)


def run(module: Module) -> bool:
    """Rematerialize index tiles across each function (see the module docstring)."""
    changed = False
    for func in module.funcs:
        changed |= rematerialize(func)
    return changed
