"""Tile-building, shape, reduction and dot ops.

Reductions and scans run their combine region on whole numpy arrays, not element by
element: a reduction along an axis of length 8 combines the halves ``[0:4]`` with
``[4:8]``, then ``[0:2]`` with ``[2:4]``, then ``[0]`` with ``[1]`` (a tree, three
region runs); a scan is Hillis-Steele, combining each element with the one ``d``
before it for ``d = 1, 2, 4``. The combine function must be associative, as on a GPU.
"""

from __future__ import annotations

import numpy as np

from ..ir.ops import (
    BroadcastOp,
    CatOp,
    ConstantOp,
    DotOp,
    ExpandDimsOp,
    FlipOp,
    GatherOp,
    HistogramOp,
    JoinOp,
    MakeRangeOp,
    NumProgramsOp,
    ProgramIdOp,
    ReduceOp,
    ReshapeOp,
    ScanOp,
    SortOp,
    SplatOp,
    SplitOp,
    TransOp,
)
from .numeric import constant, dtype_of, round_to_tf32
from .registry import handles


@handles(ConstantOp)
def constant_op(it, op):
    value = it.constants.get(op)
    if value is None:
        value = it.constants[op] = constant(op.attrs["value"], op.results[0].type)
    return value


@handles(ProgramIdOp)
def program_id(it, op):
    return np.int32(it.pid[op.attrs["axis"]])


@handles(NumProgramsOp)
def num_programs(it, op):
    return np.int32(it.grid[op.attrs["axis"]])


@handles(MakeRangeOp)
def make_range(it, op):
    return np.arange(op.attrs["start"], op.attrs["end"], dtype=np.int32)


@handles(SplatOp)
def splat(it, op, x):
    out = np.empty(op.results[0].type.shape, np.asarray(x).dtype)
    out[...] = x
    return out


@handles(BroadcastOp)
def broadcast(it, op, x):
    return np.broadcast_to(x, op.results[0].type.shape)


@handles(ExpandDimsOp)
def expand_dims(it, op, x):
    return np.expand_dims(x, op.attrs["axis"])


@handles(ReshapeOp)
def reshape(it, op, x):
    return np.reshape(x, op.results[0].type.shape)


@handles(TransOp)
def trans(it, op, x):
    return np.transpose(x, op.attrs["order"])


@handles(JoinOp)
def join(it, op, a, b):
    return np.stack([a, b], axis=-1)


@handles(SplitOp)
def split(it, op, x):
    return x[..., 0], x[..., 1]


@handles(CatOp)
def cat(it, op, a, b):
    return np.concatenate([a, b], axis=0)


@handles(FlipOp)
def flip(it, op, x):
    return np.flip(x, op.attrs.get("dim", 0))


@handles(GatherOp)
def gather(it, op, src, index):
    axis = op.attrs["axis"]
    return np.take_along_axis(src, np.asarray(index).astype(np.int64) % src.shape[axis], axis)


@handles(HistogramOp)
def histogram(it, op, x, mask=None):
    bins = op.result.type.shape[0]
    x = np.asarray(x).astype(np.int64)
    keep = (x >= 0) & (x < bins) if mask is None else (x >= 0) & (x < bins) & np.asarray(mask, bool)
    return np.bincount(x[keep], minlength=bins).astype(np.int32)


@handles(SortOp)
def sort(it, op, x):
    dim = op.attrs.get("dim", -1)
    out = np.sort(x, axis=dim, kind="stable")
    return np.flip(out, dim) if op.attrs.get("descending") else out


def _take(values, axis, start, stop):
    index = (slice(None),) * axis + (slice(start, stop),)
    return [v[index] for v in values]


@handles(ReduceOp)
def reduce(it, op, *values):
    axis = op.attrs["axis"]
    values = [np.asarray(v) for v in values]
    if axis is None:
        values, axis = [v.reshape(-1) for v in values], 0
    n = values[0].shape[axis]
    while n > 1:
        half = n // 2
        combined = it.run_block(
            op.regions[0].block,
            _take(values, axis, 0, half) + _take(values, axis, half, 2 * half),
        )
        if n % 2:
            tail = _take(values, axis, n - 1, n)
            combined = [np.concatenate([c, t], axis) for c, t in zip(combined, tail)]
        values, n = combined, half + n % 2
    out = [np.take(v, 0, axis=axis) for v in values]
    out = [np.asarray(v).astype(dtype_of(r.type)) for v, r in zip(out, op.results)]
    return out[0] if len(out) == 1 else tuple(out)


@handles(ScanOp)
def scan(it, op, *values):
    axis, reverse = op.attrs["axis"], op.attrs.get("reverse", False)
    values = [np.asarray(v) for v in values]
    if reverse:
        values = [np.flip(v, axis) for v in values]
    n = values[0].shape[axis]
    step = 1
    while step < n:
        earlier = _take(values, axis, 0, n - step)
        later = _take(values, axis, step, n)
        combined = it.run_block(op.regions[0].block, earlier + later)
        head = _take(values, axis, 0, step)
        values = [np.concatenate([h, np.broadcast_to(c, t.shape)], axis) for h, c, t in zip(head, combined, later)]
        step *= 2
    if reverse:
        values = [np.flip(v, axis) for v in values]
    out = [np.ascontiguousarray(v).astype(dtype_of(r.type)) for v, r in zip(values, op.results)]
    return out[0] if len(out) == 1 else tuple(out)


@handles(DotOp)
def dot(it, op, a, b, acc):
    """``acc + a @ b``: f16 / bf16 / fp8 products accumulate in f32, int8 in i32."""
    a, b, acc = np.asarray(a), np.asarray(b), np.asarray(acc)
    tf32 = a.dtype == np.float32 and op.attrs.get("input_precision") == "tf32"
    out_dtype = dtype_of(op.results[0].type)
    if a.dtype.kind in "iub":
        wide = np.dtype(np.int64) if out_dtype.itemsize > 4 else np.dtype(np.int32)
    elif a.dtype == np.float64:
        wide = np.dtype(np.float64)
    else:
        wide = np.dtype(np.float32)
    a, b = a.astype(wide), b.astype(wide)
    if tf32:
        a, b = round_to_tf32(a), round_to_tf32(b)
    return (np.matmul(a, b) + acc.astype(wide)).astype(out_dtype)
