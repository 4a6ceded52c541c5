"""GPU ops: layout conversions, shared-memory buffers and asynchronous copies, placed by the GPU passes."""

from __future__ import annotations

from ..core import UNKNOWN_LOC, Loc, Op, Value
from ..traits import (
    AsyncCopy,
    MemoryRead,
    MemoryWrite,
    Pure,
    SameOperandsAndResultShape,
    SameOperandsAndResultType,
    SharedMemory,
)
from ..types import Type, i32
from .shape import check_permuted

#: ``layouts.linear.OFFSET``, the input dim of a shared buffer's layout (a name, not an import:
#: the CPU pipeline loads these ops but never the layout package, for its cold compile)
SHARED_IN_DIM = "offset"

# --------------------------------------------------------------------------- GPU layouts


class ConvertLayoutOp(Op):
    """The same tile in another layout: only which thread holds which element changes.

    Inserted by the GPU layout passes where a value's layout differs from what a user
    needs; the backend moves the elements (registers, shuffles or shared memory).
    Without layouts it is the identity.
    """

    name = "ttg.convert_layout"
    traits = frozenset({Pure, SameOperandsAndResultShape})

    def __init__(self, x: Value, type: Type, loc: Loc = UNKNOWN_LOC):
        super().__init__([x], [type], loc=loc)

    @property
    def src(self) -> Value:
        return self.operands[0]

    def _verify(self) -> None:
        self.expect_counts(1, 1)
        self.expect(self.src.type.element == self.result.type.element, "element types differ")


# --------------------------------------------------------------------------- shared memory


class LocalAllocOp(Op):
    """A shared-memory buffer holding one tile: its type is the tile's with a *shared* layout.

    The shared layout (``#swizzled_shared<...>``) says at which offset each element sits.
    attrs: ``offset``, the buffer's first byte in the program's shared memory, filled in by
    the ``allocate-shared-memory`` pass (absent before); ``stages`` (absent for a plain buffer):
    the buffer is a *ring* of that many copies of the tile, one after the other, each reached
    through ``ttg.memdesc_index`` (the software pipeliner's stages). Not pure: two allocations
    are two buffers.

        %buf = ttg.local_alloc {offset = 0} : tensor<64x64xf32, #swizzled_shared<...>>
        %ring = ttg.local_alloc {stages = 3} : tensor<128x32xf16, #swizzled_shared<...>>

    A ring keeps the type of one stage (not ``[stages, *tile]``): shared layouts are linear
    maps over power-of-two dims, and three stages (the default) is not one.
    """

    name = "ttg.local_alloc"
    traits = frozenset({SharedMemory})

    def __init__(self, type: Type, offset: int | None = None, stages: int | None = None, loc: Loc = UNKNOWN_LOC):
        attrs = {"offset": offset} if stages is None else {"offset": offset, "stages": stages}
        super().__init__([], [type], attrs, loc=loc)

    @property
    def stages(self) -> int:
        """Copies of the tile the buffer holds (1 unless it is a ring)."""
        return self.attrs.get("stages") or 1

    @property
    def stage_bytes(self) -> int:
        """Bytes one copy of the tile takes (bools take one byte each)."""
        t = self.result.type
        return t.numel * max(1, t.element.itemsize)

    @property
    def nbytes(self) -> int:
        """Bytes the buffer takes: every stage of a ring."""
        return self.stage_bytes * self.stages

    def _verify(self) -> None:
        self.expect_counts(0, 1)
        self.expect(self.result.type.is_tensor, "allocates a tile-shaped buffer")
        stages = self.attrs.get("stages")
        if not (stages is None or (isinstance(stages, int) and stages >= 1)):
            self.fail(f"stages {stages} is not a count")


class LocalStoreOp(Op):
    """Write the tile ``value`` into the shared buffer ``buf`` (same shape and element type)."""

    name = "ttg.local_store"
    traits = frozenset({MemoryWrite, SharedMemory})

    def __init__(self, buf: Value, value: Value, loc: Loc = UNKNOWN_LOC):
        super().__init__([buf, value], [], loc=loc)

    @property
    def buf(self) -> Value:
        return self.operands[0]

    @property
    def value(self) -> Value:
        return self.operands[1]

    def _verify(self) -> None:
        self.expect_counts(2, 0)
        _check_shared_access(self, self.buf.type, self.value.type)


