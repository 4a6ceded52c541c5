"""Kernels the runtime tests launch (Triton-style source)."""

from __future__ import annotations

import tilelab

try:
    import tilelab.language as tl
except ImportError:  # the language package is optional for the runtime's own tests
    tl = None


@tilelab.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


@tilelab.jit
def scale(x, out, n, alpha, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs * stride, mask=mask) * alpha, mask=mask)


@tilelab.jit
def twice(v):
    return v * 2


@tilelab.jit
def add_twice(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, twice(tl.load(x + offs, mask=mask)), mask=mask)


@tilelab.jit
def bad_shapes(x, out, BLOCK: tl.constexpr):
    a = tl.load(x + tl.arange(0, BLOCK))
    b = tl.load(x + tl.arange(0, 2 * BLOCK))
    tl.store(out + tl.arange(0, BLOCK), a + b)


@tilelab.jit
def copy_all(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs))


@tilelab.jit
def scale_default(x, out, n, alpha=2.0, BLOCK: tl.constexpr = 32):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * alpha, mask=mask)
