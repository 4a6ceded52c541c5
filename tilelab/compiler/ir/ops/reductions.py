"""Reduction ops: reductions and scans along an axis, their combine terminator, and dot."""

from __future__ import annotations

from ..core import UNKNOWN_LOC, Block, Loc, Op, Region, Value
from ..traits import Pure, SameLayout, SameOperandsAndResultShape, Terminator
from ..types import Type


class ReduceOp(Op):
    """Reduce ``operands`` along ``axis`` with the combine region.

    The region's block takes ``2n`` scalars (n accumulated, n new) and ends with a
    ``ReduceReturnOp`` of ``n`` scalars. Results: one per operand, ``axis`` removed.
    """

    name = "tt.reduce"
    traits = frozenset({Pure})

    def __init__(
        self,
        operands: list[Value],
        axis: int,
        result_types: list[Type],
        loc: Loc = UNKNOWN_LOC,
    ):
        super().__init__(operands, result_types, {"axis": axis}, loc=loc)
        elems = [v.type.element for v in operands]
        self.add_region(Region([Block(elems + elems)]))

    @property
    def combine(self) -> Block:
        return self.regions[0].block


class ScanOp(Op):
    """Inclusive scan of ``operands`` along ``axis`` with the combine region (as ReduceOp)."""

    name = "tt.scan"
    traits = frozenset({Pure, SameLayout, SameOperandsAndResultShape})

    def __init__(
        self,
        operands: list[Value],
        axis: int,
        reverse: bool = False,
        loc: Loc = UNKNOWN_LOC,
    ):
        super().__init__(
            operands,
            [v.type for v in operands],
            {"axis": axis, "reverse": reverse},
            loc=loc,
        )
        elems = [v.type.element for v in operands]
        self.add_region(Region([Block(elems + elems)]))

    @property
    def combine(self) -> Block:
        return self.regions[0].block


class ReduceReturnOp(Op):
    """Ends a combine region with the combined scalars."""

    name = "tt.reduce.return"
    traits = frozenset({Pure, Terminator})

    def __init__(self, values: list[Value], loc: Loc = UNKNOWN_LOC):
        super().__init__(values, [], loc=loc)


class DotOp(Op):
    """``acc + a @ b`` for tiles ``[M, K] x [K, N] -> [M, N]`` (batched with a leading dim).

    ``input_precision`` is ``ieee``, ``tf32`` or ``tf32x3`` for f32 inputs.
    """

    name = "tt.dot"
    traits = frozenset({Pure})

    def __init__(
        self,
        a,
        b,
        acc,
        input_precision="ieee",
        max_num_imprecise_acc=0,
        loc=UNKNOWN_LOC,
    ):
        attrs = {
            "input_precision": input_precision,
            "max_num_imprecise_acc": max_num_imprecise_acc,
        }
        super().__init__([a, b, acc], [acc.type], attrs, loc=loc)
