"""Kernels for the round-trip tests on frontend IR (in a file, so their source can be read)."""

import tilelab
import tilelab.language as tl
from tests.frontend.kernels import matmul  # noqa: F401  (the same kernel, round-tripped)


@tilelab.jit
def scale(v, k):
    return v * k + 1.0


def rowwise(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    y = num / tl.sum(num, axis=0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, 3):
        acc += scale(y, i)
    if n > 4:
        acc = acc * 2.0
    else:
        acc = acc - 1.0
    j = 0
    while j < n:
        j += 7
    acc += j
    tl.store(out_ptr + row * stride + cols, acc, mask=mask)
