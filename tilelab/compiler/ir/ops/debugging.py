"""Debugging ops: device-side printing, assertions and barriers."""

from __future__ import annotations

from ..core import UNKNOWN_LOC, Loc, Op, Value


class PrintOp(Op):
    """``device_print``: prints ``prefix`` and the values, per program."""

    name = "tt.print"
    traits = frozenset()

    def __init__(
        self,
        prefix: str,
        values: list[Value],
        hex: bool = False,
        loc: Loc = UNKNOWN_LOC,
    ):
        super().__init__(values, [], {"prefix": prefix, "hex": hex}, loc=loc)

    def _verify(self) -> None:
        self.expect_counts((0, None), 0)
        self.expect(isinstance(self.attrs.get("prefix", ""), str), "the prefix must be a string")


class AssertOp(Op):
    """``device_assert``: fails the launch where ``cond`` is false, with ``message``."""

    name = "tt.assert"
    traits = frozenset()

    def __init__(self, cond: Value, message: str, loc: Loc = UNKNOWN_LOC):
        super().__init__([cond], [], {"message": message}, loc=loc)

    def _verify(self) -> None:
        self.expect_counts(1, 0)
        self.expect(self.operands[0].type.element.is_scalar, "the condition must be scalars")


class BarrierOp(Op):
    """``debug_barrier``: every thread of the program waits here."""

    name = "gpu.barrier"
    traits = frozenset()

    def __init__(self, loc: Loc = UNKNOWN_LOC):
        super().__init__([], [], loc=loc)

    def _verify(self) -> None:
        self.expect_counts(0, 0)
