"""The builder: where new ops go, and with which source location.

    b = Builder(func.body)
    pid = b.insert(ProgramIdOp(0, loc=b.loc)).result
    with b.at_end(for_op.body):
        ...

Passes and the frontend create ops through a builder so that insertion points and
locations are handled in one place.
"""

from __future__ import annotations

from contextlib import contextmanager

from .core import UNKNOWN_LOC, Block, Loc, Op


class Builder:
    """Inserts ops into a block, at the end or before a given op."""

    def __init__(self, block: Block | None = None, loc: Loc = UNKNOWN_LOC):
        self.block = block
        self.index: int | None = None  # None: append at the end
        self.loc = loc

    def insert(self, op: Op) -> Op:
        """Insert ``op`` at the insertion point; give it the current location if it has none."""
        if op.loc is UNKNOWN_LOC:
            op.loc = self.loc
        if self.index is None:
            self.block.append(op)
        else:
            self.block.insert(self.index, op)
            self.index += 1
        return op

    @contextmanager
    def at_end(self, block: Block):
        """Temporarily insert at the end of ``block``."""
        saved = (self.block, self.index)
        self.block, self.index = block, None
        try:
            yield self
        finally:
            self.block, self.index = saved

    @contextmanager
    def before(self, op: Op):
        """Temporarily insert just before ``op`` in its block."""
        saved = (self.block, self.index)
        self.block, self.index = op.parent, op.parent.ops.index(op)
        try:
            yield self
        finally:
            self.block, self.index = saved

    @contextmanager
    def location(self, loc: Loc):
        """Temporarily give new ops ``loc``."""
        saved, self.loc = self.loc, loc
        try:
            yield self
        finally:
            self.loc = saved
