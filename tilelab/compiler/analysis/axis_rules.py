"""Transfer functions of the axis-info analysis, one small rule per op (see ``axis_info``).

Notation in the comments: ``c`` contiguity, ``d`` divisibility, ``k`` constancy,
all per dimension. The rules are sound for non-negative integers.
"""

from __future__ import annotations

import math

from ..ir import ops
from .axis_info import MAX_DIVISIBILITY, AxisInfo, AxisInfoMap, _shape, analyze_block, highest_pow2_divisor, rule


def _start_div(info: AxisInfo, dim: int, run: int) -> int:
    """Divisibility of the first element of every run of ``run`` elements of ``info``.

    Runs no longer than ``info``'s own start where its runs start (or ``info`` has
    no runs): its divisibility holds. Shorter runs inside a longer one start at
    ``start + j*run``: only ``gcd(d, run)`` is sure.
    """
    if info.contiguity[dim] <= run:
        return info.divisibility[dim]
    return math.gcd(info.divisibility[dim], run)


def _elem_div(info: AxisInfo, dim: int) -> int:
    """Divisibility that holds for every element (1 inside contiguous runs)."""
    return info.divisibility[dim] if info.contiguity[dim] == 1 else 1


def _both_const(a: AxisInfo, b: AxisInfo, fn):
    if a.constant is None or b.constant is None:
        return None
    try:
        return fn(a.constant, b.constant)
    except (ZeroDivisionError, ValueError):
        return None


def _dims(a: AxisInfo):
    return range(a.rank)


# --------------------------------------------------------------------------- sources


@rule(ops.ConstantOp)
def _constant(op, info):
    value, shape = op.value, _shape(op.result)
    if isinstance(value, (bool, int)) and not isinstance(value, float):
        return AxisInfo.of_constant(int(value), shape)
    dims = shape or (1,)
    return AxisInfo((1,) * len(dims), (1,) * len(dims), dims)


@rule(ops.MakeRangeOp)
def _make_range(op, info):
    start, end = op.attrs["start"], op.attrs["end"]
    return AxisInfo((end - start,), (highest_pow2_divisor(start),), (1,))


# --------------------------------------------------------------------------- shape


@rule(ops.SplatOp)
def _splat(op, info):
    src, shape = info[op.src], _shape(op.result)
    return AxisInfo((1,) * len(shape), (src.divisibility[0],) * len(shape), shape, src.constant)


@rule(ops.BroadcastOp)
def _broadcast(op, info):
    src, src_shape, shape = info[op.src], _shape(op.src), _shape(op.result)
    c, d, k = list(src.contiguity), list(src.divisibility), list(src.constancy)
    for i, (was, now) in enumerate(zip(src_shape, shape)):
        if was == 1 and now > 1:
            c[i], k[i] = 1, now
    return AxisInfo(tuple(c), tuple(d), tuple(k), src.constant)


@rule(ops.ExpandDimsOp)
def _expand_dims(op, info):
    """The new size-1 dim holds single elements: its divisibility must hold for all of them."""
    src, axis = info[op.src], op.attrs["axis"]
    if src.constant is not None:
        new_div = highest_pow2_divisor(src.constant)
    else:
        new_div = math.gcd(*(_elem_div(src, i) for i in _dims(src))) if src.rank else 1
    if not _shape(op.src):  # a scalar becomes a 1-element tile
        return AxisInfo((1,), (src.divisibility[0],), (1,), src.constant)

    def insert(t, x):
        return t[:axis] + (x,) + t[axis:]

    return AxisInfo(
        insert(src.contiguity, 1), insert(src.divisibility, new_div), insert(src.constancy, 1), src.constant
    )


@rule(ops.TransOp)
def _trans(op, info):
    src, order = info[op.src], op.attrs["order"]
    return AxisInfo(*(tuple(t[i] for i in order) for t in (src.contiguity, src.divisibility, src.constancy)))


@rule(ops.ConvertLayoutOp)
def _convert_layout(op, info):
    """A layout conversion moves elements between threads: the values keep their facts."""
    return info[op.operands[0]]


@rule(ops.LocalLoadOp)
def _local_load(op, info):
    """A round trip keeps the facts of the one tile stored in the buffer (unknown if stored more than once)."""
    alloc = op.buf.defining_op
    stores = [s for s in alloc.parent.ops if isinstance(s, ops.LocalStoreOp) and s.buf is op.buf] if alloc else []
    if len(stores) == 1 and stores[0].value in info:
        return info[stores[0].value]
    return AxisInfo.unknown(op.result.type.shape)


