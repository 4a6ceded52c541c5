"""Reduction ops: reductions and scans along an axis, their combine terminator, histograms, and dot."""

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

    def _verify(self) -> None:
        n = len(self.operands)
        self.expect_counts((1, None), n, regions=1)
        _verify_combine(self, n)
        for v, r in zip(self.operands, self.results):
            shape = list(v.type.shape)
            if not (0 <= self.attrs["axis"] < len(shape)):
                self.fail(f"axis {self.attrs['axis']} out of range for {v.type}")
            del shape[self.attrs["axis"]]
            if tuple(shape) != r.type.shape:
                self.fail(f"reducing {v.type} does not give {r.type}")


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

    def _verify(self) -> None:
        n = len(self.operands)
        self.expect_counts((1, None), n, regions=1)
        _verify_combine(self, n)
        for v, r in zip(self.operands, self.results):
            if v.type != r.type:
                self.fail(f"a scan of {v.type} gives {v.type}, not {r.type}")


class ReduceReturnOp(Op):
    """Ends a combine region with the combined scalars."""

    name = "tt.reduce.return"
    traits = frozenset({Pure, Terminator})

    def __init__(self, values: list[Value], loc: Loc = UNKNOWN_LOC):
        super().__init__(values, [], loc=loc)

    def _verify(self) -> None:
        self.expect_counts((0, None), 0)
        self.expect(all(not v.type.is_tensor for v in self.operands), "returns scalars")


class HistogramOp(Op):
    """How many elements of a 1-d integer tile equal each of ``0 .. num_bins-1``: an ``i32`` tile of
    ``num_bins`` (the result's extent). Elements outside that range, and where the optional ``mask`` (an
    ``i1`` tile of the source's shape) is false, count nowhere."""

    name = "tt.histogram"
    traits = frozenset({Pure})

    def __init__(self, src: Value, type: Type, mask: Value | None = None, loc: Loc = UNKNOWN_LOC):
        super().__init__([src] if mask is None else [src, mask], [type], loc=loc)

    @property
    def src(self) -> Value:
        return self.operands[0]

    @property
    def mask(self) -> Value | None:
        return self.operands[1] if len(self.operands) > 1 else None

    def _verify(self) -> None:
        self.expect_counts((1, 2), 1)
        src, res = self.src.type, self.result.type
        self.expect(src.is_tensor and len(src.shape) == 1 and src.element.is_int,
                    f"counts the values of a 1-d integer tile, got {src}")  # fmt: skip
        self.expect(res.is_tensor and len(res.shape) == 1 and res.element.is_int and res.element.bits == 32,
                    f"counts into a 1-d i32 tile, got {res}")  # fmt: skip
        if self.mask is not None:
            m = self.mask.type
            self.expect(m.is_tensor and m.shape == src.shape and m.element.bits == 1,
                        f"the mask must be an i1 tile of the source's shape, got {m}")  # fmt: skip


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

    def _verify(self) -> None:
        self.expect_counts(3, 1)
        a, b, acc = (v.type for v in self.operands)
        ok = a.is_tensor and b.is_tensor and acc.is_tensor and len(a.shape) == len(b.shape) == len(acc.shape) >= 2
        if not (ok and a.shape[-1] == b.shape[-2]):
            self.fail(f"operands {a} x {b} do not multiply")
        if (*a.shape[:-1], b.shape[-1]) != acc.shape:
            self.fail(f"operands {a} x {b} do not make {acc}")
        self.expect(self.result.type == acc, "the result must have the accumulator's type")


def _verify_combine(op: Op, n: int) -> None:
    """A combine region takes ``2n`` scalars (the operands' elements twice) and returns ``n``."""
    elems = [v.type.element for v in op.operands]
    op.expect([a.type for a in op.combine.args] == elems + elems, "the combine region takes the elements twice")
    op.expect_terminator(op.combine, ReduceReturnOp, n)
