"""Memory ops: pointer arithmetic, loads, stores and atomics on global memory."""

from __future__ import annotations

from dataclasses import dataclass

from ..core import UNKNOWN_LOC, Loc, Op, Value
from ..traits import Elementwise, MemoryRead, MemoryWrite, Pure, SameLayout, SameOperandsAndResultShape


class AddPtrOp(Op):
    """``ptr + offset`` in elements of the pointee (shapes already equal)."""

    name = "tt.addptr"
    traits = frozenset({Pure, Elementwise, SameLayout, SameOperandsAndResultShape})

    def __init__(self, ptr: Value, offset: Value, loc: Loc = UNKNOWN_LOC):
        super().__init__([ptr, offset], [ptr.type], loc=loc)

    def _verify(self) -> None:
        self.expect_counts(2, 1)
        ptr, offset = self.operands[0].type, self.operands[1].type
        self.expect(ptr.element.is_pointer, "first operand is not a pointer")
        if not (offset.element.is_scalar and offset.element.is_int):
            self.fail(f"offset {offset} is not an integer")
        self.expect(self.result.type == ptr, "the result must have the pointer's type")


class LoadOp(Op):
    """Read the elements ``ptr`` points to; masked-off lanes give ``other`` (or undefined).

    Operands: ptr, then mask and other when present (attrs ``has_mask``, ``has_other``),
    then, for a tensor descriptor's ``desc.load(offsets)``, the descriptor: its base, shape,
    strides and the block's offsets, scalars (attr ``descriptor``: the rank). The pointer tile
    and the mask already say what is read (every dimension bounds-checked); the descriptor
    says it again as a box, so that a GPU backend may copy it with one bulk tensor copy (TMA).
    attrs also carry ``cache``, ``eviction`` and ``volatile`` hints.
    """

    name = "tt.load"
    traits = frozenset({MemoryRead, SameLayout, SameOperandsAndResultShape})

    def __init__(
        self,
        ptr,
        type,
        mask=None,
        other=None,
        cache="",
        eviction="",
        volatile=False,
        loc=UNKNOWN_LOC,
        descriptor: Descriptor | None = None,
    ):
        operands = [ptr] + ([mask] if mask is not None else []) + ([other] if other is not None else [])
        attrs = {"has_mask": mask is not None, "has_other": other is not None}
        attrs.update(cache=cache, eviction=eviction, volatile=volatile)
        if descriptor is not None:
            operands += descriptor.values()
            attrs["descriptor"] = descriptor.rank
            if descriptor.checked:
                attrs["descriptor_checked"] = True
        super().__init__(operands, [type], attrs, loc=loc)

    @property
    def ptr(self) -> Value:
        return self.operands[0]

    @property
    def mask(self) -> Value | None:
        return self.operands[1] if self.attrs["has_mask"] else None

    @property
    def other(self) -> Value | None:
        return self.operands[1 + self.attrs["has_mask"]] if self.attrs["has_other"] else None

    @property
    def descriptor(self) -> Descriptor | None:
        """The tensor descriptor and block offsets this load reads through, if it came from one."""
        return _descriptor(self, 1 + self.attrs["has_mask"] + self.attrs["has_other"])

    def _verify_same(self, same_type: bool) -> None:
        _same_tile_shapes(self, [*self.operands[: 1 + self.attrs["has_mask"] + self.attrs["has_other"]], self.result])

    def _verify(self) -> None:
        n = 1 + self.attrs["has_mask"] + self.attrs["has_other"]
        self.expect_counts(n + _descriptor_count(self), 1)
        ptr = self.ptr.type
        self.expect(ptr.element.is_pointer, "address operand is not a pointer")
        if self.mask is not None:
            if not self.mask.type.element.is_bool:
                self.fail(f"mask {self.mask.type} is not i1")
        _verify_descriptor(self, len(self.result.type.shape))


def _descriptor(op: Op, start: int) -> Descriptor | None:
    """The descriptor whose scalars are ``op``'s operands from ``start`` on (attr ``descriptor``: the rank)."""
    rank = op.attrs.get("descriptor", 0)
    return Descriptor.of(op.operands[start:], rank, op.attrs.get("descriptor_checked", False)) if rank else None


def _descriptor_count(op: Op) -> int:
    rank = op.attrs.get("descriptor", 0)
    return 1 + 3 * rank if rank else 0


def _same_tile_shapes(op: Op, values) -> None:
    """The trait rule on the tile operands only (a descriptor's scalars come after them)."""
    shapes = {v.type.shape for v in values}
    if len(shapes) != 1:
        op.fail(f"operand and result shapes differ: {sorted(shapes)}")


def _verify_descriptor(op: Op, block_rank: int) -> None:
    d = op.descriptor
    if d is None:
        return
    if d.base.type.is_tensor or not d.base.type.is_pointer:
        op.fail(f"descriptor base {d.base.type} is not a scalar pointer")
    if any(v.type.is_tensor or not v.type.is_int for v in (*d.shape, *d.strides, *d.offsets)):
        op.fail("descriptor shape, strides and offsets must be scalar integers")
    if block_rank != d.rank:
        op.fail(f"a rank-{d.rank} descriptor moves rank-{d.rank} blocks, not rank {block_rank}")