class LocalLoadOp(Op):
    """Read the shared buffer ``buf`` into a tile of ``type`` (a register layout, same shape)."""

    name = "ttg.local_load"
    traits = frozenset({MemoryRead, SharedMemory})

    def __init__(self, buf: Value, type: Type, loc: Loc = UNKNOWN_LOC):
        super().__init__([buf], [type], loc=loc)

    @property
    def buf(self) -> Value:
        return self.operands[0]

    def _verify(self) -> None:
        self.expect_counts(1, 1)
        _check_shared_access(self, self.buf.type, self.result.type)


class MemDescIndexOp(Op):
    """One stage of a ring buffer: ``ring`` (a ``local_alloc`` with ``stages``) at the i32 ``index``.

    The view has the ring's type (one stage's tile and swizzle); its bytes start
    ``index * stage_bytes`` after the ring's. Pure: it only names bytes, it moves none.

        %view = ttg.memdesc_index %ring, %slot : tensor<128x32xf16, #swizzled_shared<...>>
    """

    name = "ttg.memdesc_index"
    traits = frozenset({Pure, SharedMemory})

    def __init__(self, ring: Value, index: Value, loc: Loc = UNKNOWN_LOC):
        super().__init__([ring, index], [ring.type], loc=loc)

    @property
    def ring(self) -> Value:
        return self.operands[0]

    @property
    def index(self) -> Value:
        return self.operands[1]

    def _verify(self) -> None:
        self.expect_counts(2, 1)
        ring = self.ring.defining_op
        if not isinstance(ring, LocalAllocOp) or ring.attrs.get("stages") is None:
            self.fail("the indexed buffer is not a ring (ttg.local_alloc with stages)")
        self.expect(
            self.index.type == i32 and self.result.type == self.ring.type,
            "needs an i32 index and gives the ring's type",
        )


class MemDescTransOp(Op):
    """A shared buffer read with its dims permuted (result dim ``i`` is source dim ``order[i]``).

    No bytes move: the result names the source's bytes, and its shared layout is the
    source's with the dims permuted (element ``(j, i)`` of the view sits where ``(i, j)`` of
    the source does). A tile stored once serves the dots that read it as is and those that
    read its transpose (attention's backward reads ``q`` as ``q`` and ``tl.trans(q)``); wgmma
    reads either through its descriptor. Pure, like ``memdesc_index``.

        %t = ttg.memdesc_trans %buf {order = [1, 0]} : tensor<64x128xf16, #nvmma_shared<...>>
    """

    name = "ttg.memdesc_trans"
    traits = frozenset({Pure, SharedMemory})

    def __init__(self, src: Value, type: Type, order=(1, 0), loc: Loc = UNKNOWN_LOC):
        super().__init__([src], [type], {"order": list(order)}, loc=loc)

    @property
    def src(self) -> Value:
        return self.operands[0]

    def _verify(self) -> None:
        check_permuted(self)


def shared_root(v: Value) -> Value:
    """The buffer (``local_alloc``) or ring stage (``memdesc_index``) whose bytes the shared value ``v`` names."""
    while isinstance(v.defining_op, MemDescTransOp):
        v = v.defining_op.src
    return v


def shared_users(v: Value) -> list[Op]:
    """The ops using the shared buffer ``v``, directly or through ``memdesc_trans`` views of it."""
    found = []
    for user in v.users:
        if isinstance(user, MemDescTransOp):
            found += shared_users(user.result)
        else:
            found.append(user)
    return found


# --------------------------------------------------------------------------- asynchronous copies


