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

from tilelab._registry import Registry

#: op class -> handler, registered with ``@handles`` in these modules (imported on the first lookup)
HANDLERS = Registry(
    "interpreter handler", __package__, modules=("access", "elementwise", "tiles", "executor", "gpu_ops")
)
handles = HANDLERS.register