@rule(ops.HintOp)
def _hint(op, info):
    """``tl.multiple_of`` sets divisibility, ``tl.max_contiguous`` contiguity, ``max_constancy`` constancy."""
    src, values = info[op.operands[0]], tuple(int(v) for v in op.attrs["values"])
    if len(values) == 1 and src.rank > 1:
        values = values * src.rank
    field = {"multiple_of": "divisibility", "max_contiguous": "contiguity", "max_constancy": "constancy"}
    parts = {"contiguity": src.contiguity, "divisibility": src.divisibility, "constancy": src.constancy}
    if op.attrs["kind"] in field:
        parts[field[op.attrs["kind"]]] = values
    return AxisInfo(**parts, constant=src.constant)


@rule(ops.CastOp)
def _cast(op, info):
    """Integer width changes keep the facts (offsets fit); anything else only keeps constancy."""
    src_t, dst_t = op.operands[0].type.element, op.result.type.element
    if getattr(src_t, "is_int", False) and getattr(dst_t, "is_int", False):
        return info[op.operands[0]]
    src = info[op.operands[0]]
    return AxisInfo((1,) * src.rank, (1,) * src.rank, src.constancy)


# --------------------------------------------------------------------------- pointer and integer arithmetic


def _add_like(a: AxisInfo, b: AxisInfo, b_scale: int = 1) -> AxisInfo:
    """``a + b * b_scale`` (``b_scale``: bytes per element for ``addptr``)."""
    c, d, k = [], [], []
    for i in _dims(a):
        run = max(math.gcd(a.contiguity[i], b.constancy[i]), math.gcd(a.constancy[i], b.contiguity[i]))
        c.append(run)
        b_div = min(MAX_DIVISIBILITY, _start_div(b, i, run) * b_scale)
        d.append(math.gcd(_start_div(a, i, run), b_div))
        k.append(math.gcd(a.constancy[i], b.constancy[i]))
    return AxisInfo(tuple(c), tuple(d), tuple(k), _both_const(a, b, lambda x, y: x + y * b_scale))


@rule(ops.AddPtrOp)
def _addptr(op, info):
    ptr, off = op.operands
    pointee = ptr.type.element.pointee
    return _add_like(info[ptr], info[off], getattr(pointee, "itemsize", 1))