class AsyncCopyGlobalToLocalOp(Op):
    """Start copying the elements ``ptrs`` point to into the shared buffer ``view``, without waiting.

    Operands: view (a shared buffer or ring stage), ptrs (a pointer tile of the view's
    shape, in a register layout: which thread copies which elements), then ``mask`` when
    present (attr ``has_mask``). Masked-off elements are written as zeros. The copy lands
    some time before the ``ttg.async_wait`` that lets its group finish; the bytes are
    visible to other threads only after a barrier that follows that wait. Lowered to
    ``cp.async`` on CUDA.

        ttg.async_copy_global_to_local %view, %ptrs, %mask : tensor<128x32xf16, #swizzled_shared<...>>
    """

    name = "ttg.async_copy_global_to_local"
    traits = frozenset({MemoryRead, MemoryWrite, SharedMemory, AsyncCopy})

    def __init__(self, view: Value, ptrs: Value, mask: Value | None = None, loc: Loc = UNKNOWN_LOC):
        operands = [view, ptrs] + ([mask] if mask is not None else [])
        super().__init__(operands, [], {"has_mask": mask is not None}, loc=loc)

    @property
    def view(self) -> Value:
        return self.operands[0]

    @property
    def ptrs(self) -> Value:
        return self.operands[1]

    @property
    def mask(self) -> Value | None:
        return self.operands[2] if self.attrs["has_mask"] else None

    def _verify(self) -> None:
        self.expect_counts(2 + self.attrs["has_mask"], 0)
        view, ptrs = self.view.type, self.ptrs.type
        if not ptrs.is_tensor or not ptrs.element.is_pointer or ptrs.element.pointee != view.element:
            self.fail(f"pointers {ptrs} do not point to elements of the buffer {view}")
        shapes = {v.type.shape for v in self.operands}
        if len(shapes) != 1:
            self.fail(f"operand shapes differ: {sorted(shapes)}")


class AsyncCommitGroupOp(Op):
    """Close the group of asynchronous copies this thread started since the last commit.

    ttg.async_commit_group
    """

    name = "ttg.async_commit_group"
    traits = frozenset()

    def __init__(self, loc: Loc = UNKNOWN_LOC):
        super().__init__([], [], loc=loc)

    def _verify(self) -> None:
        self.expect_counts(0, 0)


class AsyncWaitOp(Op):
    """Wait until at most ``num`` of this thread's committed copy groups are still in flight.

    Groups finish in commit order, so ``num = 1`` waits for all but the newest one.
    Other threads' copies are visible only after a barrier that follows the wait.

        ttg.async_wait {num = 1}
    """

    name = "ttg.async_wait"
    traits = frozenset()

    def __init__(self, num: int, loc: Loc = UNKNOWN_LOC):
        super().__init__([], [], {"num": int(num)}, loc=loc)

    @property
    def num(self) -> int:
        return self.attrs["num"]

    def _verify(self) -> None:
        self.expect_counts(0, 0)
        self.expect(isinstance(self.attrs.get("num"), int) and self.attrs["num"] >= 0, "num must be a non-negative int")


#: the type of a ring stage index
STAGE_INDEX = i32


# --------------------------------------------------------------------------- Hopper tensor cores


class WarpGroupDotOp(Op):
    """``acc + a @ b`` on Hopper tensor cores, reading A and B straight from shared buffers.

    Operands: ``a`` (an M x K shared buffer, or a tile in registers laid out as the
    instruction's A fragment, ``#dot_op<opIdx=0, parent=#wgmma<...>>``), ``b`` (K x N, a shared
    buffer), ``acc`` (M x N in registers, a ``#wgmma`` layout); the result has the accumulator's
    type; attrs are those of the ``tt.dot`` it replaces. Placed by ``accelerate-dot`` on sm_90a
    and lowered to ``wgmma.mma_async``. Not pure: it reads shared memory.

        %d = ttng.warp_group_dot %a_smem, %b_smem, %acc : tensor<128x128xf32, #wgmma<...>>
    """

    name = "ttng.warp_group_dot"
    traits = frozenset({MemoryRead, SharedMemory})

    def __init__(self, a: Value, b: Value, acc: Value, attrs: dict | None = None, loc: Loc = UNKNOWN_LOC):
        super().__init__([a, b, acc], [acc.type], dict(attrs or {}), loc=loc)

    @property
    def a(self) -> Value:
        return self.operands[0]

    @property
    def b(self) -> Value:
        return self.operands[1]

    @property
    def acc(self) -> Value:
        return self.operands[2]

    @property
    def a_in_registers(self) -> bool:
        """Whether A is a register tile (the ``{a0, a1, a2, a3}`` form of wgmma), not a shared buffer.

        A shared buffer's layout maps offsets; a register tile's maps registers, lanes and warps
        (its ``#dot_op`` conversion may be gone: the accumulator layout it came from is the same map).
        """
        layout = self.a.type.layout
        return layout is not None and SHARED_IN_DIM not in layout.in_dims

    def _verify(self) -> None:
        self.expect_counts(3, 1)
        a, b, acc = (v.type for v in self.operands)
        if a.shape[-1] != b.shape[0] or (a.shape[0], b.shape[-1]) != tuple(acc.shape) or a.element != b.element:
            self.fail(f"operands {a} x {b} do not make {acc}")
        self.expect(self.result.type == acc, "the result must have the accumulator's type")


