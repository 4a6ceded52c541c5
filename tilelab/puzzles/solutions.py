"""Reference solutions of the puzzles: one ``@tilelab.jit`` kernel per puzzle, named after it.

Try a puzzle first; read its solution after. Each one is the plain, idiomatic way to write it
in Triton's language (they run unchanged under ``import triton.language as tl``).
"""

import tilelab
import tilelab.language as tl


@tilelab.jit
def copy(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask), mask=mask)


@tilelab.jit
def axpy(a, x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, a * tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


@tilelab.jit
def flip(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + (n - 1 - offs), mask=mask), mask=mask)


@tilelab.jit
def outer_add(x, y, out, m, n, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    xs = tl.load(x + rows, mask=rows < m)
    ys = tl.load(y + cols, mask=cols < n)
    mask = (rows[:, None] < m) & (cols[None, :] < n)
    tl.store(out + rows[:, None] * n + cols[None, :], xs[:, None] + ys[None, :], mask=mask)


@tilelab.jit
def transpose(x, out, m, n, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rows[:, None] < m) & (cols[None, :] < n)
    tile = tl.load(x + rows[:, None] * n + cols[None, :], mask=mask)
    tl.store(out + cols[None, :] * m + rows[:, None], tile, mask=mask)


@tilelab.jit
def row_sum(x, out, m, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    values = tl.load(x + row * n + cols, mask=cols < n, other=0.0)
    tl.store(out + row, tl.sum(values, axis=0))


@tilelab.jit
def conv1d(x, w, out, n, BLOCK: tl.constexpr, K: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for k in tl.static_range(K):
        acc += tl.load(w + k) * tl.load(x + offs + k, mask=offs + k < n, other=0.0)
    tl.store(out + offs, acc, mask=offs < n)


@tilelab.jit
def row_sum_loop(x, out, m, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x + row * n + cols, mask=cols < n, other=0.0)
    tl.store(out + row, tl.sum(acc, axis=0))


@tilelab.jit
def softmax(x, out, m, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    values = tl.load(x + row * n + cols, mask=cols < n, other=-float("inf"))
    e = tl.exp(values - tl.max(values, axis=0))
    tl.store(out + row * n + cols, e / tl.sum(e, axis=0), mask=cols < n)


@tilelab.jit
def cumsum(x, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    values = tl.load(x + offs, mask=offs < n, other=0.0)
    tl.store(out + offs, tl.cumsum(values, axis=0), mask=offs < n)


@tilelab.jit
def histogram(x, counts, n, BLOCK: tl.constexpr, BINS: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    bins = tl.load(x + offs, mask=mask, other=0)
    tl.atomic_add(counts + bins, tl.full([BLOCK], 1, tl.int32), mask=mask)


@tilelab.jit
def matvec(a, x, out, m, n, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    acc = tl.zeros([BM], dtype=tl.float32)
    for start in range(0, n, BN):
        cols = start + tl.arange(0, BN)
        tile = tl.load(a + rows[:, None] * n + cols[None, :], mask=(rows[:, None] < m) & (cols[None, :] < n), other=0.0)
        xs = tl.load(x + cols, mask=cols < n, other=0.0)
        acc += tl.sum(tile * xs[None, :], axis=1)
    tl.store(out + rows, acc, mask=rows < m)


@tilelab.jit
def matmul(a, b, c, m, n, k, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for start in range(0, k, BK):
        ks = start + tl.arange(0, BK)
        a_tile = tl.load(a + rows[:, None] * k + ks[None, :], mask=(rows[:, None] < m) & (ks[None, :] < k), other=0.0)
        b_tile = tl.load(b + ks[:, None] * n + cols[None, :], mask=(ks[:, None] < k) & (cols[None, :] < n), other=0.0)
        acc += tl.dot(a_tile, b_tile)
    tl.store(c + rows[:, None] * n + cols[None, :], acc, mask=(rows[:, None] < m) & (cols[None, :] < n))


@tilelab.jit
def attention(q, k, v, out, n, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    dims = tl.arange(0, D)
    q_tile = tl.load(q + rows[:, None] * D + dims[None, :], mask=rows[:, None] < n, other=0.0)
    m_i = tl.full([BM], -float("inf"), tl.float32)
    l_i = tl.zeros([BM], dtype=tl.float32)
    acc = tl.zeros([BM, D], dtype=tl.float32)
    scale = 1.0 / tl.sqrt(D * 1.0)
    for start in range(0, n, BN):
        keys = start + tl.arange(0, BN)
        k_tile = tl.load(k + keys[:, None] * D + dims[None, :], mask=keys[:, None] < n, other=0.0)
        v_tile = tl.load(v + keys[:, None] * D + dims[None, :], mask=keys[:, None] < n, other=0.0)
        s = tl.dot(q_tile, tl.trans(k_tile)) * scale
        s = tl.where(keys[None, :] < n, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p, v_tile)
        m_i = m_new
    tl.store(out + rows[:, None] * D + dims[None, :], acc / l_i[:, None], mask=rows[:, None] < n)
