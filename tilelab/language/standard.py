"""Library functions written in the ``tl`` language itself, like Triton's ``standard.py``.

They are compiled like user ``@jit`` functions (each into its own function of the
module, inlined later), so the IR shows them as calls.
"""

from __future__ import annotations

from ..compiler.frontend.values import constexpr, device_function
from . import core as tl
from . import math as tlmath


@device_function
def cdiv(x, div):
    """Ceiling division: ``(x + div - 1) // div``."""
    return (x + div - 1) // div


@device_function
def sigmoid(x):
    """``1 / (1 + exp(-x))``."""
    return 1 / (1 + tlmath.exp(-x))


@device_function
def softmax(x, dim: constexpr = None, keep_dims: constexpr = False, ieee_rounding: constexpr = False):
    """``exp(x - max) / sum(exp(x - max))`` along ``dim`` (0 by default)."""
    if dim is None:
        axis: constexpr = 0
    else:
        axis: constexpr = dim
    z = x - tl.max(x, axis, keep_dims=keep_dims)
    num = tlmath.exp(z)
    den = tl.sum(num, axis, keep_dims=keep_dims)
    return tlmath.fdiv(num, den, ieee_rounding)


@device_function
def swizzle2d(i, j, size_i, size_j, size_g):
    """Map row-major program ids ``(i, j)`` to grouped order (groups of ``size_g`` rows)."""
    ij = i * size_j + j
    size_gj = size_g * size_j
    group_id = ij // size_gj
    off_i = group_id * size_g
    size_g = tl.minimum(size_i - off_i, size_g)
    ij = ij % size_gj
    new_i = off_i + ij % size_g
    new_j = ij // size_g
    return new_i, new_j
