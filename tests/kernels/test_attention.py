"""Flash-attention forward: online softmax over key blocks, causal and not, with a masked sequence tail."""

import numpy as np
import pytest

import tilelab
import tilelab.language as tl

from .support import assert_rel_norm, cdiv


@tilelab.jit
def flash_attention_fwd_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    seq_len,
    sm_scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
):
    """One program per (query block, head): O = softmax(Q K^T * scale) V without materializing the scores.

    The running row maximum ``m_i`` and normalizer ``l_i`` rescale the accumulator when
    a later key block raises the maximum (Dao et al., FlashAttention, 2022).
    """
    start_m = tl.program_id(0)
    head = tl.program_id(1)
    base = head * seq_len * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=offs_m[:, None] < seq_len, other=0.0)
    m_i = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    if CAUSAL:
        hi = tl.minimum(seq_len, (start_m + 1) * BLOCK_M)
    else:
        hi = seq_len
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_offsets = base + offs_n[:, None] * HEAD_DIM + offs_d[None, :]
        k = tl.load(k_ptr + kv_offsets, mask=offs_n[:, None] < seq_len, other=0.0)
        v = tl.load(v_ptr + kv_offsets, mask=offs_n[:, None] < seq_len, other=0.0)
        qk = tl.dot(q, tl.trans(k)) * sm_scale
        valid = offs_n[None, :] < seq_len
        if CAUSAL:
            valid = valid & (offs_m[:, None] >= offs_n[None, :])
        qk = tl.where(valid, qk, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(qk - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(
        o_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :],
        acc.to(o_ptr.dtype.element_ty),
        mask=offs_m[:, None] < seq_len,
    )


def _attention_ref(q, k, v, scale, causal):
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    scores = q @ k.transpose(0, 2, 1) * scale
    if causal:
        n = q.shape[1]
        scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_forward(backend, dev, rng, causal):
    heads, seq_len, head_dim, scale = 3, 100, 32, 0.3
    q, k, v = rng.standard_normal((3, heads, seq_len, head_dim)).astype(np.float16)
    out = dev.empty(q.shape, np.float16)
    flash_attention_fwd_kernel[(cdiv(seq_len, 32), heads)](
        dev.put(q),
        dev.put(k),
        dev.put(v),
        out,
        seq_len,
        scale,
        HEAD_DIM=head_dim,
        BLOCK_M=32,
        BLOCK_N=32,
        CAUSAL=causal,
        target=backend,
    )
    assert_rel_norm(dev.get(out), _attention_ref(q, k, v, scale, causal), 2e-3)
