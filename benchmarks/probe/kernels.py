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


def w8a16_matmul_kernel(
    a_ptr, b_ptr, scale_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):  # fmt: skip
    # weight-only int8: f16 activations times int8 weights converted in the loop, one f16 scale per column
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_pid_n
    first_m = (pid // group) * GROUP_M
    size_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % group) % size_m)
    pid_n = (pid % group) // size_m
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BLOCK_K, other=0)
        acc += tl.dot(a, b.to(tl.float16))
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    scale = tl.load(scale_ptr + rn).to(tl.float32)
    c = (acc * scale[None, :]).to(tl.float16)
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn, c, mask=(cm[:, None] < M) & (cn[None, :] < N))


def linear_gelu_kernel(
    x_ptr, w_ptr, bias_ptr, y_ptr, M, N, K, stride_xm, stride_wn, stride_ym,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    # y = gelu(x @ w.T + bias), w row-major (N, K) as nn.Linear keeps it: B read K-contiguous; tanh GELU
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :]
    w_ptrs = w_ptr + offs_n[None, :] * stride_wn + offs_k[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        x = tl.load(x_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] + k < K), other=0.0)
        w = tl.load(w_ptrs, mask=(offs_n[None, :] < N) & (offs_k[:, None] + k < K), other=0.0)
        acc = tl.dot(x, w, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    acc += tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]
    inner = 0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)
    y = 0.5 * acc * (1.0 + (2.0 * tl.sigmoid(2.0 * inner) - 1.0))  # tanh(u) = 2 sigmoid(2u) - 1
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


