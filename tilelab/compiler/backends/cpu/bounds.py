"""Value ranges of index tiles at run time: the facts behind the fast paths of loads and stores.

Most masks are ``offs < n`` with ``offs = pid * BLOCK + arange(0, BLOCK)``: true for
every element of every program but the last. ``Bounds`` follows such an expression
back through the tile IR and emits a few scalar instructions that compute, once per
program, the smallest and largest element of the index tile (a ``Range``), so that

* ``all_true(mask)`` -- facts that hold when every lane of ``mask`` is on: the
  access loop then runs without masks (plain full-width vector loads and stores);
* ``disjoint(store_ptr, load_ptr)`` -- facts that hold when the bytes a store
  writes cannot overlap the bytes a load reads: the load may then be fused into the
  store's loop (element ``i`` read just before element ``i`` is written) without
  changing what the tile semantics say it reads.

Facts are tuples of ``i1`` values that must all hold, each emitted once; ``conjunction``
joins them in one flat chain of ``and``. Why flat: LLVM's instruction combiner spends
time exponential in the depth of a tree of ``and`` whose leaves are shared (each
pointer's ``ok`` appears in several facts): vector add's guard as such a tree cost
~2.5 ms per combiner run (it runs eight times), as a flat chain of its distinct
conditions ~0.5 ms.

Ranges are exact mathematical bounds in an integer wide enough that no step overflows:
``i64`` where a compile-time bound on their magnitude allows (pointers count only below
``ADDRESS_LIMIT``, ``i32`` indices stay far below it), else ``i128``; a step
whose result may leave its IR type's range (where the kernel's own arithmetic would
wrap) makes the facts false, never wrong. Such a check is emitted only where compile-time
limits (``Range.low`` / ``high``) do not rule it out: ``pid * 1024`` is a multiple of 1024
(wrapped or not), so adding ``arange(0, 1024)`` to it cannot pass ``2**31 - 1``. Anything
not understood (loaded indices, divisions, floats) gives ``None``: no fast path.

    offs = pid * 1024 + arange(0, 1024)   ->  [pid*1024, pid*1024 + 1023]
    offs < n                               ->  pid*1024 + 1023 < n
"""

from __future__ import annotations

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

from ..common.types import I1, I64

WIDE = ir.IntType(128)
#: ops whose result holds the same set of element values as their first operand
SAME_VALUES = (SplatOp, BroadcastOp, ExpandDimsOp, ReshapeOp, TransOp, HintOp, FlipOp)
#: addresses at or above this take the slow paths: real ones are far below (user space < 2**57)
ADDRESS_LIMIT = 1 << 60
#: ranges whose static magnitude stays below this are computed in ``i64``, wider ones in ``i128``
NARROW_LIMIT = 1 << 62


#: conditions (``i1`` values) that must all hold; ``()`` is "always"
Facts = tuple


class Range:
    """``lo <= every element <= hi``, trustworthy only where the ``ok`` facts hold.

    ``bound`` is a compile-time fact: ``|lo|, |hi| <= bound`` always, so it picks the width
    (``i64`` below ``NARROW_LIMIT``, else ``i128``) in which no step can overflow.
    ``low`` and ``high`` are compile-time limits of ``lo`` and ``hi`` (``-bound`` and ``bound``
    unless known tighter): a check they already rule out is not emitted.
    ``address``: a scalar pointer's raw address, not yet checked below ``ADDRESS_LIMIT``
    (``Bounds.checked`` adds that fact; ``_addptr`` checks the offset address instead).
    """

    __slots__ = ("lo", "hi", "ok", "bound", "address", "low", "high")

    def __init__(self, lo, hi, ok: Facts, bound: int, address=False, low: int | None = None, high: int | None = None):
        self.lo, self.hi, self.ok, self.bound, self.address = lo, hi, ok, bound, address
        self.low = -bound if low is None else low
        self.high = bound if high is None else high


def _width(bound: int) -> ir.IntType:
    return I64 if bound < NARROW_LIMIT else WIDE


def _folded(v: ir.Value) -> int | None:
    return v.constant if isinstance(v, ir.Constant) and isinstance(v.constant, int) else None


