"""Hopper bulk tensor copies (TMA) and the shared-memory barriers (mbarriers) that say when they landed.

A tensor descriptor's block can be copied from global to shared memory by one instruction of
one thread (``cp.async.bulk.tensor``) instead of a ``cp.async`` per 16 bytes per thread: the
hardware reads a *tensor map* (the array's base, shape, strides, the box to copy, the swizzle to
write it in), fills out-of-bounds elements, and counts the bytes that landed on an *mbarrier*,
a 64-bit object in shared memory. A thread waiting on the mbarrier's phase sees the bytes.

    %map = ttng.tensormap %a, %M, %K, %stride, %c1 {box = [128, 64], swizzle = 128, fill = "zero"} : i64
    %bars = ttg.local_alloc : tensor<4xi64, #swizzled_shared<...>>
    ttng.init_barriers %bars {count = 1, num = 3}
    ttng.async_tma_copy_global_to_local %stage, %map, %bars, %slot, %pred, %k, %m : tensor<128x64xf16, ...>
    ttng.wait_barrier %bars, %slot, %phase
    ttng.inval_barriers %bars {num = 3}
    ttng.async_tma_copy_local_to_global %buf, %cmap, %m, %n : tensor<128x64xf16, ...>

Placed on sm_90 for host tensor descriptors: ``software-pipeline`` copies their loads' tiles,
``tma-stores`` their stores' (through a shared buffer); the launch builds each tensor map
(``runtime.tensormaps``) and passes it by value.
"""

from __future__ import annotations

from ..core import UNKNOWN_LOC, Loc, Op, Value
from ..traits import AsyncCopy, MemoryRead, MemoryWrite, Pure, SharedMemory
from ..types import i1, i32, i64

#: what out-of-bounds elements of a box read as
FILLS = ("zero", "nan")


class TensorMapOp(Op):
    """The tensor map of a host descriptor, for boxes of ``box`` elements (outer dims first).

    Operands: the array's base pointer, its shape and its element strides (scalars: kernel
    arguments or constants, which the launch reads to encode the map). attrs: ``box``,
    ``swizzle`` (0, 32, 64 or 128: the shared layout's swizzle, which the copy writes) and
    ``fill`` (``zero`` or ``nan``). The result is the map's address, for the copies.
    """

    name = "ttng.tensormap"
    traits = frozenset({Pure})

    def __init__(self, base: Value, shape, strides, box, swizzle: int, fill: str = "zero", loc: Loc = UNKNOWN_LOC):
        attrs = {"box": [int(b) for b in box], "swizzle": int(swizzle), "fill": fill}
        super().__init__([base, *shape, *strides], [i64], attrs, loc=loc)

    @property
    def rank(self) -> int:
        return len(self.attrs["box"])

    @property
    def base(self) -> Value:
        return self.operands[0]

    @property
    def shape(self) -> list[Value]:
        return self.operands[1 : 1 + self.rank]

    @property
    def strides(self) -> list[Value]:
        return self.operands[1 + self.rank :]

    def _verify(self) -> None:
        self.expect_counts(1 + 2 * self.rank, 1)
        self.expect(self.base.type.is_pointer and not self.base.type.is_tensor, "the base is not a scalar pointer")
        self.expect(self.attrs["swizzle"] in (0, 32, 64, 128), "swizzle must be 0, 32, 64 or 128")
        self.expect(self.attrs["fill"] in FILLS, "fill must be 'zero' or 'nan'")
        self.expect(all(0 < b <= 256 for b in self.attrs["box"]), "box dims must be 1..256")


