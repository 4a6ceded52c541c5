"""Indexing ops: constants, the program's position in the launch grid, and index ranges."""

from __future__ import annotations

from ..core import UNKNOWN_LOC, Loc, Op
from ..traits import LayoutFree, Pure, Uniform
from ..types import Type, i32


class ConstantOp(Op):
    """A compile-time constant: a scalar, or a tile with every element ``value``."""

    name = "arith.constant"
    traits = frozenset({Pure, LayoutFree, Uniform})

    def __init__(self, value, type: Type, loc: Loc = UNKNOWN_LOC):
        super().__init__([], [type], {"value": value}, loc=loc)

    @property
    def value(self):
        return self.attrs["value"]

    def _verify(self) -> None:
        self.expect_counts(0, 1)
        self.expect("value" in self.attrs, "needs a value")


class ProgramIdOp(Op):
    """The index of this program instance along grid ``axis`` (0, 1 or 2): an i32."""

    name = "tt.get_program_id"
    traits = frozenset({Pure})

    def __init__(self, axis: int, loc: Loc = UNKNOWN_LOC):
        super().__init__([], [i32], {"axis": axis}, loc=loc)

    def _verify(self) -> None:
        self.expect_counts(0, 1)
        if self.attrs.get("axis") not in (0, 1, 2):
            self.fail(f"axis {self.attrs.get('axis')} is not 0, 1 or 2")
        self.expect(self.result.type == i32, "gives an i32")


class NumProgramsOp(Op):
    """The number of program instances along grid ``axis``: an i32."""

    name = "tt.get_num_programs"
    traits = frozenset({Pure})

    def __init__(self, axis: int, loc: Loc = UNKNOWN_LOC):
        super().__init__([], [i32], {"axis": axis}, loc=loc)

    def _verify(self) -> None:
        self.expect_counts(0, 1)
        if self.attrs.get("axis") not in (0, 1, 2):
            self.fail(f"axis {self.attrs.get('axis')} is not 0, 1 or 2")
        self.expect(self.result.type == i32, "gives an i32")


class MakeRangeOp(Op):
    """``[start, start+1, ..., end-1]`` as a 1-d i32 tile (``end - start`` a power of 2)."""

    name = "tt.make_range"
    traits = frozenset({Pure, LayoutFree})

    def __init__(self, start: int, end: int, type: Type, loc: Loc = UNKNOWN_LOC):
        super().__init__([], [type], {"start": start, "end": end}, loc=loc)

    def _verify(self) -> None:
        self.expect_counts(0, 1)
        n = self.attrs["end"] - self.attrs["start"]
        if not (n > 0 and not n & (n - 1)):
            self.fail(f"range length {n} is not a power of two")
        t = self.result.type
        if not (t.is_tensor and t.shape == (n,) and t.element == i32):
            self.fail(f"gives tensor<{n}xi32>, not {t}")
