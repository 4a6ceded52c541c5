"""The LLVM pipeline is sized to the kernel: 1-D elementwise kernels skip unrolling, and stay vectorized."""

from __future__ import annotations

import re

import numpy as np

import tilelab
import tilelab.language as tl
from tilelab.compiler.backends.cpu import needs_unrolling


@tilelab.jit
def scale_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, 2.5 * x + tl.load(y_ptr + offs, mask=mask), mask=mask)


@tilelab.jit
def row_sum(x_ptr, out_ptr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    tl.store(out_ptr + row, tl.sum(tl.load(x_ptr + row * BLOCK + tl.arange(0, BLOCK)), axis=0))


@tilelab.jit
def tile_copy(x_ptr, out_ptr, BLOCK: tl.constexpr):
    idx = tl.arange(0, BLOCK)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
    tl.store(out_ptr + idx, tl.load(x_ptr + idx))


SIG1 = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
SIG2 = {"x_ptr": "*fp32", "out_ptr": "*fp32"}


def compiled(kernel, sig, block):
    return tilelab.compile(kernel, signature=sig, constants={"BLOCK": block}, target="cpu", cache=False)


def test_only_1d_elementwise_kernels_skip_unrolling():
    assert not needs_unrolling(compiled(scale_add, SIG1, 256).module)
    assert needs_unrolling(compiled(row_sum, SIG2, 64).module)
    assert needs_unrolling(compiled(tile_copy, SIG2, 16).module)


def test_elementwise_kernel_is_still_vectorized_and_correct(rng):
    ck = compiled(scale_add, SIG1, 256)
    assert re.search(r"<\d+ x float>", ck.asm["llir"]), "the cheap pipeline must still vectorize"
    n = 1000  # not a multiple of BLOCK: the masked tail runs too
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    scale_add[(4,)](x, y, out, n, BLOCK=256, target="cpu")
    np.testing.assert_allclose(out, np.float32(2.5) * x + y, rtol=1e-6)
