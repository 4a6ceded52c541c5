"""Kernels written the way LLM-training kernel libraries write them, with Triton's own imports renamed.

Each is a plain Triton kernel: ``import tilelab as triton`` / ``import tilelab.language as tl`` is
the only change. They use what those libraries use: row-wise programs over a 2-d tensor with its
row stride, ``tl.math``/``libdevice`` functions, masks from ``triton.next_power_of_2`` blocks,
early returns for ignored rows, per-program partial weight gradients reduced by the caller,
``@triton.heuristics`` and ``@triton.autotune``.
"""

from __future__ import annotations

import tilelab as triton
import tilelab.language as tl
from tilelab.language.extra import libdevice
from tilelab.language.extra.cuda import libdevice as cuda_libdevice


# ------------------------------------------------------------------ RMSNorm
@triton.jit
def rms_norm_fwd(Y, Y_row_stride, X, X_row_stride, W, RSTD, n_cols, eps, offset, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(X + row * X_row_stride + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0).to(tl.float32)
    mean_square = tl.sum(x * x, axis=0) / n_cols
    rstd = libdevice.rsqrt(mean_square + eps)
    tl.store(RSTD + row, rstd)
    y = x * rstd * (offset + w)
    tl.store(Y + row * Y_row_stride + cols, y.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def rms_norm_bwd(
    dY,
    dY_row_stride,
    dX,
    X,
    X_row_stride,
    W,
    RSTD,
    dW,
    dW_row_stride,
    n_rows,
    n_cols,
    offset,
    rows_per_program,
    BLOCK_SIZE: tl.constexpr,
):
    """Each program walks ``rows_per_program`` rows and writes its own partial ``dW`` row."""
    pid = tl.program_id(0)
    row_start = pid * rows_per_program
    row_end = tl.minimum((pid + 1) * rows_per_program, n_rows)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32) + offset
    dw_acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for row in range(row_start, row_end):
        x = tl.load(X + row * X_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dY + row * dY_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.load(RSTD + row)
        m = dy * w
        dx = rstd * m - rstd * rstd * rstd * (tl.sum(m * x, axis=0) / n_cols) * x
        dw_acc += dy * x * rstd
        tl.store(dX + row * dY_row_stride + cols, dx.to(dX.dtype.element_ty), mask=mask)
    tl.store(dW + pid * dW_row_stride + cols, dw_acc, mask=mask)


# ------------------------------------------------------------------ LayerNorm (weight and bias gradients)
@triton.jit
def layer_norm_fwd(Y, X, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    w = tl.load(W + cols, mask=mask)
    b = tl.load(B + cols, mask=mask)
    tl.store(Y + row * stride + cols, xc * rstd * w + b, mask=mask)


@triton.jit
def layer_norm_bwd(DX, DY, DW, DB, X, W, Mean, Rstd, stride, M, N, ROWS: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    """``ROWS`` rows per program; partial ``DW``/``DB`` rows per program, summed by the caller."""
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    dw = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    db = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for i in tl.static_range(ROWS):
        row = pid * ROWS + i
        if row < M:
            x = tl.load(X + row * stride + cols, mask=mask, other=0).to(tl.float32)
            dy = tl.load(DY + row * stride + cols, mask=mask, other=0).to(tl.float32)
            mean = tl.load(Mean + row)
            rstd = tl.load(Rstd + row)
            xhat = tl.where(mask, (x - mean) * rstd, 0.0)
            wdy = tl.where(mask, w * dy, 0.0)
            c1 = tl.sum(xhat * wdy, axis=0) / N
            c2 = tl.sum(wdy, axis=0) / N
            tl.store(DX + row * stride + cols, (wdy - (xhat * c1 + c2)) * rstd, mask=mask)
            dw += dy * xhat
            db += dy
    tl.store(DW + pid * N + cols, dw, mask=mask)
    tl.store(DB + pid * N + cols, db, mask=mask)


# ------------------------------------------------------------------ SwiGLU and GELU
@triton.jit
def silu(x):
    return x * tl.sigmoid(x)


@triton.jit
def swiglu_fwd(a_ptr, b_ptr, c_ptr, stride, n_cols: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    program_id = tl.program_id(0).to(tl.int64)
    a_ptr += program_id * stride
    b_ptr += program_id * stride
    c_ptr += program_id * stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    a_row = tl.load(a_ptr + col_offsets, mask=mask, other=0).to(tl.float32)
    b_row = tl.load(b_ptr + col_offsets, mask=mask, other=0)
    c_row = silu(a_row).cast(b_row.dtype) * b_row
    tl.store(c_ptr + col_offsets, c_row, mask=mask)


@triton.jit
def swiglu_bwd(dc_ptr, a_ptr, b_ptr, stride, n_cols: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    """Writes da into a_ptr and db into b_ptr (in place, as the libraries do)."""
    program_id = tl.program_id(0).to(tl.int64)
    dc_ptr += program_id * stride
    a_ptr += program_id * stride
    b_ptr += program_id * stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    dc_row = tl.load(dc_ptr + col_offsets, mask=mask, other=0)
    a_row = tl.load(a_ptr + col_offsets, mask=mask, other=0).to(tl.float32)
    b_row = tl.load(b_ptr + col_offsets, mask=mask, other=0)
    sig_a = tl.sigmoid(a_row)
    silu_a = a_row * sig_a
    db_row = dc_row * silu_a
    da_row = dc_row * (silu_a * (1 - sig_a) + sig_a) * b_row
    tl.store(a_ptr + col_offsets, da_row, mask=mask)
    tl.store(b_ptr + col_offsets, db_row, mask=mask)


@triton.jit
def gelu_fwd(x_ptr, y_erf_ptr, y_tanh_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y_erf = 0.5 * x * (1 + tl.math.erf(x * 0.7071067811865476))
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    y_tanh = 0.5 * x * (1 + cuda_libdevice.tanh(inner))
    tl.store(y_erf_ptr + offs, y_erf, mask=mask)
    tl.store(y_tanh_ptr + offs, y_tanh, mask=mask)


# ------------------------------------------------------------------ RoPE
@triton.jit
def rope_fwd(
    q_ptr,
    q_row_stride,
    cos,
    cos_row_stride,
    sin,
    sin_row_stride,
    sl,
    n_qh: tl.constexpr,
    hd: tl.constexpr,
    pad_n_qh: tl.constexpr,
    pad_hd: tl.constexpr,
):
    """q: [batch * seq, n_qh, hd] rotated in place by the position's cos/sin (half-split layout)."""
    pid = tl.program_id(0)
    q_ptr = q_ptr + pid * q_row_stride
    cos_row_idx = pid % sl
    cos = cos + cos_row_idx * cos_row_stride
    sin = sin + cos_row_idx * sin_row_stride
    cos_offsets = tl.arange(0, pad_hd // 2)
    cos_mask = cos_offsets < hd // 2
    cos_row = tl.load(cos + cos_offsets, mask=cos_mask, other=0)
    sin_row = tl.load(sin + cos_offsets, mask=cos_mask, other=0)
    first_half = tl.arange(0, pad_n_qh)[:, None] * hd + tl.arange(0, pad_hd // 2)[None, :]
    mask = (tl.arange(0, pad_n_qh)[:, None] < n_qh) & (tl.arange(0, pad_hd // 2)[None, :] < hd // 2)
    q1 = tl.load(q_ptr + first_half, mask=mask, other=0).to(sin_row.dtype)
    second_half = first_half + (hd // 2)
    q2 = tl.load(q_ptr + second_half, mask=mask, other=0).to(sin_row.dtype)
    tl.store(q_ptr + first_half, q1 * cos_row - q2 * sin_row, mask=mask)
    tl.store(q_ptr + second_half, q2 * cos_row + q1 * sin_row, mask=mask)


# ------------------------------------------------------------------ cross-entropy (early return) and KL-div
@triton.jit
def cross_entropy_fwd_bwd(
    X_ptr,
    X_stride,
    Y_ptr,
    loss_ptr,
    n_cols,
    n_non_ignore,
    ignore_index,
    label_smoothing: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    HAS_WEIGHT: tl.constexpr = False,
    W_ptr=None,
):
    """Loss per row; the gradient overwrites the logits (the libraries' in-place trick)."""
    program_id = tl.program_id(0).to(tl.int64)
    Y_ptr += program_id
    y = tl.load(Y_ptr)
    X_ptr += program_id * X_stride
    if y == ignore_index:
        for i in range(0, n_cols, BLOCK_SIZE):
            X_offsets = i + tl.arange(0, BLOCK_SIZE)
            tl.store(X_ptr + X_offsets, 0.0, mask=X_offsets < n_cols)
        return
    loss_ptr += program_id
    m = float("-inf")
    d = 0.0
    ori_X_y = tl.load(X_ptr + y).cast(tl.float32)
    scaled_x_sum = 0.0
    eps = label_smoothing / n_cols
    for i in range(0, n_cols, BLOCK_SIZE):
        X_offsets = i + tl.arange(0, BLOCK_SIZE)
        X_block = tl.load(X_ptr + X_offsets, mask=X_offsets < n_cols, other=float("-inf")).cast(tl.float32)
        block_max = tl.max(X_block)
        if label_smoothing > 0:
            scaled_x_sum += tl.sum(tl.where(X_offsets < n_cols, -eps * X_block, 0.0))
        m_new = tl.maximum(m, block_max)
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(X_block - m_new))
        m = m_new
    lse = m + tl.log(d)
    for i in range(0, n_cols, BLOCK_SIZE):
        X_offsets = i + tl.arange(0, BLOCK_SIZE)
        X_block = tl.load(X_ptr + X_offsets, mask=X_offsets < n_cols, other=float("-inf")).cast(tl.float32)
        X_block = (tl.exp(X_block - m) / d - eps) / n_non_ignore
        X_block = tl.where(X_offsets != y, X_block, X_block - (1 - label_smoothing) / n_non_ignore)
        tl.store(X_ptr + X_offsets, X_block, mask=X_offsets < n_cols)
    loss = lse - ori_X_y
    if label_smoothing > 0:
        smooth_loss = scaled_x_sum + label_smoothing * lse
        loss = loss * (1 - label_smoothing) + smooth_loss
    if HAS_WEIGHT:
        loss = loss * tl.load(W_ptr + y)
    tl.store(loss_ptr, loss / n_non_ignore)


@triton.jit
def kl_div_fwd(
    y_pred_ptr,
    y_pred_stride,
    y_true_ptr,
    y_true_stride,
    loss_ptr,
    n_cols,
    eps,
    BLOCK_SIZE: tl.constexpr,
    log_target: tl.constexpr = False,
):
    """Row sums of ``y_true * (log y_true - y_pred)`` (``y_pred`` holds log-probabilities)."""
    pid = tl.program_id(0).to(tl.int64)
    y_pred_ptr += pid * y_pred_stride
    y_true_ptr += pid * y_true_stride
    total = 0.0
    for i in range(0, n_cols, BLOCK_SIZE):
        offsets = i + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_cols
        y = tl.load(y_pred_ptr + offsets, mask=mask, other=0.0)
        y_true = tl.load(y_true_ptr + offsets, mask=mask, other=0.0)
        if not log_target:
            loss = y_true * (tl.log(tl.maximum(y_true, eps)) - y)
        else:
            loss = tl.exp(y_true) * (y_true - y)
        total += tl.sum(loss, axis=0)
    tl.store(loss_ptr + pid, total)


# ------------------------------------------------------------------ MoE grouped GEMM
@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 32}, num_warps=4),
        triton.Config({"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16}, num_warps=8),
    ],
    key=["N", "K"],
    reset_to_zero=["out_ptr"],
)
@triton.heuristics({"EVEN_K": lambda args: args["K"] % args["BLOCK_K"] == 0})
@triton.jit
def moe_grouped_gemm(
    x_ptr,
    w_ptr,
    out_ptr,
    expert_offsets_ptr,
    tiles_ptr,
    N,
    K,
    stride_xm,
    stride_xk,
    stride_we,
    stride_wk,
    stride_wn,
    stride_om,
    stride_on,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    EVEN_K: tl.constexpr,
):
    """Tokens sorted by expert; program (t, n) multiplies one ``BLOCK_M`` tile of one expert's tokens.

    ``tiles_ptr`` holds, per tile, the expert and the tile's first row; rows past the expert's
    last token are masked. Accumulates into ``out`` with atomics (hence ``reset_to_zero``).
    """
    tile = tl.program_id(0)
    pid_n = tl.program_id(1)
    expert = tl.load(tiles_ptr + 2 * tile)
    row0 = tl.load(tiles_ptr + 2 * tile + 1)
    row_end = tl.load(expert_offsets_ptr + expert + 1)
    rows = row0 + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    row_mask = rows < row_end
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    w_base = w_ptr + expert.to(tl.int64) * stride_we
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        k_mask = ks < K if not EVEN_K else ks >= 0
        a = tl.load(
            x_ptr + rows[:, None] * stride_xm + ks[None, :] * stride_xk,
            mask=row_mask[:, None] & k_mask[None, :],
            other=0.0,
        )
        b = tl.load(
            w_base + ks[:, None] * stride_wk + cols[None, :] * stride_wn,
            mask=k_mask[:, None] & (cols[None, :] < N),
            other=0.0,
        )
        acc = tl.dot(a, b, acc, input_precision="ieee")
    out = out_ptr + rows[:, None] * stride_om + cols[None, :] * stride_on
    tl.atomic_add(out, acc, mask=row_mask[:, None] & (cols[None, :] < N))
