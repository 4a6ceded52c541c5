"""Shape ops: ops that move a tile's elements around without computing new values."""

from __future__ import annotations

from ..core import UNKNOWN_LOC, Loc, Op, Value
from ..traits import LayoutFree, Pure, SameOperandsAndResultType, ShapeOnly, Uniform
from ..types import Type


class _ShapeOp(Op):
    def __init__(self, x: Value, type: Type, loc: Loc = UNKNOWN_LOC, **attrs):
        super().__init__([x], [type], attrs, loc=loc)

    @property
    def src(self) -> Value:
        return self.operands[0]


class SplatOp(_ShapeOp):
    """A scalar copied to every element of a tile."""

    name = "tt.splat"
    traits = frozenset({Pure, ShapeOnly, LayoutFree, Uniform})

    def _verify(self) -> None:
        self.expect_counts(1, 1)
        src, res = self.src.type, self.result.type
        if not (not src.is_tensor and res.is_tensor):
            self.fail(f"splats a scalar into a tile, not {src} into {res}")
        if res.element != src:
            self.fail(f"element {res.element} is not the scalar's type {src}")


class BroadcastOp(_ShapeOp):
    """A tile stretched along its size-1 dimensions (same rank)."""

    name = "tt.broadcast"
    traits = frozenset({Pure, ShapeOnly})

    def _verify(self) -> None:
        self.expect_counts(1, 1)
        src, res = self.src.type, self.result.type
        if not (src.is_tensor and res.is_tensor and src.element == res.element):
            self.fail(f"cannot broadcast {src} to {res}")
        ok = len(src.shape) == len(res.shape) and all(a in (1, b) for a, b in zip(src.shape, res.shape))
        if not ok:
            self.fail(f"shape {list(src.shape)} does not broadcast to {list(res.shape)}")


class ExpandDimsOp(_ShapeOp):
    """A new size-1 dimension at ``axis``."""

    name = "tt.expand_dims"
    traits = frozenset({Pure, ShapeOnly})

    def _verify(self) -> None:
        self.expect_counts(1, 1)
        src, res, axis = self.src.type, self.result.type, self.attrs.get("axis")
        if not (isinstance(axis, int) and 0 <= axis < len(res.shape)):
            self.fail(f"axis {axis} out of range for {res}")
        shape = list(src.shape)
        shape.insert(axis, 1)
        if not (tuple(shape) == res.shape and src.element == res.element):
            self.fail(f"{src} with a new axis {axis} is not {res}")


class ReshapeOp(_ShapeOp):
    """Same elements, new shape, row-major order (``can_reorder`` lets a backend permute)."""

    name = "tt.reshape"
    traits = frozenset({Pure, ShapeOnly})

    def _verify(self) -> None:
        self.expect_counts(1, 1)
        src, res = self.src.type, self.result.type
        if src.element != res.element:
            self.fail(f"element types differ: {src} vs {res}")
        if src.numel != res.numel:
            self.fail(f"{src} and {res} hold different numbers of elements")


class TransOp(_ShapeOp):
    """Dimensions permuted: result dim ``i`` is source dim ``order[i]``."""

    name = "tt.trans"
    traits = frozenset({Pure, ShapeOnly})

    def _verify(self) -> None:
        check_permuted(self)


def check_permuted(op: Op) -> None:
    """``op`` (one source, one result) permutes the source's dims by its ``order`` attr, elements unchanged."""
    op.expect_counts(1, 1)
    src, res, order = op.operands[0].type, op.results[0].type, tuple(op.attrs.get("order", ()))
    if sorted(order) != list(range(len(src.shape))):
        op.fail(f"order {list(order)} is not a permutation")
    if res.shape != tuple(src.shape[d] for d in order) or src.element != res.element:
        op.fail(f"{src} permuted by {list(order)} is not {res}")


class FlipOp(_ShapeOp):
    """Elements reversed along ``dim``; the result has the source's type, layout included."""

    name = "tt.flip"
    traits = frozenset({Pure, ShapeOnly, SameOperandsAndResultType})

    def _verify(self) -> None:
        self.expect_counts(1, 1)


