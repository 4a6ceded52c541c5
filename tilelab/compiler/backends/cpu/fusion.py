"""Which tile values may stay lazy (fused into their user's loop) instead of getting a buffer.

Lowering a tile lazily means recomputing its element wherever it is read, so a value
is left lazy only when that costs nothing extra:

* shape views and constants (``splat``, ``make_range``, ``broadcast``, ``expand_dims``,
  ``reshape``, ``trans``, ``join``/``split``, ``cat``, ``flip``, ``hint``) -- index
  arithmetic over their source, cheap at any number of uses;
* an elementwise result with exactly one user, in the same block, that reads each of
  its elements once (another elementwise op, a load, store or atomic);
* cheap index arithmetic on integers, bools and pointers (``add``, ``mul``, ``cmp``,
  ``addptr`` ...) at any number of uses: recomputing ``pid * B + arange(B)`` costs
  less than a buffer, and keeps addresses visibly affine so LLVM emits contiguous
  vector loads instead of gathers. Expressions grow at most ``MAX_INDEX_COST`` ops.

* a load with one reader of the above kind, when no op with side effects (a store, an
  atomic, a loop ...) runs between the load and the place its chain of single users is
  finally evaluated, and that place is not an atomic. A load fused into a store's loop
  is read just before the store writes; ``lower_store`` keeps that for programs whose
  written and read bytes provably do not overlap (bounds.py), else it reads first.
  Loads stay buffered in sanitize mode, so out-of-bounds reports follow program order.

Everything else -- reductions, dots, values used twice, or read inside a loop nested
below their definition -- is computed once into a buffer.

    before: %e = exp %x ; %y = mul %e, %c ; store %p, %y     (one user each)
    after:  one loop: store p[i], exp(x[i]) * c[i]
"""

from __future__ import annotations

from tilelab.compiler.ir.core import FuncOp, Op, Value
from tilelab.compiler.ir.ops import (
    AddPtrOp,
    AtomicCASOp,
    AtomicRMWOp,
    BinaryOp,
    CastOp,
    CmpOp,
    LoadOp,
    SelectOp,
    StoreOp,
)
from tilelab.compiler.ir.traits import Elementwise, LayoutFree, MemoryRead, MemoryWrite, SameLayout, ShapeOnly


def is_view(op: Op) -> bool:
    """Shape views and constants: each element is index arithmetic over the source."""
    return op.has_trait(ShapeOnly) or op.has_trait(LayoutFree)


def reads_once(op: Op) -> bool:
    """Elementwise ops, loads, stores and atomics read each element of their tile operands once."""
    if op.has_trait(Elementwise):
        return True
    return op.has_trait(SameLayout) and (op.has_trait(MemoryRead) or op.has_trait(MemoryWrite))


CHEAP_KINDS = ("add", "sub", "mul", "and", "or", "xor", "shl", "shr", "min", "max")
MAX_INDEX_COST = 24


def lazy_values(func: FuncOp, sanitize: bool = False) -> set[Value]:
    """The tile values of ``func`` that lowering may keep lazy (see the module docstring)."""
    lazy: set[Value] = set()
    cost: dict[Value, int] = {}
    for op in func.walk():
        for v in op.results:
            if not v.type.is_tensor:
                continue
            c = 1 + sum(cost.get(x, 0) for x in op.operands if x in lazy)
            fusable = _fusable_use(op, v)
            if is_view(op):
                lazy.add(v)
            elif isinstance(op, LoadOp) and fusable and not sanitize and not op.attrs.get("volatile"):
                lazy.add(v)
            elif op.has_trait(Elementwise) and fusable:
                lazy.add(v)
            elif _cheap_index(op) and c <= MAX_INDEX_COST:
                lazy.add(v)
            cost[v] = c
    loads = [op for op in func.walk() if isinstance(op, LoadOp) and op.result in lazy]
    for load in reversed(loads):  # outer loads first: an inner one may end at its reader
        if not _evaluated_in_time(load, lazy):
            lazy.discard(load.result)
    return lazy


def _evaluated_in_time(load, lazy) -> bool:
    """Whether lazy ``load`` is evaluated, through single users in its block, before any side effect."""
    block, v = load.parent, load.result
    while True:
        if not v.has_one_use():
            return False
        (end,) = v.users
        if end.parent is not block or isinstance(end, (AtomicRMWOp, AtomicCASOp)):
            return False
        if isinstance(end, StoreOp) or not end.results or end.results[0] not in lazy:
            break
        v = end.results[0]
    ops = block.ops
    between = ops[ops.index(load) + 1 : ops.index(end)]
    return all(op.pure or isinstance(op, LoadOp) for op in between)


def _cheap_index(op) -> bool:
    """Integer/bool/pointer arithmetic that is cheaper to recompute than to store."""
    if not isinstance(op, (BinaryOp, CmpOp, SelectOp, AddPtrOp, CastOp)):
        return False
    if isinstance(op, BinaryOp) and op.kind not in CHEAP_KINDS:
        return False
    elem = op.result.type.element
    return elem.is_pointer or elem.is_int


def _fusable_use(op, v: Value) -> bool:
    """``v`` (a result of ``op``) is read once, by one op of the same block that reads each element once."""
    if not v.has_one_use():
        return False
    (user,) = v.users
    return user.parent is op.parent and reads_once(user)
