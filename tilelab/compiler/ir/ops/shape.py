"""Shape ops: ops that move a tile's elements around without computing new values."""

from __future__ import annotations

from ..core import UNKNOWN_LOC, Loc, Op, Value
from ..traits import LayoutFree, Pure, ShapeOnly, Uniform
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


class BroadcastOp(_ShapeOp):
    """A tile stretched along its size-1 dimensions (same rank)."""

    name = "tt.broadcast"
    traits = frozenset({Pure, ShapeOnly})


class ExpandDimsOp(_ShapeOp):
    """A new size-1 dimension at ``axis``."""

    name = "tt.expand_dims"
    traits = frozenset({Pure, ShapeOnly})


class ReshapeOp(_ShapeOp):
    """Same elements, new shape, row-major order (``can_reorder`` lets a backend permute)."""

    name = "tt.reshape"
    traits = frozenset({Pure, ShapeOnly})


class TransOp(_ShapeOp):
    """Dimensions permuted: result dim ``i`` is source dim ``order[i]``."""

    name = "tt.trans"
    traits = frozenset({Pure, ShapeOnly})


class FlipOp(_ShapeOp):
    """Elements reversed along ``dim``."""

    name = "tt.flip"
    traits = frozenset({Pure, ShapeOnly})


class SortOp(_ShapeOp):
    """Elements sorted along ``dim`` (ascending unless ``descending``)."""

    name = "tt.sort"
    traits = frozenset({Pure})


class JoinOp(Op):
    """Two tiles of one shape stacked along a new last dimension of size 2."""

    name = "tt.join"
    traits = frozenset({Pure, ShapeOnly})

    def __init__(self, a: Value, b: Value, type: Type, loc: Loc = UNKNOWN_LOC):
        super().__init__([a, b], [type], loc=loc)


class SplitOp(Op):
    """The inverse of join: a tile whose last dimension is 2 gives two tiles."""

    name = "tt.split"
    traits = frozenset({Pure, ShapeOnly})

    def __init__(self, x: Value, type: Type, loc: Loc = UNKNOWN_LOC):
        super().__init__([x], [type, type], loc=loc)


class CatOp(Op):
    """Two tiles concatenated along dimension 0."""

    name = "tt.cat"
    traits = frozenset({Pure, ShapeOnly})

    def __init__(self, a: Value, b: Value, type: Type, loc: Loc = UNKNOWN_LOC):
        super().__init__([a, b], [type], loc=loc)