class Bounds:
    """Emits range facts at the builder's current position (make one per lowered op).

    Constant operands fold at emission (``x + 0``, ``true and c``): the facts are a few
    scalar instructions, and LLVM's optimizer time grows with what it is given.
    """

    def __init__(self, lw):
        self.lw = lw
        self.b = lw.b
        self.cache: dict[Value, Range | None] = {}
        self.emitted: dict[tuple, ir.Value] = {}

    # ----------------------------------------------------------------- folding arithmetic
    def _int(self, op: str, x: ir.Value, y: ir.Value) -> ir.Value:
        """``x op y`` on same-width integers (``add``, ``sub``, ``mul``), folded where constant."""
        cx, cy = _folded(x), _folded(y)
        if cx is not None and cy is not None:
            return ir.Constant(x.type, {"add": cx + cy, "sub": cx - cy, "mul": cx * cy}[op])
        if (op in ("add", "sub") and cy == 0) or (op == "mul" and cy == 1):
            return x
        if (op == "add" and cx == 0) or (op == "mul" and cx == 1):
            return y
        key = (op, x, y if cy is None else cy)  # the same offset scaled for several pointers: once
        if key not in self.emitted:
            self.emitted[key] = getattr(self.b, op)(x, y)
        return self.emitted[key]

    @staticmethod
    def _and(*parts) -> Facts:
        """The facts of all ``parts`` (fact tuples or single ``i1`` values): each once, constant truths left out."""
        out = []
        for part in parts:
            for fact in part if isinstance(part, tuple) else (part,):
                if _folded(fact) != 1 and not any(fact is seen for seen in out):
                    out.append(fact)
        return tuple(out)

    def _less(self, pred: str, x: ir.Value, y: ir.Value) -> ir.Value:
        cx, cy = _folded(x), _folded(y)
        if cx is not None and cy is not None:
            return ir.Constant(I1, int({"<": cx < cy, "<=": cx <= cy, ">": cx > cy, ">=": cx >= cy}[pred]))
        return self.b.icmp_signed(pred, x, y)

    def _to(self, v: ir.Value, ty: ir.IntType) -> ir.Value:
        if v.type == ty:
            return v
        c = _folded(v)
        return ir.Constant(ty, c) if c is not None else self.b.sext(v, ty)

    def _common(self, *ranges: Range) -> list[tuple[ir.Value, ir.Value]]:
        """The ``(lo, hi)`` of ``ranges`` in the width of the widest of them."""
        ty = _width(max(r.bound for r in ranges))
        return [(self._to(r.lo, ty), self._to(r.hi, ty)) for r in ranges]

    def _constant(self, lo: int, hi: int) -> Range:
        bound = max(abs(lo), abs(hi))
        ty = _width(bound)
        return Range(ir.Constant(ty, lo), ir.Constant(ty, hi), (), bound, low=lo, high=hi)

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
            return _multiple(self._scalar(self.lw.get(v), t), _power_of_two_dividing(v, t))
        op = v.defining_op
        if isinstance(op, SAME_VALUES):
            return self.range(op.operands[0])
        if isinstance(op, MakeRangeOp):
            return self._constant(op.attrs["start"], op.attrs["end"] - 1)
        if isinstance(op, ConstantOp) and isinstance(op.value, int):
            return self._constant(int(op.value), int(op.value))
        if isinstance(op, AddPtrOp):
            return self._addptr(op)
        if t.is_pointer:
            return None
        if isinstance(op, BinaryOp) and not t.is_bool:
            return self._binary(op, t)
        if isinstance(op, CastOp) and _is_int(op.operands[0]):
            src = self.range(op.operands[0])
            return src and self._fits(src, t)
        return None

    def _scalar(self, x: ir.Value, t) -> Range:
        """A scalar's one-value range; an address is trusted only below ``ADDRESS_LIMIT``."""
        if t.is_pointer:
            addr = self.b.ptrtoint(x, I64)
            return Range(addr, addr, (), ADDRESS_LIMIT, address=True)
        if isinstance(x, ir.Constant) and isinstance(x.constant, int):
            value = x.constant if t.is_signed or x.constant >= 0 else x.constant + (1 << t.bits)
            return self._constant(value, value)
        signed = t.is_signed and t.bits > 1
        bound = 1 << (t.bits - 1) if signed else (1 << t.bits) - 1
        ty = _width(bound)
        if x.type != ty:
            x = self.b.sext(x, ty) if signed else self.b.zext(x, ty)
        return Range(x, x, (), bound, low=-bound if signed else 0, high=bound - 1 if signed else bound)

    def checked(self, r: Range) -> Range:
        """``r`` with its address checked below ``ADDRESS_LIMIT`` where it is a raw address."""
        if not r.address:
            return r
        below = self.b.icmp_unsigned("<", r.lo, ir.Constant(r.lo.type, ADDRESS_LIMIT))
        return Range(r.lo, r.hi, self._and(r.ok, below), r.bound)

    def _addptr(self, op) -> Range | None:
        """``p + off * size``: trusted where the lowest address is in ``[0, ADDRESS_LIMIT)``.

        For a raw address ``p`` that one unsigned compare replaces ``p < ADDRESS_LIMIT`` and
        ``lo >= 0``: a sum that wrapped lands far outside the interval, and one inside it puts
        ``p`` within ``ADDRESS_LIMIT + |off| * size`` of 0 (hence the larger ``bound``).
        """
        p, off = self.range(op.operands[0]), self.range(op.operands[1])
        if p is None or off is None:
            return None
        size = op.result.type.element.pointee.itemsize
        bound = p.bound + off.bound * size * (2 if p.address else 1)
        ty = _width(bound)
        plo, phi, olo, ohi = (self._to(v, ty) for v in (p.lo, p.hi, off.lo, off.hi))
        scale = ir.Constant(ty, size)
        lo = self._int("add", plo, self._int("mul", olo, scale))
        hi = self._int("add", phi, self._int("mul", ohi, scale))
        if p.address:
            in_memory = self.b.icmp_unsigned("<", lo, ir.Constant(ty, ADDRESS_LIMIT))
        else:
            in_memory = self._less(">=", lo, ir.Constant(lo.type, 0))
        if bound >= 1 << 64:  # an i128 sum may pass the top of the address space
            in_memory = self._and(in_memory, self._less("<", hi, ir.Constant(hi.type, 1 << 64)))
        return Range(lo, hi, self._and(p.ok, off.ok, in_memory), bound)

    def _binary(self, op, t) -> Range | None:
        x, y = self.range(op.operands[0]), self.range(op.operands[1])
        if x is None or y is None:
            return None
        bound = {"add": x.bound + y.bound, "sub": x.bound + y.bound, "mul": x.bound * y.bound}.get(op.kind)
        bound = max(x.bound, y.bound) if op.kind in ("min", "max") else bound
        if bound is None:
            return None
        low, high = _limits(op.kind, x, y)
        ty = _width(bound)
        x, y = (Range(self._to(r.lo, ty), self._to(r.hi, ty), r.ok, bound) for r in (x, y))
        if op.kind == "add":
            lo, hi = self._int("add", x.lo, y.lo), self._int("add", x.hi, y.hi)
        elif op.kind == "sub":
            lo, hi = self._int("sub", x.lo, y.hi), self._int("sub", x.hi, y.lo)
        elif op.kind == "mul":
            products = [self._int("mul", p, q) for p in (x.lo, x.hi) for q in (y.lo, y.hi)]
            lo, hi = self._fold(products, "<"), self._fold(products, ">")
        else:
            pick = "<" if op.kind == "min" else ">"
            lo, hi = self._fold([x.lo, y.lo], pick), self._fold([x.hi, y.hi], pick)
        return self._fits(Range(lo, hi, self._and(x.ok, y.ok), bound, low=low, high=high), t)

    def _fold(self, values, pick: str) -> ir.Value:
        """The least (``<``) or greatest (``>``) of ``values``; equal ones counted once."""
        out = values[0]
        for v in values[1:]:
            if v is out or (_folded(v) is not None and _folded(v) == _folded(out)):
                continue
            out = self.b.select(self._less(pick, v, out), v, out)
        return out

    def _fits(self, r: Range, t) -> Range:
        """``r`` with ``ok`` cleared where it may leave the range of integer type ``t``.

        Only the sides that ``r.low`` and ``r.high`` do not already rule out are checked at run time.
        """
        lowest, highest = (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1) if t.is_signed else (0, (1 << t.bits) - 1)
        ok = r.ok
        if r.low < lowest:
            ok = self._and(ok, self._less(">=", r.lo, ir.Constant(r.lo.type, lowest)))
        if r.high > highest:
            ok = self._and(ok, self._less("<=", r.hi, ir.Constant(r.hi.type, highest)))
        return Range(r.lo, r.hi, ok, r.bound, low=max(r.low, lowest), high=min(r.high, highest))

    # ----------------------------------------------------------------- facts
    def all_true(self, mask: Value) -> Facts | None:
        """Facts that hold when every element of the bool tile ``mask`` is true, or ``None``."""
        if not mask.type.is_tensor:
            return self._and(self.lw.get(mask))
        op = mask.defining_op
        if isinstance(op, SAME_VALUES):
            return self.all_true(op.operands[0])
        if isinstance(op, ConstantOp):
            return () if op.value is True or op.value == 1 else None
        if isinstance(op, BinaryOp) and op.kind == "and":
            x, y = self.all_true(op.operands[0]), self.all_true(op.operands[1])
            return None if x is None or y is None else self._and(x, y)
        if isinstance(op, CmpOp):
            return self._cmp(op)
        return None

    def _cmp(self, op) -> Facts | None:
        x, y = self.range(op.operands[0]), self.range(op.operands[1])
        if x is None or y is None:
            return None
        x, y = self.checked(x), self.checked(y)
        (xlo, xhi), (ylo, yhi) = self._common(x, y)
        holds = {
            "lt": lambda: self._less("<", xhi, ylo),
            "le": lambda: self._less("<=", xhi, ylo),
            "gt": lambda: self._less(">", xlo, yhi),
            "ge": lambda: self._less(">=", xlo, yhi),
            "ne": lambda: self.b.or_(self._less("<", xhi, ylo), self._less(">", xlo, yhi)),
        }.get(op.predicate)
        return None if holds is None else self._and(x.ok, y.ok, holds())

    def disjoint(self, ptr_a: Value, ptr_b: Value) -> Facts | None:
        """Facts that hold when no element of pointer tile ``ptr_a`` overlaps one of ``ptr_b``."""
        a, b_ = self.range(ptr_a), self.range(ptr_b)
        if a is None or b_ is None:
            return None
        a, b_ = self.checked(a), self.checked(b_)
        ends = (Range(a.lo, a.hi, a.ok, a.bound + 16), Range(b_.lo, b_.hi, b_.ok, b_.bound + 16))
        (alo, ahi), (blo, bhi) = self._common(*ends)
        end_a = self._int("add", ahi, ir.Constant(ahi.type, _itemsize(ptr_a)))
        end_b = self._int("add", bhi, ir.Constant(bhi.type, _itemsize(ptr_b)))
        apart = self.b.or_(self._less("<=", end_a, blo), self._less("<=", end_b, alo))
        return self._and(a.ok, b_.ok, apart)


