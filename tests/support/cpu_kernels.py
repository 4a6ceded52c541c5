"""Kernels several CPU test files run: one definition each (the tests import them)."""

import tilelab
import tilelab.language as tl

#: the signature of ``add``
F32_SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}


@tilelab.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """``out = x + y`` over ``n`` elements, the last block masked."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
