"""Kernels outside the corpus, in the idioms of LLM kernel libraries, as plain ``tl`` source (no ``@jit``).

``benchmarks/probe/run.py`` compiles each for sm_90a with tilelab and with Triton (same text, as the
corpus does) and compares the PTX: where tilelab's is longer, uses more registers or moves memory in
narrower pieces, a general weakness is likely. No GPU: a first look before a kernel joins the corpus.
"""

import tilelab.language as tl


def gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def embedding_kernel(
    idx_ptr, w_ptr, out_ptr, n_tokens, dim, stride_w, stride_out, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr
):
    pid_t = tl.program_id(0)
    pid_d = tl.program_id(1)
    t = pid_t * BLOCK_T + tl.arange(0, BLOCK_T)
    d = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    tmask = t < n_tokens
    ids = tl.load(idx_ptr + t, mask=tmask, other=0)
    m = tmask[:, None] & (d[None, :] < dim)
    rows = tl.load(w_ptr + ids[:, None] * stride_w + d[None, :], mask=m, other=0.0)
    tl.store(out_ptr + t[:, None] * stride_out + d[None, :], rows, mask=m)


def col_sum_kernel(x_ptr, out_ptr, M, N, stride_m, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in range(0, M, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        x = tl.load(x_ptr + rows[:, None] * stride_m + cols[None, :], mask=mask, other=0.0)
        acc += tl.sum(x.to(tl.float32), axis=0)
    tl.store(out_ptr + cols, acc, mask=cols < N)


def add_rmsnorm_kernel(x_ptr, r_ptr, w_ptr, y_ptr, x_stride, r_stride, y_stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + row * r_stride + cols, mask=mask, other=0.0).to(tl.float32)
    h = x + r
    tl.store(r_ptr + row * r_stride + cols, h.to(r_ptr.dtype.element_ty), mask=mask)
    var = tl.sum(h * h, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * y_stride + cols, (h * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def softmax_bwd_kernel(dy_ptr, y_ptr, dx_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    dy = tl.load(dy_ptr + row * stride + cols, mask=mask, other=0.0)
    y = tl.load(y_ptr + row * stride + cols, mask=mask, other=0.0)
    dot = tl.sum(dy * y, axis=0)
    tl.store(dx_ptr + row * stride + cols, y * (dy - dot), mask=mask)


def int4_dequant_kernel(q_ptr, scale_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    packed = tl.load(q_ptr + offs, mask=mask, other=0)
    lo = (packed & 0xF).to(tl.int8) - 8
    hi = ((packed >> 4) & 0xF).to(tl.int8) - 8
    s = tl.load(scale_ptr + offs // 64, mask=mask, other=0.0)
    out = tl.interleave(lo.to(tl.float16), hi.to(tl.float16)) * tl.interleave(s, s)
    o = pid * 2 * BLOCK + tl.arange(0, 2 * BLOCK)
    tl.store(out_ptr + o, out, mask=o < 2 * n)


def rope_pairs_kernel(x_ptr, cos_ptr, sin_ptr, out_ptr, stride, HALF: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + r)
    x1, x2 = tl.split(tl.reshape(x, (HALF, 2)))
    c = tl.load(cos_ptr + tl.arange(0, HALF))
    s = tl.load(sin_ptr + tl.arange(0, HALF))
    y = tl.reshape(tl.join(x1 * c - x2 * s, x1 * s + x2 * c), (BLOCK,))
    tl.store(out_ptr + row * stride + r, y)


def argmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=float("-inf"))
    tl.store(out_ptr + row, tl.argmax(x, axis=0))


def fp8_quant_kernel(x_ptr, y_ptr, scale_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    amax = tl.max(tl.abs(x), axis=0)
    scale = 448.0 / tl.maximum(amax, 1e-12)
    tl.store(y_ptr + row * n_cols + cols, (x * scale).to(tl.float8e4nv), mask=mask)
    tl.store(scale_ptr + row, 1.0 / scale)


def colcumsum_kernel(x_ptr, y_ptr, n_cols, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    rows = tl.arange(0, BM)
    cols = pid * BN + tl.arange(0, BN)
    x = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :])
    tl.store(y_ptr + rows[:, None] * n_cols + cols[None, :], tl.cumsum(x, axis=0))


def softmax_keep_kernel(x_ptr, y_ptr, stride, n_cols, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    m = cols[None, :] < n_cols
    x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=m, other=float("-inf"))
    x = x - tl.max(x, axis=1, keep_dims=True)
    e = tl.exp(x)
    tl.store(y_ptr + rows[:, None] * stride + cols[None, :], e / tl.sum(e, axis=1, keep_dims=True), mask=m)


def gemv_kernel(w_ptr, x_ptr, y_ptr, N, K, stride_w, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    row_mask = rows < N
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        cols = k + tl.arange(0, BLOCK_K)
        col_mask = cols < K
        x = tl.load(x_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
        w_mask = row_mask[:, None] & col_mask[None, :]
        w = tl.load(w_ptr + rows[:, None] * stride_w + cols[None, :], mask=w_mask, other=0.0).to(tl.float32)
        acc += tl.sum(w * x[None, :], axis=1)
    tl.store(y_ptr + rows, acc.to(y_ptr.dtype.element_ty), mask=row_mask)


def welford_layernorm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_ptr += row * stride
    y_ptr += row * stride
    count = tl.zeros((BLOCK,), dtype=tl.float32)
    mean = tl.zeros((BLOCK,), dtype=tl.float32)
    m2 = tl.zeros((BLOCK,), dtype=tl.float32)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        count += mask.to(tl.float32)
        delta = tl.where(mask, x - mean, 0.0)
        mean += delta / tl.maximum(count, 1.0)
        m2 += delta * (x - mean)
    n = tl.sum(count, axis=0)
    row_mean = tl.sum(mean * count, axis=0) / n
    d = mean - row_mean
    var = (tl.sum(m2, axis=0) + tl.sum(count * d * d, axis=0)) / n
    rstd = 1.0 / tl.sqrt(var + eps)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0)
        y = (x - row_mean) * rstd * w + b
        tl.store(y_ptr + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def online_softmax_kernel(x_ptr, y_ptr, stride_x, stride_y, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_ptr += row * stride_x
    y_ptr += row * stride_y
    m = float("-inf")
    s = 0.0
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + cols, mask=mask, other=float("-inf")).to(tl.float32)
        tl.store(y_ptr + cols, (tl.exp(x - m) / s).to(y_ptr.dtype.element_ty), mask=mask)


def swiglu_bwd_kernel(dy_ptr, a_ptr, b_ptr, da_ptr, db_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    offs = row * stride + cols
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    sig = tl.sigmoid(a)
    silu = a * sig
    tl.store(da_ptr + offs, (dy * b * (sig + silu * (1.0 - sig))).to(da_ptr.dtype.element_ty), mask=mask)
    tl.store(db_ptr + offs, (dy * silu).to(db_ptr.dtype.element_ty), mask=mask)
