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
    """
    import numpy as np

    from ..ir.ops import ConvertLayoutOp, LocalAllocOp, LocalLoadOp, LocalStoreOp
    from .numeric import dtype_of

    def local_store(it, op, buf, value):
        np.copyto(buf, value, casting="unsafe")

    HANDLERS[ConvertLayoutOp] = lambda it, op, x: x
    HANDLERS[LocalAllocOp] = lambda it, op: np.zeros(op.result.type.shape, dtype_of(op.result.type))
    HANDLERS[LocalStoreOp] = local_store
    HANDLERS[LocalLoadOp] = lambda it, op, buf: buf.copy()


_register_layout_ops()
