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

Everything else -- loads, reductions, dots, values used twice, or read inside a loop
nested below their definition -- is computed once into a buffer.

    before: %e = exp %x ; %y = mul %e, %c ; store %p, %y     (one user each)
    after:  one loop: store p[i], exp(x[i]) * c[i]
"""

from __future__ import annotations

from tilelab.compiler.ir.core import FuncOp, Value
from tilelab.compiler.ir.ops import (
    AddPtrOp,
    AtomicCASOp,
    AtomicRMWOp,
    BinaryOp,
    BitcastOp,
    BroadcastOp,
    CastOp,
    CatOp,
    CmpOp,
    ConstantOp,
    ExpandDimsOp,
    FlipOp,
    FmaOp,
    HintOp,
    JoinOp,
    LoadOp,
    MakeRangeOp,
    ReshapeOp,
    SelectOp,
    SplatOp,
    SplitOp,
    StoreOp,
    TransOp,
    UnaryOp,
)

VIEWS = (SplatOp, MakeRangeOp, ConstantOp, BroadcastOp, ExpandDimsOp, ReshapeOp, TransOp)
VIEWS += (JoinOp, SplitOp, CatOp, FlipOp, HintOp)
ELEMENTWISE = (BinaryOp, UnaryOp, CmpOp, SelectOp, CastOp, BitcastOp, FmaOp, AddPtrOp)
READS_ONCE = ELEMENTWISE + (LoadOp, StoreOp, AtomicRMWOp, AtomicCASOp)


CHEAP_KINDS = ("add", "sub", "mul", "and", "or", "xor", "shl", "shr", "min", "max")
MAX_INDEX_COST = 24


def lazy_values(func: FuncOp) -> set[Value]:
    """The tile values of ``func`` that lowering may keep lazy (see the module docstring)."""
    uses: dict[Value, list] = {}
    for op in func.walk():
        for v in op.operands:
            uses.setdefault(v, []).append(op)
    lazy: set[Value] = set()
    cost: dict[Value, int] = {}
    for op in func.walk():
        for v in op.results:
            if not v.type.is_tensor:
                continue
            c = 1 + sum(cost.get(x, 0) for x in op.operands if x in lazy)
            if isinstance(op, VIEWS):
                lazy.add(v)
            elif isinstance(op, ELEMENTWISE) and _fusable_use(op, uses.get(v, [])):
                lazy.add(v)
            elif _cheap_index(op) and c <= MAX_INDEX_COST:
                lazy.add(v)
            cost[v] = c
    return lazy


def _cheap_index(op) -> bool:
    """Integer/bool/pointer arithmetic that is cheaper to recompute than to store."""
    if not isinstance(op, (BinaryOp, CmpOp, SelectOp, AddPtrOp, CastOp)):
        return False
    if isinstance(op, BinaryOp) and op.kind not in CHEAP_KINDS:
        return False
    elem = op.result.type.element
    return elem.is_pointer or elem.is_int


def _fusable_use(op, users) -> bool:
    if len(users) != 1:
        return False
    (user,) = users
    return user.parent is op.parent and isinstance(user, READS_ONCE)
