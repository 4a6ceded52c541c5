"""Lowering of constants, program ids and shape ops: all lazy index arithmetic.

A shape op never moves data: its result is a lazy tile whose element ``lin`` reads
its source at a remapped index. For ``broadcast`` from ``[M, 1]`` to ``[M, N]``,
element ``lin`` reads source element ``lin >> log2(N)``; for ``trans`` of an
``[M, N]`` tile, element ``(i, j)`` reads ``(j, i)``. Only when a consumer needs a
buffer (fusion.py) is the remapped tile copied out, in one loop.
"""

from __future__ import annotations

import math

from tilelab.compiler.ir.ops import (
    BroadcastOp,
    CatOp,
    ConstantOp,
    ExpandDimsOp,
    FlipOp,
    GatherOp,
    HintOp,
    JoinOp,
    MakeRangeOp,
    NumProgramsOp,
    ProgramIdOp,
    ReshapeOp,
    SplatOp,
    SplitOp,
    TransOp,
)

from ..common.types import I1, I32, I64
from .context import Tile, coords, i64, linear, lower
from .lower_elementwise import arith_constant


def view(lw, op, index_fn, src=None) -> None:
    """Define ``op.result`` as ``src`` read at ``index_fn(lin)`` (``src`` default operand 0)."""
    x = lw.get(op.operands[0]) if src is None else src
    rtype = op.result.type
    if not isinstance(x, Tile):  # a scalar source: every element is the scalar
        lw.set(op.result, Tile(rtype.shape, rtype.element, fn=lambda lin: x))
        return
    lw.set(op.result, Tile(rtype.shape, rtype.element, fn=lambda lin: lw.elem_at(x, index_fn(lin))))


@lower(ConstantOp)
def lower_constant(lw, op):
    t = op.result.type
    c = arith_constant(t.element, op.value)
    lw.set(op.result, Tile(t.shape, t.element, fn=lambda lin: c) if t.is_tensor else c)


@lower(ProgramIdOp)
def lower_program_id(lw, op):
    lw.set(op.result, lw.pids[op.attrs["axis"]])


@lower(NumProgramsOp)
def lower_num_programs(lw, op):
    lw.set(op.result, lw.grid[op.attrs["axis"]])


@lower(MakeRangeOp)
def lower_make_range(lw, op):
    t = op.result.type
    start = op.attrs["start"]

    def element(lin):
        return lw.b.trunc(lw.b.add(lin, i64(start)) if start else lin, I32)

    lw.set(op.result, Tile(t.shape, t.element, fn=element))


@lower(SplatOp, HintOp, ExpandDimsOp, ReshapeOp)
def lower_same_order(lw, op):
    """Ops that keep the row-major order of the elements: identity index."""
    x = lw.get(op.operands[0])
    if isinstance(x, Tile) and op.result.type.is_tensor:
        view(lw, op, lambda lin: lin)
    elif op.result.type.is_tensor:
        view(lw, op, None)
    else:
        lw.set(op.result, x)


@lower(BroadcastOp)
def lower_broadcast(lw, op):
    src_shape = op.operands[0].type.shape
    dst_shape = op.result.type.shape

    def index(lin):
        cs = coords(lw.b, lin, dst_shape)
        return linear(lw.b, [c if s > 1 else i64(0) for c, s in zip(cs, src_shape)], src_shape)

    view(lw, op, index)


@lower(TransOp)
def lower_trans(lw, op):
    order = op.attrs["order"]
    src_shape = op.operands[0].type.shape
    dst_shape = op.result.type.shape

    def index(lin):
        cs = coords(lw.b, lin, dst_shape)
        src = [None] * len(order)
        for i, o in enumerate(order):
            src[o] = cs[i]
        return linear(lw.b, src, src_shape)

    view(lw, op, index)


@lower(FlipOp)
def lower_flip(lw, op):
    shape = op.result.type.shape
    dim = op.attrs.get("dim", 0) % len(shape)

    def index(lin):
        cs = coords(lw.b, lin, shape)
        cs[dim] = lw.b.sub(i64(shape[dim] - 1), cs[dim])
        return linear(lw.b, cs, shape)

    view(lw, op, index)


@lower(GatherOp)
def lower_gather(lw, op):
    """Element ``lin`` reads the source at its coordinates with the index's value (mod the extent) along ``axis``."""
    src, index = lw.get(op.src), lw.get(op.index)
    axis, size = op.attrs["axis"], op.src.type.shape[op.attrs["axis"]]
    t, signed = op.result.type, op.index.type.element.is_signed

    def element(lin):
        b = lw.b
        at = lw.elem_at(index, lin)
        at = (b.sext if signed else b.zext)(at, I64) if at.type.width < 64 else at
        cs = coords(b, lin, t.shape)
        cs[axis] = b.and_(at, i64(size - 1))
        return lw.elem_at(src, linear(b, cs, op.src.type.shape))

    lw.set(op.result, Tile(t.shape, t.element, fn=element))


@lower(JoinOp)
def lower_join(lw, op):
    a, c = lw.get(op.operands[0]), lw.get(op.operands[1])
    t = op.result.type

    def element(lin):
        b = lw.b
        half = b.lshr(lin, i64(1))
        odd = b.trunc(lin, I1)
        return b.select(odd, lw.elem_at(c, half), lw.elem_at(a, half))

    lw.set(op.result, Tile(t.shape, t.element, fn=element))


@lower(SplitOp)
def lower_split(lw, op):
    x = lw.get(op.operands[0])
    for k, r in enumerate(op.results):
        t = r.type
        lw.set(r, Tile(t.shape, t.element, fn=lambda lin, k=k: lw.elem_at(x, lw.b.add(lw.b.shl(lin, i64(1)), i64(k)))))


@lower(CatOp)
def lower_cat(lw, op):
    a, c = lw.get(op.operands[0]), lw.get(op.operands[1])
    na = math.prod(op.operands[0].type.shape)
    t = op.result.type

    def element(lin):
        b = lw.b
        first = b.icmp_signed("<", lin, i64(na))
        # evaluate both sides at in-range indexes, then pick
        va = lw.elem_at(a, b.select(first, lin, i64(0)))
        vc = lw.elem_at(c, b.select(first, i64(0), b.sub(lin, i64(na))))
        return b.select(first, va, vc)

    lw.set(op.result, Tile(t.shape, t.element, fn=element))
