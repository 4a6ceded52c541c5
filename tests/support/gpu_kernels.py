"""Kernels the GPU tests share: the matmul and attention the benchmark times (same source), and a masked matmul."""

import numpy as np

import tilelab
import tilelab.language as tl
from benchmarks import gpu_kernels

matmul_kernel = tilelab.jit(gpu_kernels.matmul_kernel)
attention_kernel = tilelab.jit(gpu_kernels.attention_kernel)

F16 = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32"}


@tilelab.jit
def masked_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Any M, N, K: rows, columns and the K tail are masked (zeros come in)."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        kk = k + rk
        a = tl.load(a_ptr + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    c_mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty), mask=c_mask)


@tilelab.jit
def masked_matmul_bt_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """``a @ b.T`` for a row-major ``b`` of shape ``(N, K)``: the B tile is loaded K-contiguous (``x @ w.T``)."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        kk = k + rk
        a = tl.load(a_ptr + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rn[None, :] * K + kk[:, None], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    c_mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty), mask=c_mask)


ATTENTION = {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "o_ptr": "*fp16", "S": "i32", "scale": "fp32"}


@tilelab.jit
def shifted_exp_matmul_kernel(
    a_ptr, s_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, A_COLUMNS: tl.constexpr
):
    """``exp2(a - s[None, :]) @ b``: a per-column statistic ``s`` (attention backward's ``lse``) loaded every
    K step and used in the registers of the dot's operand; rows, columns and the K tail are masked.
    ``A_COLUMNS``: A stored column-major (``a[m, k]`` at ``m + k * M``)."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        kk = k + rk
        if A_COLUMNS:
            a_ptrs = a_ptr + rm[:, None] + kk[None, :] * M
        else:
            a_ptrs = a_ptr + rm[:, None] * K + kk[None, :]
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        s = tl.load(s_ptr + kk, mask=kk < K, other=0.0)
        p = tl.where(kk[None, :] < K, tl.math.exp2(a.to(tl.float32) - s[None, :]), 0.0)
        b = tl.load(b_ptr + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(p.to(tl.float16), b)
    c_mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=c_mask)


SHIFTED = {"a_ptr": "*fp16", "s_ptr": "*fp32", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32"}


def shifted_exp_matmul_reference(a, s, b):
    """What ``shifted_exp_matmul_kernel`` computes, in float32 with ``p`` rounded to f16 as the kernel does."""
    p = np.exp2(a.astype(np.float32) - s[None, :]).astype(np.float16).astype(np.float32)
    return p @ b.astype(np.float32)
