"""Kernels compiled for AMD gfx942 in the tests (vector add, softmax, a 2-D tile, a small matmul)."""

import tilelab
import tilelab.language as tl

TARGET = "amd:gfx942"


@tilelab.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


@tilelab.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=mask)


@tilelab.jit
def transpose_kernel(x, out, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    v = tl.load(x + rm[:, None] * N + rn[None, :], mask=mask, other=0.0)
    tl.store(out + rn[None, :] * M + rm[:, None], v * 2.0, mask=mask)


@tilelab.jit
def matmul_kernel(a, b, c, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
        y = tl.load(b + (k + rk)[:, None] * BN + rn[None, :])
        acc += tl.dot(x, y)
    tl.store(c + rm[:, None] * BN + rn[None, :], acc)


ADD = (add_kernel, {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32"}, {"BLOCK": 1024})
SOFTMAX = (softmax_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n_cols": "i32"}, {"BLOCK": 1024})
TRANSPOSE = (transpose_kernel, {"x": "*fp32", "out": "*fp32", "M": "i32", "N": "i32"}, {"BM": 32, "BN": 64})
MATMUL = (matmul_kernel, {"a": "*fp16", "b": "*fp16", "c": "*fp32", "K": "i32"}, {"BM": 32, "BN": 32, "BK": 16})


def compile_for(case, target: str = TARGET, **options):
    kernel, signature, constants = case
    return tilelab.compile(kernel, signature=signature, constants=constants, target=target, **options)