def conv2d_nhwc_kernel(
    x_ptr, w_ptr, y_ptr, N, H, W, C, K, P, Q, R: tl.constexpr, S: tl.constexpr, PAD: tl.constexpr,
    STRIDE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    # implicit GEMM: rows are output pixels (n, p, q), columns output channels, K runs over (r, s, c);
    # x NHWC, w (R, S, C, K), y NHWC; pixel indices from // and % of runtime sizes, zero padding by masks
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n = offs_m // (P * Q)
    pq = offs_m % (P * Q)
    p = pq // Q
    q = pq % Q
    m_mask = offs_m < N * P * Q
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for rs in range(0, R * S):
        r = rs // S
        s = rs % S
        h = p * STRIDE - PAD + r
        w = q * STRIDE - PAD + s
        inside = m_mask & (h >= 0) & (h < H) & (w >= 0) & (w < W)
        x_base = x_ptr + ((n * H + h) * W + w) * C
        for c0 in range(0, C, BLOCK_K):
            cs = c0 + tl.arange(0, BLOCK_K)
            x = tl.load(x_base[:, None] + cs[None, :], mask=inside[:, None] & (cs[None, :] < C), other=0.0)
            wt = tl.load(w_ptr + (rs * C + cs[:, None]) * K + offs_n[None, :],
                         mask=(cs[:, None] < C) & (offs_n[None, :] < K), other=0.0)  # fmt: skip
            acc = tl.dot(x, wt, acc)
    mask = m_mask[:, None] & (offs_n[None, :] < K)
    tl.store(y_ptr + offs_m[:, None] * K + offs_n[None, :], acc.to(y_ptr.dtype.element_ty), mask=mask)


def embedding_bwd_kernel(idx_ptr, dy_ptr, dw_ptr, n_tokens, dim, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    # the gradient of a lookup: each token's row of dy added to its id's row of dw (f32), ids repeating
    pid_t = tl.program_id(0)
    pid_d = tl.program_id(1)
    t = pid_t * BLOCK_T + tl.arange(0, BLOCK_T)
    d = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    m = (t[:, None] < n_tokens) & (d[None, :] < dim)
    ids = tl.load(idx_ptr + t, mask=t < n_tokens, other=0)
    g = tl.load(dy_ptr + t[:, None] * dim + d[None, :], mask=m, other=0.0).to(tl.float32)
    tl.atomic_add(dw_ptr + ids[:, None] * dim + d[None, :], g, mask=m, sem="relaxed")


def linear_scan_kernel(a_ptr, b_ptr, h_ptr, L, D, BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr):
    # h_t = a_t * h_{t-1} + b_t along the sequence, per channel (a gated linear recurrence, 0 < a <= 1), in
    # chunks of BLOCK_L steps as chunked scans write it: within a chunk A_t = exp(cumsum(log a)) and
    # h_t = A_t * (h_in + cumsum(b / A)); the chunk's last h carried to the next; x is (L, D), channels contiguous
    pid = tl.program_id(0)
    ch = pid * BLOCK_D + tl.arange(0, BLOCK_D)
    cmask = ch < D
    h = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for start in range(0, L, BLOCK_L):
        rows = start + tl.arange(0, BLOCK_L)
        m = (rows[:, None] < L) & cmask[None, :]
        a = tl.load(a_ptr + rows[:, None] * D + ch[None, :], mask=m, other=1.0).to(tl.float32)
        b = tl.load(b_ptr + rows[:, None] * D + ch[None, :], mask=m, other=0.0).to(tl.float32)
        log_a = tl.cumsum(tl.log(a), axis=0)
        hs = tl.exp(log_a) * (h[None, :] + tl.cumsum(b * tl.exp(-log_a), axis=0))
        tl.store(h_ptr + rows[:, None] * D + ch[None, :], hs.to(h_ptr.dtype.element_ty), mask=m)
        h = tl.sum(tl.where(rows[:, None] == start + BLOCK_L - 1, hs, 0.0), axis=0)


def moe_router_kernel(logits_ptr, weights_ptr, experts_ptr, n_tokens, E: tl.constexpr, TOPK: tl.constexpr,
                      BLOCK_T: tl.constexpr):  # fmt: skip
    # softmax over E experts, then the TOPK largest probabilities (renormalized) and their expert ids
    pid = tl.program_id(0)
    t = pid * BLOCK_T + tl.arange(0, BLOCK_T)
    tmask = t < n_tokens
    e = tl.arange(0, E)
    x = tl.load(logits_ptr + t[:, None] * E + e[None, :], mask=tmask[:, None], other=0.0).to(tl.float32)
    p = tl.exp(x - tl.max(x, axis=1)[:, None])
    p = p / tl.sum(p, axis=1)[:, None]
    remaining = p
    total = tl.zeros((BLOCK_T,), dtype=tl.float32)
    for i in tl.static_range(TOPK):
        best = tl.max(remaining, axis=1)
        which = tl.argmax(remaining, axis=1)
        tl.store(weights_ptr + t * TOPK + i, best, mask=tmask)
        tl.store(experts_ptr + t * TOPK + i, which, mask=tmask)
        total += best
        remaining = tl.where(e[None, :] == which[:, None], -1.0, remaining)
    for i in tl.static_range(TOPK):
        w = tl.load(weights_ptr + t * TOPK + i, mask=tmask, other=0.0)
        tl.store(weights_ptr + t * TOPK + i, w / total, mask=tmask)


def group_norm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, C, HW, G, eps, BLOCK: tl.constexpr):
    # one program per (sample, group): the group's C/G channels x HW positions (NCHW, contiguous) as one
    # flat run, two passes over it (sums, then normalize with the channel's weight and bias)
    pid = tl.program_id(0)
    g = pid % G
    cpg = C // G
    n_elem = cpg * HW
    base = pid * n_elem
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    acc2 = tl.zeros((BLOCK,), dtype=tl.float32)
    for off in range(0, n_elem, BLOCK):
        i = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + base + i, mask=i < n_elem, other=0.0).to(tl.float32)
        acc += x
        acc2 += x * x
    mean = tl.sum(acc, axis=0) / n_elem
    var = tl.sum(acc2, axis=0) / n_elem - mean * mean
    rstd = 1.0 / tl.sqrt(var + eps)
    for off in range(0, n_elem, BLOCK):
        i = off + tl.arange(0, BLOCK)
        mask = i < n_elem
        ch = g * cpg + i // HW
        x = tl.load(x_ptr + base + i, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + ch, mask=mask, other=0.0)
        b = tl.load(b_ptr + ch, mask=mask, other=0.0)
        tl.store(y_ptr + base + i, ((x - mean) * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)


def decode_attention_kernel(q_ptr, k_cache, v_cache, token_table, seq_lens, out_ptr, scale, stride_qb, stride_qh,
                            stride_kt, stride_kh, stride_vt, stride_vh, stride_table, stride_ob, stride_oh,
                            GROUP: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr,
                            HEAD_DIM: tl.constexpr):  # fmt: skip
    # one decode step of grouped-query attention over a paged KV cache: a program per (sequence, kv head)
    # takes the GROUP query heads sharing that kv head (padded to BLOCK_H rows for tl.dot) and walks the
    # sequence's cache slots, found token by token through its row of the token table
    b = tl.program_id(0)
    kv_head = tl.program_id(1)
    heads = kv_head * GROUP + tl.arange(0, BLOCK_H)
    head_mask = tl.arange(0, BLOCK_H) < GROUP
    d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + b * stride_qb + heads[:, None] * stride_qh + d[None, :], mask=head_mask[:, None], other=0.0)
    seq_len = tl.load(seq_lens + b)
    m_i = tl.full([BLOCK_H], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_H], dtype=tl.float32)
    acc = tl.zeros([BLOCK_H, HEAD_DIM], dtype=tl.float32)
    for start in range(0, seq_len, BLOCK_N):
        n = start + tl.arange(0, BLOCK_N)
        n_mask = n < seq_len
        slot = tl.load(token_table + b * stride_table + n, mask=n_mask, other=0).to(tl.int64)
        k = tl.load(k_cache + slot[:, None] * stride_kt + kv_head * stride_kh + d[None, :], mask=n_mask[:, None],
                    other=0.0)  # fmt: skip
        s = tl.dot(q, tl.trans(k)) * scale
        s = tl.where(n_mask[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        v = tl.load(v_cache + slot[:, None] * stride_vt + kv_head * stride_vh + d[None, :], mask=n_mask[:, None],
                    other=0.0)  # fmt: skip
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        l_i = l_i * alpha + tl.sum(p, 1)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(out_ptr + b * stride_ob + heads[:, None] * stride_oh + d[None, :], out.to(out_ptr.dtype.element_ty),
             mask=head_mask[:, None])  # fmt: skip


def grouped_matmul_kernel(a_ptrs, b_ptrs, c_ptrs, sizes, strides, n_groups, NUM_PROGRAMS: tl.constexpr,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):  # fmt: skip
    # several independent f16 matmuls (a mixture of experts' expert GEMMs) in one persistent launch: each
    # group's operands come as addresses in int64 tables, its (m, n, k) and row strides from int32 tables;
    # the programs walk the groups' tiles in turn
    tile = tl.program_id(0)
    first_tile = 0
    for g in range(n_groups):
        m = tl.load(sizes + g * 3)
        n = tl.load(sizes + g * 3 + 1)
        k = tl.load(sizes + g * 3 + 2)
        tiles_n = tl.cdiv(n, BLOCK_N)
        tiles = tl.cdiv(m, BLOCK_M) * tiles_n
        while tile >= first_tile and tile < first_tile + tiles:
            a = tl.load(a_ptrs + g).to(tl.pointer_type(tl.float16))
            b = tl.load(b_ptrs + g).to(tl.pointer_type(tl.float16))
            c = tl.load(c_ptrs + g).to(tl.pointer_type(tl.float16))
            lda = tl.load(strides + g * 3)
            ldb = tl.load(strides + g * 3 + 1)
            ldc = tl.load(strides + g * 3 + 2)
            t = tile - first_tile
            rm = (t // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
            rn = (t % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
            rk = tl.arange(0, BLOCK_K)
            a_tile = a + rm[:, None] * lda + rk[None, :]
            b_tile = b + rk[:, None] * ldb + rn[None, :]
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for kk in range(0, tl.cdiv(k, BLOCK_K)):
                left = k - kk * BLOCK_K
                x = tl.load(a_tile, mask=(rm[:, None] < m) & (rk[None, :] < left), other=0.0)
                y = tl.load(b_tile, mask=(rk[:, None] < left) & (rn[None, :] < n), other=0.0)
                acc += tl.dot(x, y)
                a_tile += BLOCK_K
                b_tile += BLOCK_K * ldb
            out_mask = (rm[:, None] < m) & (rn[None, :] < n)
            tl.store(c + rm[:, None] * ldc + rn[None, :], acc.to(tl.float16), mask=out_mask)
            tile += NUM_PROGRAMS
        first_tile += tiles


def w4a16_matmul_kernel(
    a_ptr, b_ptr, scales_ptr, zeros_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, stride_sg, stride_zg,
    GROUP_SIZE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):  # fmt: skip
    # GPTQ-style 4-bit weights: b is (K // 8, N) int32 holding eight nibbles of consecutive k per word; each
    # GROUP_SIZE rows of k share a f16 scale per column and a 4-bit zero (packed eight columns per int32)
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_pid_n
    first_m = (pid // group) * GROUP_M
    size_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % group) % size_m)
    pid_n = (pid % group) // size_m
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + (offs_k[:, None] // 8) * stride_bk + offs_n[None, :]
    shifter = (offs_k % 8) * 4
    zeros_shifter = (offs_n % 8) * 4
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K // BLOCK_K):
        g = k * BLOCK_K // GROUP_SIZE
        scales = tl.load(scales_ptr + g * stride_sg + offs_n)
        zeros = tl.load(zeros_ptr + g * stride_zg + offs_n // 8)
        zeros = (zeros >> zeros_shifter) & 0xF
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        b = (b >> shifter[:, None]) & 0xF
        b = (b - zeros[None, :]).to(tl.float16) * scales[None, :]
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K
        b_ptrs += (BLOCK_K // 8) * stride_bk
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (cm[:, None] < M) & (cn[None, :] < N)
    tl.store(c_ptr + cm[:, None] * stride_cm + cn[None, :], acc.to(tl.float16), mask=mask)


def fp8_block_matmul_kernel(
    a_ptr, b_ptr, a_scale_ptr, b_scale_ptr, c_ptr, M, N, K, stride_am, stride_bn, stride_cm, stride_asm,
    stride_bsn, SCALE_BLOCK: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):  # fmt: skip
    # fp8 e4m3 with block scales, as served models quantize: a (M, K) with one f32 scale per row for each
    # SCALE_BLOCK of k, the weight b (N, K) with one per SCALE_BLOCK x SCALE_BLOCK block; each dot's partial
    # product is scaled before it is added
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_pid_n
    first_m = (pid // group) * GROUP_M
    size_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % group) % size_m)
    pid_n = (pid % group) // size_m
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_n[None, :] * stride_bn + offs_k[:, None]
    a_scale_ptrs = a_scale_ptr + offs_m * stride_asm
    b_scale_ptrs = b_scale_ptr + (offs_n // SCALE_BLOCK) * stride_bsn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        s = k * BLOCK_K // SCALE_BLOCK
        a_s = tl.load(a_scale_ptrs + s)
        b_s = tl.load(b_scale_ptrs + s)
        acc += tl.dot(a, b) * a_s[:, None] * b_s[None, :]
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K
    c = acc.to(c_ptr.dtype.element_ty)
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + cm[:, None] * stride_cm + cn[None, :], c, mask=(cm[:, None] < M) & (cn[None, :] < N))


def layernorm_bwd_locked_kernel(
    dx_ptr, dy_ptr, dw_ptr, db_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, locks, stride, n_cols,
    GROUP_M: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    # layer norm's backward, one row a program: dx at once; the row's dw and db added into one of GROUP_M
    # partial rows under a spin lock (atomic_cas to take it, atomic_xchg to give it back), the first writer
    # of each partial row, told by a counter beside the locks, storing instead of adding
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask).to(tl.float32)
    mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)
    xhat = tl.where(mask, (x - mean) * rstd, 0.0)
    wdy = tl.where(mask, w * dy, 0.0)
    c1 = tl.sum(xhat * wdy, axis=0) / n_cols
    c2 = tl.sum(wdy, axis=0) / n_cols
    tl.store(dx_ptr + row * stride + cols, ((wdy - (xhat * c1 + c2)) * rstd).to(dx_ptr.dtype.element_ty), mask=mask)
    slot = row % GROUP_M
    lock = locks + slot
    count = locks + GROUP_M + slot
    dw_row = dw_ptr + slot * n_cols + cols
    db_row = db_ptr + slot * n_cols + cols
    dw = dy * xhat
    db = dy
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    if tl.load(count) == 0:
        tl.atomic_xchg(count, 1)
    else:
        dw += tl.load(dw_row, mask=mask)
        db += tl.load(db_row, mask=mask)
    tl.store(dw_row, dw, mask=mask)
    tl.store(db_row, db, mask=mask)
    tl.debug_barrier()  # every thread's stores before the release (the exchange runs in one thread)
    tl.atomic_xchg(lock, 0)


def varlen_attention_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr, cu_seqlens, scale, stride_t, stride_h,
    CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
):  # fmt: skip
    # attention over packed sequences of different lengths (a prefill batch): q, k, v and o are (tokens,
    # heads, HEAD_DIM), sequence s spanning tokens cu_seqlens[s] to cu_seqlens[s + 1]; one program per block of
    # a sequence's queries and head, k read as (HEAD_DIM, BLOCK_N) through its pointers, exp and masks as written
    start_m = tl.program_id(0)
    head = tl.program_id(1)
    seq = tl.program_id(2)
    begin = tl.load(cu_seqlens + seq)
    seq_len = tl.load(cu_seqlens + seq + 1) - begin
    if start_m * BLOCK_M >= seq_len:
        return
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + (begin + offs_m)[:, None] * stride_t + head * stride_h + d[None, :],
                mask=offs_m[:, None] < seq_len, other=0.0)  # fmt: skip
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    hi = tl.minimum((start_m + 1) * BLOCK_M, seq_len) if CAUSAL else seq_len
    for start_n in range(0, hi, BLOCK_N):
        n = start_n + offs_n
        k = tl.load(k_ptr + (begin + n)[None, :] * stride_t + head * stride_h + d[:, None],
                    mask=n[None, :] < seq_len, other=0.0)  # fmt: skip
        s = tl.dot(q, k) * scale
        valid = n[None, :] < seq_len
        if CAUSAL:
            valid = valid & (offs_m[:, None] >= n[None, :])
        s = tl.where(valid, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + (begin + n)[:, None] * stride_t + head * stride_h + d[None, :],
                    mask=n[:, None] < seq_len, other=0.0)  # fmt: skip
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + (begin + offs_m)[:, None] * stride_t + head * stride_h + d[None, :],
             out.to(o_ptr.dtype.element_ty), mask=offs_m[:, None] < seq_len)  # fmt: skip


def nf4_dequant_kernel(q_ptr, absmax_ptr, code_ptr, out_ptr, n, BLOCK: tl.constexpr, QBLOCK: tl.constexpr):
    # 4-bit weights as QLoRA stores them: two codes a byte (the first in the high nibble), each code an index
    # into a 16-entry codebook looked up with tl.gather, one absmax scale per QBLOCK weights
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    packed = tl.load(q_ptr + offs, mask=offs < n // 2, other=0)
    codes = tl.interleave((packed >> 4) & 0xF, packed & 0xF).to(tl.int32)
    values = tl.gather(tl.load(code_ptr + tl.arange(0, 16)), codes, 0)
    out = pid * 2 * BLOCK + tl.arange(0, 2 * BLOCK)
    scale = tl.load(absmax_ptr + out // QBLOCK, mask=out < n, other=0.0)
    tl.store(out_ptr + out, (values * scale).to(out_ptr.dtype.element_ty), mask=out < n)


def fused_moe_kernel(
    a_ptr, w_ptr, c_ptr, route_w_ptr, sorted_ids_ptr, expert_ids_ptr, padded_len_ptr,
    N, K, num_valid, stride_am, stride_ak, stride_we, stride_wn, stride_wk, stride_cm, stride_cn,
    TOP_K: tl.constexpr, MUL_ROUTED_WEIGHT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):  # fmt: skip
    # a mixture of experts' up projection as serving engines fuse it: (token, choice) pairs sorted by expert and
    # padded to whole blocks (pad entries hold num_valid); each block of rows is one expert's, whose weight
    # (N, K) is read k-major; rows of a gathered by token id // TOP_K, the output row scaled by its router weight
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(tl.load(padded_len_ptr), BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * num_pid_n
    first_m = (pid // in_group) * GROUP_M
    group_rows = min(num_pid_m - first_m, GROUP_M)
    if first_m >= num_pid_m:
        return  # the grid was sized for the worst case of padding
    pid_m = first_m + (pid % in_group) % group_rows
    pid_n = (pid % in_group) // group_rows
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    ids = tl.load(sorted_ids_ptr + rows)
    valid = ids < num_valid
    expert = tl.load(expert_ids_ptr + pid_m).to(tl.int64)
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (ids // TOP_K)[:, None] * stride_am + offs_k[None, :] * stride_ak
    w_ptrs = w_ptr + expert * stride_we + offs_n[None, :] * stride_wn + offs_k[:, None] * stride_wk
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=valid[:, None] & (offs_k[None, :] < left), other=0.0)
        w = tl.load(w_ptrs, mask=offs_k[:, None] < left, other=0.0)
        acc += tl.dot(a, w)
        a_ptrs += BLOCK_K * stride_ak
        w_ptrs += BLOCK_K * stride_wk
    if MUL_ROUTED_WEIGHT:
        acc = acc * tl.load(route_w_ptr + ids, mask=valid, other=0.0)[:, None]
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + ids[:, None] * stride_cm + cols[None, :] * stride_cn, acc.to(c_ptr.dtype.element_ty),
             mask=valid[:, None] & (cols[None, :] < N))  # fmt: skip


def int8_quant_kernel(x_ptr, y_ptr, scale_ptr, stride, n_cols, BLOCK: tl.constexpr):
    # per-row symmetric int8 quantization as inference libraries write it: the scale from the row's largest
    # magnitude, values rounded half to even with libdevice's rint, clamped, one f32 scale per row
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    scale = tl.maximum(tl.max(tl.abs(x), axis=0), 1e-8) / 127.0
    q = tl.extra.libdevice.rint(x / scale)
    tl.store(y_ptr + row * stride + cols, tl.clamp(q, -128.0, 127.0).to(tl.int8), mask=mask)
    tl.store(scale_ptr + row, scale)


def tail_mass_kernel(p_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    # a sampler's tail mass: each row's probabilities (sorted, largest first) summed from the end, the suffix
    # sums a top-p cut compares with p; rows of a vocabulary slice, masked
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    p = tl.load(p_ptr + row * stride + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * stride + cols, tl.cumsum(p, axis=0, reverse=True), mask=mask)


def dropout_add_layernorm_kernel(x_ptr, res_ptr, w_ptr, b_ptr, y_ptr, keep_ptr, seed, p, stride, n_cols, eps,
                                 BLOCK: tl.constexpr):  # fmt: skip
    # a training step's residual block, fused: y = layer_norm(dropout(x) + residual) over masked rows, the
    # dropout mask saved (as bytes) for the backward pass; the weight and bias are loaded where they are used
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    offs = row * stride + cols
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(res_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    keep = tl.rand(seed, offs) > p
    h = tl.where(keep, x / (1 - p), 0.0) + r
    mean = tl.sum(h, axis=0) / n_cols
    d = tl.where(mask, h - mean, 0.0)
    rstd = 1 / tl.sqrt(tl.sum(d * d, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(y_ptr + offs, (d * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(keep_ptr + offs, keep.to(tl.int8), mask=mask)


def f16_acc_matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, ACC_IN_DOT: tl.constexpr,
):  # fmt: skip
    # the tutorial's matmul accumulating in f16 (half the accumulator registers), as inference kernels ask for
    # it: out_dtype=tl.float16 on the dot, the accumulator passed to it (ACC_IN_DOT) or added to its result;
    # rows wrapped with % M, a masked K tail, pointers advanced with +=
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float16)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BLOCK_K, other=0.0)
        if ACC_IN_DOT:
            acc = tl.dot(a, b, acc, out_dtype=tl.float16)
        else:
            acc += tl.dot(a, b, out_dtype=tl.float16)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + cm[:, None] * stride_cm + cn[None, :], acc, mask=(cm[:, None] < M) & (cn[None, :] < N))


def precision_matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, PRECISION: tl.constexpr,
):  # fmt: skip
    # an f32 matmul in the precision the caller asks for (tf32x3: near-f32 sums from three tf32 products);
    # rows wrapped with % M, a masked K tail, pointers advanced with +=
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + cm[:, None] * stride_cm + cn[None, :], acc, mask=(cm[:, None] < M) & (cn[None, :] < N))


def expert_histogram_kernel(ids_ptr, counts_ptr, n, BINS: tl.constexpr, BLOCK: tl.constexpr):
    """Tokens per expert (a MoE router's bincount of its top-k ids): each program's block counted with
    ``tl.histogram``, then added to the global counts."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    ids = tl.load(ids_ptr + offs, mask=mask, other=0)
    tl.atomic_add(counts_ptr + tl.arange(0, BINS), tl.histogram(ids, BINS, mask=mask), sem="relaxed")


def weight_grad_kernel(
    x_ptr, dy_ptr, dw_ptr, T, IN, OUT, stride_xt, stride_dyt, stride_dwi,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    """A linear layer's weight gradient ``dW = X^T @ dY``: the tokens are the reduction, ``X``'s tile is loaded as it
    is stored (``[tokens, in]``) and transposed for the dot; a masked token tail."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    ri = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    ro = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rt = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + rt[:, None] * stride_xt + ri[None, :]
    dy_ptrs = dy_ptr + rt[:, None] * stride_dyt + ro[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for t0 in range(0, T, BLOCK_K):
        x = tl.load(x_ptrs, mask=(rt[:, None] < T - t0) & (ri[None, :] < IN), other=0.0)
        dy = tl.load(dy_ptrs, mask=(rt[:, None] < T - t0) & (ro[None, :] < OUT), other=0.0)
        acc += tl.dot(tl.trans(x), dy)
        x_ptrs += BLOCK_K * stride_xt
        dy_ptrs += BLOCK_K * stride_dyt
    mask = (ri[:, None] < IN) & (ro[None, :] < OUT)
    tl.store(dw_ptr + ri[:, None] * stride_dwi + ro[None, :], acc.to(dw_ptr.dtype.element_ty), mask=mask)


def attention_bias_kernel(
    Q, K, V, B, Out, sm_scale, N_CTX, bias_len, OTHER: tl.constexpr,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    """Attention forward with an additive bias per head (relative-position tables, ALiBi materialized): the bias
    block loaded beside each key block, widened and scaled into the scores; q, k, v, out as [b*h, N_CTX, HEAD_DIM].
    Keys past ``bias_len`` take the load's ``other``: ``-inf`` masks them out (key padding), ``0.0`` leaves them."""
    start_m = tl.program_id(0)
    off_z = tl.program_id(1).to(tl.int64)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    base = off_z * N_CTX * HEAD_DIM
    q = tl.load(Q + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=offs_m[:, None] < N_CTX, other=0.0)
    b_ptrs = B + off_z * N_CTX * N_CTX + offs_m[:, None] * N_CTX + offs_n[None, :]
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    for start_n in range(0, N_CTX, BLOCK_N):
        cols = start_n + offs_n
        kt = tl.load(K + base + cols[None, :] * HEAD_DIM + offs_d[:, None], mask=cols[None, :] < N_CTX, other=0.0)
        bias = tl.load(b_ptrs + start_n, mask=(offs_m[:, None] < N_CTX) & (cols[None, :] < bias_len), other=OTHER)
        qk = tl.dot(q, kt) * qk_scale + bias.to(tl.float32) * 1.44269504
        qk = tl.where(cols[None, :] < N_CTX, qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + base + cols[:, None] * HEAD_DIM + offs_d[None, :], mask=cols[:, None] < N_CTX, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_ij
    acc = acc / l_i[:, None]
    o_ptrs = Out + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
    tl.store(o_ptrs, acc.to(Out.dtype.element_ty), mask=offs_m[:, None] < N_CTX)