class WarpGroupDotWaitOp(Op):
    """Wait until at most ``pendings`` of this warpgroup's wgmma groups are in flight; gives ``acc``.

    A ``ttng.warp_group_dot`` with ``pendings = 1`` leaves its group running (the next
    iteration's copies overlap it); its accumulator may only be read after this wait.

        %r = ttng.warp_group_dot_wait %acc {pendings = 0} : tensor<128x128xf32, #wgmma<...>>
    """

    name = "ttng.warp_group_dot_wait"
    traits = frozenset({SameOperandsAndResultType})  # not pure: it orders the tensor cores' writes

    def __init__(self, acc: Value, pendings: int = 0, loc: Loc = UNKNOWN_LOC):
        super().__init__([acc], [acc.type], {"pendings": int(pendings)}, loc=loc)

    def _verify(self) -> None:
        self.expect_counts(1, 1)
        pendings = self.attrs.get("pendings")
        self.expect(isinstance(pendings, int) and pendings >= 0, "pendings must be a non-negative int")


class FenceAsyncSharedOp(Op):
    """Order this thread's earlier ordinary shared-memory writes before later *async-proxy* reads.

    ``wgmma`` (and TMA) read shared memory through the async proxy, which does not see
    stores from registers (``st.shared``, ``stmatrix``) until the writing thread runs this fence
    (``fence.proxy.async.shared::cta``); a barrier after it then lets every thread's
    wgmma read every thread's bytes. Bytes that land through ``cp.async`` or TMA copies
    (ops with the ``AsyncCopy`` trait) need none once waited for, as in Triton's and CUTLASS's
    pipelined loops; ``hoist-fences`` moves a fence out of a loop that stores nothing from registers.

        ttng.fence_async_shared
    """

    name = "ttng.fence_async_shared"
    traits = frozenset()

    def __init__(self, loc: Loc = UNKNOWN_LOC):
        super().__init__([], [], loc=loc)

    def _verify(self) -> None:
        self.expect_counts(0, 0)


def shared_reads(op: Op) -> list[Value]:
    """The shared buffers (or ring stages) ``op`` reads: what a barrier pass must order it after.

    ``ttg.local_load`` reads its buffer; ``ttng.warp_group_dot`` reads its operand buffers
    (B, and A unless A is in registers). A ``memdesc_trans`` view counts as the buffer it views.

        >>> shared_reads(FenceAsyncSharedOp())
        []
    """
    if isinstance(op, LocalLoadOp):
        return [shared_root(op.buf)]
    if isinstance(op, WarpGroupDotOp):
        return [shared_root(v) for v in ([op.b] if op.a_in_registers else [op.a, op.b])]
    return []


def _check_shared_access(op: Op, buf: Type, tile: Type) -> None:
    """A local store/load moves a tile of the buffer's shape and element type."""
    if not buf.is_tensor or buf.shape != tile.shape or buf.element != tile.element:
        op.fail(f"tile {tile} does not match the shared buffer {buf}")