def _sub(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    c = tuple(math.gcd(a.contiguity[i], b.constancy[i]) for i in _dims(a))
    d = tuple(math.gcd(_start_div(a, i, c[i]), _start_div(b, i, c[i])) for i in _dims(a))
    k = tuple(math.gcd(x, y) for x, y in zip(a.constancy, b.constancy))
    return AxisInfo(c, d, k, _both_const(a, b, lambda x, y: x - y))


def _mul(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    if b.constant == 1:
        return a
    if a.constant == 1:
        return b
    ones = (1,) * a.rank
    d = tuple(min(MAX_DIVISIBILITY, _elem_div(a, i) * _elem_div(b, i)) for i in _dims(a))
    k = tuple(math.gcd(x, y) for x, y in zip(a.constancy, b.constancy))
    return AxisInfo(ones, d, k, _both_const(a, b, lambda x, y: x * y))


def _uniform_over_runs(a: AxisInfo, b: AxisInfo, i: int) -> bool:
    """``b`` is one value over each contiguous run of ``a`` along ``i`` (a runtime ``M`` splat, a constant)."""
    return b.constant is not None or b.constancy[i] % a.contiguity[i] == 0


def _runs_of_quotient(a: AxisInfo, b: AxisInfo, i: int, k: int) -> int:
    """Constancy of ``a // b`` along ``i``: contiguous ``a`` over a uniform ``b`` stays constant in runs.

    ``a`` = ``d_a*q, d_a*q + 1, ...``, ``b`` = ``d_b*p``: the quotient can only step where ``a``
    crosses a multiple of ``b``, hence of ``gcd(d_a, d_b)``. Holds for a runtime ``b`` too.
    """
    if a.contiguity[i] > 1 and _uniform_over_runs(a, b, i):
        return max(k, math.gcd(a.contiguity[i], math.gcd(a.divisibility[i], b.divisibility[i])))
    return k


def _div(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    if b.constant == 1 or a.constant == 0:
        return a
    ones = (1,) * a.rank
    k = tuple(_runs_of_quotient(a, b, i, math.gcd(a.constancy[i], b.constancy[i])) for i in _dims(a))
    p = b.constant if b.constant and b.constant > 0 and b.constant & (b.constant - 1) == 0 else None
    d = tuple(max(1, _elem_div(a, i) // p) if p and _elem_div(a, i) >= p else 1 for i in _dims(a))
    return AxisInfo(ones, d, k, _both_const(a, b, lambda x, y: int(x / y) if abs(x) < 2**52 else None))


def _rem(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    """``a % m``: runs of ``a`` split where they cross a multiple of ``m``.

    ``m`` need not be a known constant, only one value over each run of ``a`` (as Triton): with
    ``M`` a runtime argument divisible by 16, ``(pid * 128 + tl.arange(0, 128)) % M`` keeps runs of
    16 consecutive offsets starting at multiples of 16. ``a % 1`` is 0.
    """
    if b.constant == 1:
        return AxisInfo.of_constant(0, a.constancy)
    k = tuple(math.gcd(x, y) for x, y in zip(a.constancy, b.constancy))
    const = _both_const(a, b, lambda x, y: int(math.fmod(x, y)))
    if b.constant is not None and b.constant <= 0:
        return AxisInfo((1,) * a.rank, (1,) * a.rank, k, const)
    c = tuple(
        math.gcd(a.contiguity[i], math.gcd(a.divisibility[i], b.divisibility[i]))
        if a.contiguity[i] > 1 and _uniform_over_runs(a, b, i)
        else 1
        for i in _dims(a)
    )
    d = tuple(
        math.gcd(_start_div(a, i, c[i]), b.divisibility[i])
        if _uniform_over_runs(a, b, i)
        else math.gcd(_elem_div(a, i), _elem_div(b, i))
        for i in _dims(a)
    )
    return AxisInfo(c, d, k, const)


def _shl(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    if b.constant is None or not 0 <= b.constant < 63:
        return _unknown_keep_constancy(a, b)
    if b.constant == 0:
        return a
    d = tuple(min(MAX_DIVISIBILITY, _elem_div(a, i) << b.constant) for i in _dims(a))
    k = tuple(math.gcd(x, y) for x, y in zip(a.constancy, b.constancy))
    return AxisInfo((1,) * a.rank, d, k, _both_const(a, b, lambda x, y: x << y))


def _shr(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    if b.constant is None or not 0 <= b.constant < 63:
        return _unknown_keep_constancy(a, b)
    if b.constant == 0:
        return a
    pow2 = AxisInfo(b.contiguity, (1 << b.constant,) * a.rank, b.constancy, 1 << b.constant)
    k = tuple(_runs_of_quotient(a, pow2, i, math.gcd(a.constancy[i], b.constancy[i])) for i in _dims(a))
    d = tuple(max(1, _elem_div(a, i) >> b.constant) for i in _dims(a))
    return AxisInfo((1,) * a.rank, d, k, _both_const(a, b, lambda x, y: x >> y))


def _and(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    m = b.constant
    if m is not None and m >= 0 and (m + 1) & m == 0:  # x & (2^n - 1) == x % 2^n
        return _rem(a, AxisInfo.of_constant(m + 1, (1,) * a.rank)) if m else AxisInfo.of_constant(0, a.constancy)
    d = tuple(min(MAX_DIVISIBILITY, max(_elem_div(a, i), _elem_div(b, i))) for i in _dims(a))
    k = tuple(math.gcd(x, y) for x, y in zip(a.constancy, b.constancy))
    return AxisInfo((1,) * a.rank, d, k, _both_const(a, b, lambda x, y: x & y))


def _or_xor(a: AxisInfo, b: AxisInfo, fn) -> AxisInfo:
    d = tuple(math.gcd(_elem_div(a, i), _elem_div(b, i)) for i in _dims(a))
    k = tuple(math.gcd(x, y) for x, y in zip(a.constancy, b.constancy))
    return AxisInfo((1,) * a.rank, d, k, _both_const(a, b, fn))


def _one_of(a: AxisInfo, b: AxisInfo, fn) -> AxisInfo:
    """``min``/``max``: each element is ``a``'s or ``b``'s, so it has the divisibility both share.

    A clamped bound (``min(max(n - off, 0), 64)``) stays a multiple of 16 when ``n`` and
    ``off`` are: the masks compared against it stay constant over 16-element runs.
    """
    d = tuple(math.gcd(_elem_div(a, i), _elem_div(b, i)) for i in _dims(a))
    k = tuple(math.gcd(x, y) for x, y in zip(a.constancy, b.constancy))
    return AxisInfo((1,) * a.rank, d, k, _both_const(a, b, fn))


def _unknown_keep_constancy(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    k = tuple(math.gcd(x, y) for x, y in zip(a.constancy, b.constancy))
    return AxisInfo((1,) * a.rank, (1,) * a.rank, k)


_BINARY = {
    "add": _add_like,
    "sub": _sub,
    "mul": _mul,
    "div": _div,
    "rem": _rem,
    "shl": _shl,
    "shr": _shr,
    "and": _and,
    "or": lambda a, b: _or_xor(a, b, lambda x, y: x | y),
    "xor": lambda a, b: _or_xor(a, b, lambda x, y: x ^ y),
    "min": lambda a, b: _one_of(a, b, min),
    "max": lambda a, b: _one_of(a, b, max),
}


@rule(ops.BinaryOp)
def _binary(op, info):
    a, b = info[op.operands[0]], info[op.operands[1]]
    elem = op.result.type.element
    fn = _BINARY.get(op.kind) if getattr(elem, "is_int", False) else None
    out = fn(a, b) if fn else _unknown_keep_constancy(a, b)
    if out.constant is not None:  # one known value over the whole tile (x % 1, x & 0, folded constants)
        return AxisInfo.of_constant(out.constant, _shape(op.result))
    return out


# --------------------------------------------------------------------------- masks and selection


def _boundary_runs(x: AxisInfo, bound: AxisInfo, i: int) -> int:
    """Runs of ``x < bound`` (contiguous ``x``, constant ``bound``): the flip happens at ``bound``."""
    if x.contiguity[i] > 1 and bound.constancy[i] >= x.contiguity[i]:
        return math.gcd(x.contiguity[i], math.gcd(x.divisibility[i], _elem_div(bound, i)))
    return 1


@rule(ops.CmpOp)
def _cmp(op, info):
    """``offs < n`` is constant in runs as long as ``n``'s alignment: the masked tail rule."""
    a, b = info[op.operands[0]], info[op.operands[1]]
    pred = op.predicate
    k = []
    for i in _dims(a):
        runs = math.gcd(a.constancy[i], b.constancy[i])
        if pred in ("lt", "ge"):  # x < n flips at n
            runs = max(runs, _boundary_runs(a, b, i))
        if pred in ("gt", "le"):  # n > x, n <= x flip at n
            runs = max(runs, _boundary_runs(b, a, i))
        k.append(runs)
    const = _both_const(a, b, lambda x, y: int(_compare(pred, x, y)))
    return AxisInfo((1,) * a.rank, (1,) * a.rank, tuple(k), const)


def _compare(pred, x, y) -> bool:
    return {"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y}[pred]


@rule(ops.SelectOp)
def _select(op, info):
    cond, a, b = (info[v] for v in op.operands)
    if cond.constant is not None:
        return a if cond.constant else b
    if cond.rank != a.rank:  # scalar condition over tiles: either whole tile
        return a.meet(b)
    c = tuple(
        min(math.gcd(a.contiguity[i], cond.constancy[i]), math.gcd(b.contiguity[i], cond.constancy[i]))
        for i in _dims(a)
    )
    d = tuple(math.gcd(_start_div(a, i, c[i]), _start_div(b, i, c[i])) for i in _dims(a))
    k = tuple(math.gcd(cond.constancy[i], math.gcd(a.constancy[i], b.constancy[i])) for i in _dims(a))
    return AxisInfo(c, d, k, a.constant if a.constant == b.constant else None)


# --------------------------------------------------------------------------- control flow

MAX_LOOP_ROUNDS = 8


def _fixpoint(block, arg_values, init: list[AxisInfo], info: AxisInfoMap, yielded_of) -> list[AxisInfo]:
    """Facts of loop-carried ``arg_values``: the meet of ``init`` and what the body yields, until stable."""
    carried = list(init)
    for _ in range(MAX_LOOP_ROUNDS):
        for arg, fact in zip(arg_values, carried):
            info[arg] = fact
        analyze_block(block, info)
        new = [c.meet(y) for c, y in zip(carried, yielded_of())]
        if new == carried:
            return carried
        carried = new
    carried = [AxisInfo.unknown(_shape(v)) for v in arg_values]
    for arg, fact in zip(arg_values, carried):
        info[arg] = fact
    analyze_block(block, info)
    return carried


@rule(ops.ForOp)
def _for(op, info):
    lb, step = info[op.operands[0]], info[op.operands[2]]
    info[op.induction_var] = AxisInfo((1,), (math.gcd(_elem_div(lb, 0), _elem_div(step, 0)),), (1,))
    body = op.body

    def yielded():
        return [info[v] for v in body.terminator.operands]

    return _fixpoint(body, body.args[1:], [info[v] for v in op.init_args], info, yielded)


@rule(ops.IfOp)
def _if(op, info):
    analyze_block(op.then_block, info)
    analyze_block(op.else_block, info)
    then_y, else_y = op.then_block.terminator, op.else_block.terminator
    if then_y is None or else_y is None:
        return [AxisInfo.unknown(_shape(v)) for v in op.results]
    return [info[a].meet(info[b]) for a, b in zip(then_y.operands, else_y.operands)]


@rule(ops.WhileOp)
def _while(op, info):
    before, after = op.before, op.after

    def around():
        cond = before.terminator
        for arg, v in zip(after.args, cond.operands[1:]):
            info[arg] = info[v]
        analyze_block(after, info)
        return [info[v] for v in after.terminator.operands]

    _fixpoint(before, before.args, [info[v] for v in op.operands], info, around)
    return [info[v] for v in before.terminator.operands[1:]]
