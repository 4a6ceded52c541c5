"""The dispatch table of the interpreter: op class -> the function that executes it.

A handler takes the interpreter, the op and the op's operand values, and returns the
result value (one result), a tuple of values (several) or ``None`` (none)::

    @handles(SplatOp)
    def splat(it, op, x):
        return np.broadcast_to(x, op.result.type.shape)

Values are numpy arrays of the tile's shape (0-d arrays or numpy scalars for scalars)
with the IR type's numpy dtype; pointers are int64 byte addresses.
"""

from __future__ import annotations

from collections.abc import Callable

HANDLERS: dict[type, Callable] = {}


def handles(*op_classes: type):
    """Register the decorated function as the handler of ``op_classes``."""

    def register(fn: Callable) -> Callable:
        for cls in op_classes:
            HANDLERS[cls] = fn
        return fn

    return register


def _register_layout_ops() -> None:
    """GPU layout ops change no values: the interpreter passes them through.

    A shared buffer is a plain numpy array of the tile's shape: ``local_store`` copies a
    tile into it, ``local_load`` copies it out (layouts and offsets do not matter here).
    A ring of ``stages`` buffers is one array more, indexed by ``memdesc_index``; an async
    copy is a masked load (zeros where masked off) written into its buffer at once; a
    ``warp_group_dot`` multiplies the two buffers it reads.
    """
    import numpy as np

    from ..ir.ops import (
        AsyncCommitGroupOp,
        AsyncCopyGlobalToLocalOp,
        AsyncWaitOp,
        ConvertLayoutOp,
        DotOp,
        FenceAsyncSharedOp,
        LocalAllocOp,
        LocalLoadOp,
        LocalStoreOp,
        MemDescIndexOp,
        WarpGroupDotOp,
    )
    from .numeric import dtype_of

    def local_alloc(it, op):
        stages = op.attrs.get("stages")  # a ring: one array per stage, stacked
        shape = op.result.type.shape if stages is None else (stages, *op.result.type.shape)
        return np.zeros(shape, dtype_of(op.result.type))

    def local_store(it, op, buf, value):
        np.copyto(buf, value, casting="unsafe")

    def async_copy(it, op, view, ptrs, *mask):
        from .access import read_masked  # the load's own checks: bounds, sanitizer, traces

        np.copyto(view, read_masked(it, op, ptrs, mask[0] if mask else None, dtype_of(op.view.type)))

    HANDLERS[ConvertLayoutOp] = lambda it, op, x: x
    HANDLERS[LocalAllocOp] = local_alloc
    HANDLERS[LocalStoreOp] = local_store
    HANDLERS[LocalLoadOp] = lambda it, op, buf: buf.copy()
    HANDLERS[MemDescIndexOp] = lambda it, op, ring, index: ring[int(index)]  # a view: writes land in the ring
    HANDLERS[AsyncCopyGlobalToLocalOp] = async_copy  # one program runs alone: the copy can land at once
    HANDLERS[AsyncCommitGroupOp] = lambda it, op: None
    HANDLERS[AsyncWaitOp] = lambda it, op: None
    HANDLERS[FenceAsyncSharedOp] = lambda it, op: None
    # a Hopper dot reads its operands from shared buffers: the same product as tt.dot's
    HANDLERS[WarpGroupDotOp] = lambda it, op, a, b, acc: HANDLERS[DotOp](it, op, a, b, acc)


_register_layout_ops()
