"""GPU ops: layout conversions and shared-memory buffers, placed by the GPU passes."""

from __future__ import annotations

from ..core import UNKNOWN_LOC, Loc, Op, Value
from ..types import Type

# --------------------------------------------------------------------------- GPU layouts


class ConvertLayoutOp(Op):
    """The same tile in another layout: only which thread holds which element changes.

    Inserted by the GPU layout passes where a value's layout differs from what a user
    needs; the backend moves the elements (registers, shuffles or shared memory).
    Without layouts it is the identity.
    """

    name = "ttg.convert_layout"

    def __init__(self, x: Value, type: Type, loc: Loc = UNKNOWN_LOC):
        super().__init__([x], [type], loc=loc)

    @property
    def src(self) -> Value:
        return self.operands[0]


# --------------------------------------------------------------------------- shared memory


class LocalAllocOp(Op):
    """A shared-memory buffer holding one tile: its type is the tile's with a *shared* layout.

    The shared layout (``#swizzled_shared<...>``) says at which offset each element sits.
    attrs: ``offset``, the buffer's first byte in the program's shared memory, filled in by
    the ``allocate-shared-memory`` pass (absent before). Not pure: two allocations are two buffers.

        %buf = ttg.local_alloc {offset = 0} : tensor<64x64xf32, #swizzled_shared<...>>
    """

    name = "ttg.local_alloc"
    pure = False

    def __init__(self, type: Type, offset: int | None = None, loc: Loc = UNKNOWN_LOC):
        super().__init__([], [type], {"offset": offset}, loc=loc)

    @property
    def nbytes(self) -> int:
        """Bytes the buffer takes (bools take one byte each)."""
        t = self.result.type
        return t.numel * max(1, t.element.itemsize)


class LocalStoreOp(Op):
    """Write the tile ``value`` into the shared buffer ``buf`` (same shape and element type)."""

    name = "ttg.local_store"
    pure = False

    def __init__(self, buf: Value, value: Value, loc: Loc = UNKNOWN_LOC):
        super().__init__([buf, value], [], loc=loc)

    @property
    def buf(self) -> Value:
        return self.operands[0]

    @property
    def value(self) -> Value:
        return self.operands[1]


class LocalLoadOp(Op):
    """Read the shared buffer ``buf`` into a tile of ``type`` (a register layout, same shape)."""

    name = "ttg.local_load"
    pure = False

    def __init__(self, buf: Value, type: Type, loc: Loc = UNKNOWN_LOC):
        super().__init__([buf], [type], loc=loc)

    @property
    def buf(self) -> Value:
        return self.operands[0]
