"""Memory ops: pointer arithmetic, loads, stores and atomics on global memory."""

from __future__ import annotations

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

    Operands: ptr, then mask and other when present (attrs ``has_mask``, ``has_other``).
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
    ):
        operands = [ptr] + ([mask] if mask is not None else []) + ([other] if other is not None else [])
        attrs = {"has_mask": mask is not None, "has_other": other is not None}
        attrs.update(cache=cache, eviction=eviction, volatile=volatile)
        super().__init__(operands, [type], attrs, loc=loc)

    @property
    def ptr(self) -> Value:
        return self.operands[0]

    @property
    def mask(self) -> Value | None:
        return self.operands[1] if self.attrs["has_mask"] else None

    @property
    def other(self) -> Value | None:
        return self.operands[-1] if self.attrs["has_other"] else None

    def _verify(self) -> None:
        n = 1 + self.attrs["has_mask"] + self.attrs["has_other"]
        self.expect_counts(n, 1)
        ptr = self.ptr.type
        self.expect(ptr.element.is_pointer, "address operand is not a pointer")
        if self.mask is not None:
            if not self.mask.type.element.is_bool:
                self.fail(f"mask {self.mask.type} is not i1")


class StoreOp(Op):
    """Write ``value`` where ``ptr`` points, for the lanes where ``mask`` holds."""

    name = "tt.store"
    traits = frozenset({MemoryWrite, SameLayout, SameOperandsAndResultShape})

    def __init__(self, ptr, value, mask=None, cache="", eviction="", loc=UNKNOWN_LOC):
        operands = [ptr, value] + ([mask] if mask is not None else [])
        super().__init__(
            operands,
            [],
            {"has_mask": mask is not None, "cache": cache, "eviction": eviction},
            loc=loc,
        )

    @property
    def ptr(self) -> Value:
        return self.operands[0]

    @property
    def value(self) -> Value:
        return self.operands[1]

    @property
    def mask(self) -> Value | None:
        return self.operands[2] if self.attrs["has_mask"] else None

    def _verify(self) -> None:
        self.expect_counts(2 + self.attrs["has_mask"], 0)
        self.expect(self.ptr.type.element.is_pointer, "address operand is not a pointer")
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

    def _verify(self) -> None:
        self.expect_counts(3, 1)
        self.expect(self.operands[0].type.element.is_pointer, "address operand is not a pointer")
        self.expect(self.result.type == self.operands[2].type, "gives values of the operand's type")