class SortOp(_ShapeOp):
    """Elements sorted along ``dim`` (ascending unless ``descending``); the result has the source's type."""

    name = "tt.sort"
    traits = frozenset({Pure, SameOperandsAndResultType})

    def _verify(self) -> None:
        self.expect_counts(1, 1)


class GatherOp(Op):
    """``out[.., i, ..] = src[.., index[.., i, ..] mod size, ..]`` along ``axis``; ``size`` is ``src``'s
    extent there (a power of two, so ``-1`` is the last element). Every other dimension of ``index`` equals
    ``src``'s; the result has ``index``'s shape and ``src``'s element type."""

    name = "tt.gather"
    traits = frozenset({Pure})

    def __init__(self, src: Value, index: Value, type: Type, axis: int, loc: Loc = UNKNOWN_LOC):
        super().__init__([src, index], [type], {"axis": axis}, loc=loc)

    @property
    def src(self) -> Value:
        return self.operands[0]

    @property
    def index(self) -> Value:
        return self.operands[1]

    def _verify(self) -> None:
        self.expect_counts(2, 1)
        src, index, res = self.src.type, self.index.type, self.result.type
        axis = self.attrs.get("axis")
        self.expect(src.is_tensor and index.is_tensor, "gathers from a tile by a tile of indices")
        self.expect(index.element.is_int, f"the index must be integers, got {index.element}")
        rank = len(src.shape)
        self.expect(len(index.shape) == rank and isinstance(axis, int) and 0 <= axis < rank,
                    f"axis {axis} of a rank-{rank} source by a rank-{len(index.shape)} index")  # fmt: skip
        for d in range(rank):
            if d != axis and src.shape[d] != index.shape[d]:
                self.fail(f"src {list(src.shape)} and index {list(index.shape)} differ in dim {d}")
        if not (res.shape == index.shape and res.element == src.element):
            self.fail(f"gathering {src} by {index} is not {res}")


class JoinOp(Op):
    """Two tiles of one shape stacked along a new last dimension of size 2."""

    name = "tt.join"
    traits = frozenset({Pure, ShapeOnly})

    def __init__(self, a: Value, b: Value, type: Type, loc: Loc = UNKNOWN_LOC):
        super().__init__([a, b], [type], loc=loc)

    def _verify(self) -> None:
        self.expect_counts(2, 1)
        a, b, res = self.operands[0].type, self.operands[1].type, self.result.type
        if a != b:
            self.fail(f"joined tiles differ: {a} vs {b}")
        if not (res.shape == (*a.shape, 2) and res.element == a.element):
            self.fail(f"{a} joined is not {res}")


class SplitOp(Op):
    """The inverse of join: a tile whose last dimension is 2 gives two tiles."""

    name = "tt.split"
    traits = frozenset({Pure, ShapeOnly})

    def __init__(self, x: Value, type: Type, loc: Loc = UNKNOWN_LOC):
        super().__init__([x], [type, type], loc=loc)

    def _verify(self) -> None:
        self.expect_counts(1, 2)
        src = self.operands[0].type
        if not (src.is_tensor and src.shape[-1:] == (2,)):
            self.fail(f"{src}: the last dimension must be 2")
        for r in self.results:
            if not (r.type.shape == src.shape[:-1] and r.type.element == src.element):
                self.fail(f"{src} does not split into {r.type}")


class CatOp(Op):
    """Two tiles concatenated along dimension 0."""

    name = "tt.cat"
    traits = frozenset({Pure, ShapeOnly})

    def __init__(self, a: Value, b: Value, type: Type, loc: Loc = UNKNOWN_LOC):
        super().__init__([a, b], [type], loc=loc)

    def _verify(self) -> None:
        self.expect_counts(2, 1)
        a, b, res = self.operands[0].type, self.operands[1].type, self.result.type
        ok = a.element == b.element == res.element and a.shape[1:] == b.shape[1:] == res.shape[1:]
        if not (ok and res.shape[0] == a.shape[0] + b.shape[0]):
            self.fail(f"{a} and {b} do not concatenate to {res}")
