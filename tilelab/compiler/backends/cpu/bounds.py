"""Value ranges of index tiles at run time: the facts behind the fast paths of loads and stores.

Most masks are ``offs < n`` with ``offs = pid * BLOCK + arange(0, BLOCK)``: true for
every element of every program but the last. ``Bounds`` follows such an expression
back through the tile IR and emits a few scalar instructions that compute, once per
program, the smallest and largest element of the index tile (a ``Range``), so that

* ``all_true(mask)`` -- an ``i1`` that holds when every lane of ``mask`` is on: the
  access loop then runs without masks (plain full-width vector loads and stores);
* ``disjoint(store_ptr, load_ptr)`` -- an ``i1`` that holds when the bytes a store
  writes cannot overlap the bytes a load reads: the load may then be fused into the
  store's loop (element ``i`` read just before element ``i`` is written) without
  changing what the tile semantics say it reads.

Ranges are exact mathematical bounds, kept in ``i128`` so no step overflows; a step
whose result may leave its IR type's range (where the kernel's own arithmetic would
wrap) makes the facts false, never wrong. Anything not understood (loaded indices,
divisions, floats) gives ``None``: no fast path.

    offs = pid * 1024 + arange(0, 1024)   ->  [pid*1024, pid*1024 + 1023]
    offs < n                               ->  pid*1024 + 1023 < n
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from tilelab.compiler.ir.core import Value
from tilelab.compiler.ir.ops import (
    AddPtrOp,
    BinaryOp,
    BroadcastOp,
    CastOp,
    CmpOp,
    ConstantOp,
    ExpandDimsOp,
    FlipOp,
    HintOp,
    MakeRangeOp,
    ReshapeOp,
    SplatOp,
    TransOp,
)

from .types import I1, I64

WIDE = ir.IntType(128)
#: ops whose result holds the same set of element values as their first operand
SAME_VALUES = (SplatOp, BroadcastOp, ExpandDimsOp, ReshapeOp, TransOp, HintOp, FlipOp)


@dataclass
class Range:
    """``lo <= every element <= hi`` (``i128`` values), trustworthy only where ``ok`` (an ``i1``) holds."""

    lo: ir.Value
    hi: ir.Value
    ok: ir.Value


def _wide(n: int) -> ir.Constant:
    return ir.Constant(WIDE, n)


class Bounds:
    """Emits range facts at the builder's current position (make one per lowered op)."""

    def __init__(self, lw):
        self.lw = lw
        self.b = lw.b
        self.true = ir.Constant(I1, 1)
        self.cache: dict[Value, Range | None] = {}

    # ----------------------------------------------------------------- ranges
    def range(self, v: Value) -> Range | None:
        """The range of the integer or pointer tile (or scalar) ``v``, or ``None``."""
        if v not in self.cache:
            self.cache[v] = self._range(v)
        return self.cache[v]

    def _range(self, v: Value) -> Range | None:
        t = v.type.element if v.type.is_tensor else v.type
        if not (t.is_pointer or t.is_int):
            return None
        if not v.type.is_tensor:
            x = self._scalar(self.lw.get(v), t)
            return Range(x, x, self.true)
        op = v.defining_op
        if isinstance(op, SAME_VALUES):
            return self.range(op.operands[0])
        if isinstance(op, MakeRangeOp):
            return Range(_wide(op.attrs["start"]), _wide(op.attrs["end"] - 1), self.true)
        if isinstance(op, ConstantOp) and isinstance(op.value, int):
            return Range(_wide(int(op.value)), _wide(int(op.value)), self.true)
        if isinstance(op, AddPtrOp):
            return self._addptr(op)
        if t.is_pointer:
            return None
        if isinstance(op, BinaryOp) and not t.is_bool:
            return self._binary(op, t)
        if isinstance(op, CastOp) and _is_int(op.operands[0]):
            src = self.range(op.operands[0])
            return src and self._fits(src.lo, src.hi, src.ok, t)
        return None

    def _scalar(self, x: ir.Value, t) -> ir.Value:
        if t.is_pointer:
            return self.b.zext(self.b.ptrtoint(x, I64), WIDE)
        return self.b.sext(x, WIDE) if t.is_signed and t.bits > 1 else self.b.zext(x, WIDE)

    def _addptr(self, op) -> Range | None:
        p, off = self.range(op.operands[0]), self.range(op.operands[1])
        if p is None or off is None:
            return None
        size = _wide(op.result.type.element.pointee.itemsize)
        lo, hi = self.b.add(p.lo, self.b.mul(off.lo, size)), self.b.add(p.hi, self.b.mul(off.hi, size))
        ok = self.b.and_(p.ok, off.ok)
        in_memory = self.b.and_(self.b.icmp_signed(">=", lo, _wide(0)), self.b.icmp_signed("<", hi, _wide(1 << 64)))
        return Range(lo, hi, self.b.and_(ok, in_memory))

    def _binary(self, op, t) -> Range | None:
        x, y = self.range(op.operands[0]), self.range(op.operands[1])
        if x is None or y is None:
            return None
        b = self.b
        if op.kind == "add":
            lo, hi = b.add(x.lo, y.lo), b.add(x.hi, y.hi)
        elif op.kind == "sub":
            lo, hi = b.sub(x.lo, y.hi), b.sub(x.hi, y.lo)
        elif op.kind == "mul":
            products = [b.mul(p, q) for p in (x.lo, x.hi) for q in (y.lo, y.hi)]
            lo, hi = self._fold(products, "<"), self._fold(products, ">")
        elif op.kind in ("min", "max"):
            pick = "<" if op.kind == "min" else ">"
            lo, hi = self._fold([x.lo, y.lo], pick), self._fold([x.hi, y.hi], pick)
        else:
            return None
        return self._fits(lo, hi, b.and_(x.ok, y.ok), t)

    def _fold(self, values, pick: str) -> ir.Value:
        out = values[0]
        for v in values[1:]:
            out = self.b.select(self.b.icmp_signed(pick, v, out), v, out)
        return out

    def _fits(self, lo, hi, ok, t) -> Range:
        """``[lo, hi]`` with ``ok`` cleared where it leaves the range of integer type ``t``."""
        lowest, highest = (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1) if t.is_signed else (0, (1 << t.bits) - 1)
        inside = self.b.and_(self.b.icmp_signed(">=", lo, _wide(lowest)), self.b.icmp_signed("<=", hi, _wide(highest)))
        return Range(lo, hi, self.b.and_(ok, inside))

    # ----------------------------------------------------------------- facts
    def all_true(self, mask: Value) -> ir.Value | None:
        """An ``i1`` that holds when every element of the bool tile ``mask`` is true, or ``None``."""
        if not mask.type.is_tensor:
            return self.lw.get(mask)
        op = mask.defining_op
        if isinstance(op, SAME_VALUES):
            return self.all_true(op.operands[0])
        if isinstance(op, ConstantOp):
            return self.true if op.value is True or op.value == 1 else None
        if isinstance(op, BinaryOp) and op.kind == "and":
            x, y = self.all_true(op.operands[0]), self.all_true(op.operands[1])
            return None if x is None or y is None else self.b.and_(x, y)
        if isinstance(op, CmpOp):
            return self._cmp(op)
        return None

    def _cmp(self, op) -> ir.Value | None:
        x, y = self.range(op.operands[0]), self.range(op.operands[1])
        if x is None or y is None:
            return None
        b = self.b
        holds = {
            "lt": lambda: b.icmp_signed("<", x.hi, y.lo),
            "le": lambda: b.icmp_signed("<=", x.hi, y.lo),
            "gt": lambda: b.icmp_signed(">", x.lo, y.hi),
            "ge": lambda: b.icmp_signed(">=", x.lo, y.hi),
            "ne": lambda: b.or_(b.icmp_signed("<", x.hi, y.lo), b.icmp_signed(">", x.lo, y.hi)),
        }.get(op.predicate)
        return None if holds is None else b.and_(b.and_(x.ok, y.ok), holds())

    def disjoint(self, ptr_a: Value, ptr_b: Value) -> ir.Value | None:
        """An ``i1`` that holds when no element of pointer tile ``ptr_a`` overlaps one of ``ptr_b``."""
        a, b_ = self.range(ptr_a), self.range(ptr_b)
        if a is None or b_ is None:
            return None
        b = self.b
        end_a = b.add(a.hi, _wide(_itemsize(ptr_a)))
        end_b = b.add(b_.hi, _wide(_itemsize(ptr_b)))
        apart = b.or_(b.icmp_signed("<=", end_a, b_.lo), b.icmp_signed("<=", end_b, a.lo))
        return b.and_(b.and_(a.ok, b_.ok), apart)


def _is_int(v: Value) -> bool:
    t = v.type.element if v.type.is_tensor else v.type
    return not t.is_pointer and t.is_int


def _itemsize(ptr: Value) -> int:
    t = ptr.type.element if ptr.type.is_tensor else ptr.type
    return t.pointee.itemsize


def conjunction(b: ir.IRBuilder, facts) -> ir.Value | None:
    """The ``and`` of the ``i1`` facts (``None`` when there are none)."""
    out = None
    for f in facts:
        out = f if out is None else b.and_(out, f)
    return out