class AsyncTMACopyOp(Op):
    """Copy the box at ``coords`` (outer dims first) through tensor map ``map`` into the shared ``view``.

    Operands: view (a ring stage), map, the mbarrier buffer and the index of the mbarrier
    that counts the copy's bytes, ``pred`` (false: no copy, no arrival), then the coordinates
    (i32). One thread arrives on the mbarrier expecting the bytes and issues the copy; the
    view is written in the shared layout's swizzle, one box per swizzle-wide column block.
    """

    name = "ttng.async_tma_copy_global_to_local"
    traits = frozenset({MemoryRead, MemoryWrite, SharedMemory, AsyncCopy})

    def __init__(self, view: Value, map: Value, bars: Value, slot: Value, pred: Value, coords, loc=UNKNOWN_LOC):
        super().__init__([view, map, bars, slot, pred, *coords], [], loc=loc)

    @property
    def view(self) -> Value:
        return self.operands[0]

    @property
    def map(self) -> Value:
        return self.operands[1]

    @property
    def bars(self) -> Value:
        return self.operands[2]

    @property
    def slot(self) -> Value:
        return self.operands[3]

    @property
    def pred(self) -> Value:
        return self.operands[4]

    @property
    def coords(self) -> list[Value]:
        return self.operands[5:]

    def _verify(self) -> None:
        rank = len(self.view.type.shape)
        self.expect_counts(5 + rank, 0)
        self.expect(isinstance(self.map.defining_op, TensorMapOp), "the map is not a ttng.tensormap")
        self.expect(self.slot.type == i32 and self.pred.type == i1, "needs an i32 slot and an i1 predicate")
        self.expect(all(c.type == i32 for c in self.coords), "coordinates are i32")


class AsyncTMAStoreOp(Op):
    """Copy the shared buffer ``buf`` to the box at ``coords`` (outer dims first) through tensor map ``map``.

    Operands: buf (a ``#nvmma_shared`` tile, written and fenced before), map, then the
    coordinates (i32). One thread issues a copy per swizzle-wide column block and waits until
    the copies have read the buffer; out-of-bounds elements of the box are not written.
    """

    name = "ttng.async_tma_copy_local_to_global"
    traits = frozenset({MemoryRead, MemoryWrite, SharedMemory})

    def __init__(self, buf: Value, map: Value, coords, loc: Loc = UNKNOWN_LOC):
        super().__init__([buf, map, *coords], [], loc=loc)

    @property
    def buf(self) -> Value:
        return self.operands[0]

    @property
    def map(self) -> Value:
        return self.operands[1]

    @property
    def coords(self) -> list[Value]:
        return self.operands[2:]

    def _verify(self) -> None:
        self.expect_counts(2 + len(self.buf.type.shape), 0)
        self.expect(isinstance(self.map.defining_op, TensorMapOp), "the map is not a ttng.tensormap")
        self.expect(all(c.type == i32 for c in self.coords), "coordinates are i32")


class InitBarriersOp(Op):
    """Initialize the first ``num`` mbarriers of a buffer, each completing a phase after ``count`` arrivals."""

    name = "ttng.init_barriers"
    traits = frozenset({MemoryWrite, SharedMemory})

    def __init__(self, bars: Value, num: int, count: int = 1, loc: Loc = UNKNOWN_LOC):
        super().__init__([bars], [], {"num": int(num), "count": int(count)}, loc=loc)

    def _verify(self) -> None:
        self.expect_counts(1, 0)
        _check_barriers(self, self.operands[0], self.attrs["num"])


class InvalBarriersOp(Op):
    """Invalidate the first ``num`` mbarriers of a buffer (before its bytes serve anything else)."""

    name = "ttng.inval_barriers"
    traits = frozenset({MemoryWrite, SharedMemory})

    def __init__(self, bars: Value, num: int, loc: Loc = UNKNOWN_LOC):
        super().__init__([bars], [], {"num": int(num)}, loc=loc)

    def _verify(self) -> None:
        self.expect_counts(1, 0)
        _check_barriers(self, self.operands[0], self.attrs["num"])


class WaitBarrierOp(Op):
    """Wait until mbarrier ``slot`` of a buffer completes the phase of parity ``phase`` (0 or 1)."""

    name = "ttng.wait_barrier"
    traits = frozenset({MemoryRead, SharedMemory})

    def __init__(self, bars: Value, slot: Value, phase: Value, loc: Loc = UNKNOWN_LOC):
        super().__init__([bars, slot, phase], [], loc=loc)

    @property
    def bars(self) -> Value:
        return self.operands[0]

    def _verify(self) -> None:
        self.expect_counts(3, 0)
        _check_barriers(self, self.bars, 1)
        self.expect(all(v.type == i32 for v in self.operands[1:]), "slot and phase are i32")


def _check_barriers(op: Op, bars: Value, num: int) -> None:
    t = bars.type
    if not t.is_tensor or t.element != i64 or len(t.shape) != 1 or t.shape[0] < num:
        op.fail(f"{bars.type} is not a buffer of {num} mbarriers (i64)")
