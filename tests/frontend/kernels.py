# ruff: noqa: F841, B007
"""Sample kernels for the frontend tests (kept in a file so ``inspect`` can read their source)."""

import tilelab.language as tl
from tilelab.compiler.frontend.values import device_function as jit


def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def softmax(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    tl.store(out_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)


def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BK), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BK
        b_ptrs += BK * N
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty), mask=mask)


@jit
def add_one(x):
    return x + 1


@jit
def combine_max(a, b):
    return tl.maximum(a, b)


def control(x_ptr, out_ptr, n, seed, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if n > 3:
        y = x * 2
    else:
        y = x + 1.0
    i = 0
    while i < n:
        i += 1
    for j in tl.static_range(3):
        y = y + j
    if BLOCK > 1000:
        y = y * 100
    s = tl.reduce(y, 0, combine_max)
    am = tl.argmax(y, 0)
    r = tl.rand(seed, offs)
    v = tl.zeros((BLOCK,), tl.float32)
    bp = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (BLOCK,), (0,))
    for t in range(0, n, 2):
        v += tl.load(bp, boundary_check=(0,), padding_option="zero")
        bp = tl.advance(bp, (BLOCK,))
    c = tl.cumsum(y, 0)
    tl.store(out_ptr + offs, add_one(y) + s + am + r + v + c + i)


def conditional(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = x if pid < n else x * 2.0  # a scalar run-time condition: an scf.if yielding the tile
    z = y if x > 0 else -y  # a tile condition: per element
    tl.store(out_ptr + offs, z) if pid % 2 == 0 else tl.store(out_ptr + offs, -z)


def half_conditional(x_ptr, n):
    pid = tl.program_id(0)
    v = tl.load(x_ptr) if pid < n else tl.store(x_ptr, 1.0)