def _power_of_two_dividing(v: Value, t) -> int:
    """The largest power of two the integer scalar ``v`` is known to be a multiple of (1 if none).

    Kept by the kernel's own wrapping arithmetic (``2**bits`` is a multiple of it):
    ``pid * 1024`` is a multiple of 1024 whatever ``pid`` is.
    """
    op = v.defining_op
    if t.is_pointer or not t.is_int or t.is_bool:
        return 1
    if isinstance(op, ConstantOp) and isinstance(op.value, int):
        c = int(op.value) % (1 << t.bits)
        return (c & -c) if c else 1 << (t.bits - 1)
    if isinstance(op, BinaryOp) and op.kind in ("add", "sub", "mul"):
        x, y = (_power_of_two_dividing(a, t) for a in op.operands)
        return min(x * y, 1 << (t.bits - 1)) if op.kind == "mul" else min(x, y)
    src = op.operands[0].type if isinstance(op, CastOp) else None
    if src is not None and src.is_scalar and src.is_int and not src.is_bool:
        return min(_power_of_two_dividing(op.operands[0], src), 1 << (min(src.bits, t.bits) - 1))
    return 1


def _multiple(r: Range, d: int) -> Range:
    """``r`` of a value known to be a multiple of ``d``: its compile-time limits rounded inward."""
    if d > 1:
        r.low, r.high = -(-r.low // d) * d, (r.high // d) * d
    return r


def _limits(kind: str, x: Range, y: Range) -> tuple[int, int]:
    """Compile-time limits of ``lo`` and ``hi`` of ``x kind y`` (``add``, ``sub``, ``mul``, ``min``, ``max``)."""
    if kind == "add":
        return x.low + y.low, x.high + y.high
    if kind == "sub":
        return x.low - y.high, x.high - y.low
    if kind == "mul":
        corners = [p * q for p in (x.low, x.high) for q in (y.low, y.high)]
        return min(corners), max(corners)
    pick = min if kind == "min" else max
    return pick(x.low, y.low), pick(x.high, y.high)


def _is_int(v: Value) -> bool:
    t = v.type.element if v.type.is_tensor else v.type
    return not t.is_pointer and t.is_int


def _itemsize(ptr: Value) -> int:
    t = ptr.type.element if ptr.type.is_tensor else ptr.type
    return t.pointee.itemsize


def conjunction(b: ir.IRBuilder, facts: list[Facts]) -> ir.Value | None:
    """One ``i1``: the ``and`` of every fact in ``facts`` (``None`` when the list is empty).

    A flat chain, each distinct condition once (see the module docstring for why).
    """
    if not facts:
        return None
    out = None
    for f in Bounds._and(*facts):
        out = f if out is None else b.and_(out, f)
    return ir.Constant(I1, 1) if out is None else out