@dataclass(frozen=True)
class Descriptor:
    """A load's tensor descriptor: the array's base, shape and strides (elements), the block's offsets.

    ``checked``: a host descriptor, whose alignment and strides the launch checked (as Triton checks them).
    """

    base: Value
    shape: tuple
    strides: tuple
    offsets: tuple
    checked: bool = False

    @property
    def rank(self) -> int:
        return len(self.shape)

    def values(self) -> list[Value]:
        return [self.base, *self.shape, *self.strides, *self.offsets]

    @staticmethod
    def of(values, rank: int, checked: bool = False) -> Descriptor:
        values = list(values)
        return Descriptor(
            values[0],
            tuple(values[1 : 1 + rank]),
            tuple(values[1 + rank : 1 + 2 * rank]),
            tuple(values[1 + 2 * rank :]),
            checked,
        )


class StoreOp(Op):
    """Write ``value`` where ``ptr`` points, for the lanes where ``mask`` holds.

    Operands: ptr, value, then mask when present (attr ``has_mask``), then a tensor
    descriptor's scalars as for ``LoadOp`` (attr ``descriptor``: the rank), when the store
    is a descriptor's ``desc.store(offsets, value)``.
    """

    name = "tt.store"
    traits = frozenset({MemoryWrite, SameLayout, SameOperandsAndResultShape})

    def __init__(self, ptr, value, mask=None, cache="", eviction="", loc=UNKNOWN_LOC, descriptor=None):
        operands = [ptr, value] + ([mask] if mask is not None else [])
        attrs = {"has_mask": mask is not None, "cache": cache, "eviction": eviction}
        if descriptor is not None:
            operands += descriptor.values()
            attrs["descriptor"] = descriptor.rank
            if descriptor.checked:
                attrs["descriptor_checked"] = True
        super().__init__(operands, [], attrs, loc=loc)

    @property
    def ptr(self) -> Value:
        return self.operands[0]

    @property
    def value(self) -> Value:
        return self.operands[1]

    @property
    def mask(self) -> Value | None:
        return self.operands[2] if self.attrs["has_mask"] else None

    @property
    def descriptor(self) -> Descriptor | None:
        """The tensor descriptor and block offsets this store writes through, if it came from one."""
        return _descriptor(self, 2 + self.attrs["has_mask"])

    def _verify_same(self, same_type: bool) -> None:
        _same_tile_shapes(self, self.operands[: 2 + self.attrs["has_mask"]])

    def _verify(self) -> None:
        self.expect_counts(2 + self.attrs["has_mask"] + _descriptor_count(self), 0)
        self.expect(self.ptr.type.element.is_pointer, "address operand is not a pointer")
        _verify_descriptor(self, len(self.value.type.shape))
        if self.mask is not None:
            if not self.mask.type.element.is_bool:
                self.fail(f"mask {self.mask.type} is not i1")


ATOMIC_KINDS = ("add", "fadd", "max", "min", "umax", "umin", "and", "or", "xor", "xchg")


class AtomicRMWOp(Op):
    """Atomically ``*ptr = kind(*ptr, val)`` where ``mask`` holds; gives the old values."""

    name = "tt.atomic_rmw"
    traits = frozenset({MemoryRead, MemoryWrite, SameLayout, SameOperandsAndResultShape})

    def __init__(self, kind, ptr, val, mask=None, sem="acq_rel", scope="gpu", loc=UNKNOWN_LOC):
        operands = [ptr, val] + ([mask] if mask is not None else [])
        attrs = {"kind": kind, "has_mask": mask is not None, "sem": sem, "scope": scope}
        super().__init__(operands, [val.type], attrs, loc=loc)

    @property
    def ptr(self) -> Value:
        return self.operands[0]

    @property
    def mask(self) -> Value | None:
        return self.operands[2] if self.attrs["has_mask"] else None

    def _verify(self) -> None:
        self.expect_counts(2 + self.attrs["has_mask"], 1)
        if self.attrs.get("kind") not in ATOMIC_KINDS:
            self.fail(f"unknown atomic kind {self.attrs.get('kind')!r}")
        self.expect(self.operands[0].type.element.is_pointer, "address operand is not a pointer")
        self.expect(self.result.type == self.operands[1].type, "gives values of the operand's type")


class AtomicCASOp(Op):
    """Atomically ``old = *ptr; if old == cmp: *ptr = val``; gives ``old``."""

    name = "tt.atomic_cas"
    traits = frozenset({MemoryRead, MemoryWrite, SameLayout, SameOperandsAndResultShape})

    def __init__(self, ptr, cmp, val, sem="acq_rel", scope="gpu", loc=UNKNOWN_LOC):
        super().__init__([ptr, cmp, val], [val.type], {"sem": sem, "scope": scope}, loc=loc)

    @property
    def ptr(self) -> Value:
        return self.operands[0]

    def _verify(self) -> None:
        self.expect_counts(3, 1)
        self.expect(self.operands[0].type.element.is_pointer, "address operand is not a pointer")
        self.expect(self.result.type == self.operands[2].type, "gives values of the operand's type")
