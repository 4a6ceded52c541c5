"""The GPU-only ops of the tile IR on the interpreter: layouts and shared memory change no values.

A layout conversion passes its tile through. A shared buffer is a plain numpy array of the
tile's shape: ``local_store`` copies a tile into it, ``local_load`` copies it out (layouts and
offsets do not matter here). A ring of ``stages`` buffers is one array more, indexed by
``memdesc_index``; ``memdesc_trans`` is a transposed numpy view; an async copy is a masked
load (zeros where masked off) written into its buffer at once (one program runs alone: the
copy can land at once); so is a bulk tensor copy (its box read through the tensor map's base,
shape and strides, out-of-bounds elements zero or NaN), and mbarriers have nothing to wait for;
a ``warp_group_dot`` multiplies the two buffers it reads, as ``tt.dot`` does.
"""

from __future__ import annotations

import numpy as np

from ..ir.ops import (
    AsyncCommitGroupOp,
    AsyncCopyGlobalToLocalOp,
    AsyncTMACopyOp,
    AsyncTMAStoreOp,
    AsyncWaitOp,
    ConvertLayoutOp,
    DotOp,
    FenceAsyncSharedOp,
    InitBarriersOp,
    InvalBarriersOp,
    LocalAllocOp,
    LocalLoadOp,
    LocalStoreOp,
    MemDescIndexOp,
    MemDescTransOp,
    TensorMapOp,
    WaitBarrierOp,
    WarpGroupDotOp,
    WarpGroupDotWaitOp,
)
from .access import read_masked, write_masked
from .numeric import dtype_of
from .registry import HANDLERS, handles


@handles(ConvertLayoutOp)
def convert_layout(it, op, x):
    return x


@handles(LocalAllocOp)
def local_alloc(it, op):
    stages = op.attrs.get("stages")  # a ring: one array per stage, stacked
    shape = op.result.type.shape if stages is None else (stages, *op.result.type.shape)
    return np.zeros(shape, dtype_of(op.result.type))


@handles(LocalStoreOp)
def local_store(it, op, buf, value):
    np.copyto(buf, value, casting="unsafe")


@handles(LocalLoadOp)
def local_load(it, op, buf):
    return buf.copy()


@handles(MemDescIndexOp)
def memdesc_index(it, op, ring, index):
    return ring[int(index)]  # a view: writes land in the ring


@handles(MemDescTransOp)
def memdesc_trans(it, op, buf):
    return buf.transpose(op.attrs["order"])  # a view of the same array


@handles(AsyncCopyGlobalToLocalOp)
def async_copy(it, op, view, ptrs, *mask):
    np.copyto(view, read_masked(it, op, ptrs, mask[0] if mask else None, dtype_of(op.view.type)))


@handles(TensorMapOp)
def tensormap(it, op, base, *sizes):
    return (base, sizes[: op.rank], sizes[op.rank :], op.attrs["fill"])


def _box(tmap, coords, shape, itemsize):
    """The addresses of the box at ``coords`` of a tensor map's array, and which lie inside it."""
    base, dims, strides, _ = tmap
    ptrs, inside = np.asarray(base, np.int64), np.ones((), bool)
    for d, n in enumerate(shape):
        index = int(coords[d]) + np.arange(n).reshape([-1 if e == d else 1 for e in range(len(shape))])
        ptrs = ptrs + index * int(strides[d]) * itemsize
        inside = inside & (index >= 0) & (index < int(dims[d]))
    return np.broadcast_to(ptrs, shape), np.broadcast_to(inside, shape)


@handles(AsyncTMACopyOp)
def async_tma_copy(it, op, view, tmap, bars, slot, pred, *coords):
    if not pred:
        return
    fill = tmap[3]
    ptrs, inside = _box(tmap, coords, view.shape, op.view.type.element.itemsize)
    values = read_masked(it, op, ptrs, inside, dtype_of(op.view.type))
    if fill == "nan":
        values = np.where(inside, values, np.nan).astype(values.dtype)
    np.copyto(view, values)


@handles(AsyncTMAStoreOp)
def async_tma_store(it, op, buf, tmap, *coords):
    ptrs, inside = _box(tmap, coords, buf.shape, op.buf.type.element.itemsize)
    write_masked(it, op, ptrs, inside, buf)


@handles(AsyncCommitGroupOp, AsyncWaitOp, FenceAsyncSharedOp, InitBarriersOp, InvalBarriersOp, WaitBarrierOp)
def no_effect(it, op, *operands):
    return None


@handles(WarpGroupDotOp)
def warp_group_dot(it, op, a, b, acc):
    return HANDLERS[DotOp](it, op, a, b, acc)


@handles(WarpGroupDotWaitOp)
def warp_group_dot_wait(it, op, acc):
    return acc  # the numpy dot is done when it returns
