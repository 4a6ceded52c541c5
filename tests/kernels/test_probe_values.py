"""The probe's newer kernels (``benchmarks/probe/kernels.py``) against numpy on small random inputs, per backend:
tails of every block, repeating ids for the atomics, a carried recurrence across chunks."""

from __future__ import annotations

import numpy as np
import pytest

import tilelab
from benchmarks.probe import kernels as K


def rel_err(got, ref) -> float:
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    return float(np.abs(got - ref).max() / np.abs(ref).max())


def test_w8a16_matmul(backend, dev, rng):
    m, n, k = 70, 96, 80
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    scale = (rng.random(n) * 0.01).astype(np.float16)
    c = dev.put(np.zeros((m, n), np.float16))
    kernel = tilelab.jit(K.w8a16_matmul_kernel)
    grid = (3 * 3,)
    kernel[grid](dev.put(a), dev.put(b), dev.put(scale), c, m, n, k, k, 1, n, 1, n, 1,
                 BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, GROUP_M=2, target=backend)  # fmt: skip
    ref = (a.astype(np.float64) @ b.astype(np.float64)) * scale.astype(np.float64)
    assert rel_err(dev.get(c), ref) < 2e-3


def test_linear_gelu(backend, dev, rng):
    m, n, k = 70, 96, 80
    x = rng.standard_normal((m, k)).astype(np.float16)
    w = (rng.standard_normal((n, k)) * 0.1).astype(np.float16)
    bias = rng.standard_normal(n).astype(np.float16)
    y = dev.put(np.zeros((m, n), np.float16))
    tilelab.jit(K.linear_gelu_kernel)[(3, 3)](dev.put(x), dev.put(w), dev.put(bias), y, m, n, k, k, k, n,
                                              BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, target=backend)  # fmt: skip
    z = x.astype(np.float64) @ w.astype(np.float64).T + bias
    assert rel_err(dev.get(y), 0.5 * z * (1 + np.tanh(0.7978845608028654 * (z + 0.044715 * z**3)))) < 2e-3


@pytest.mark.parametrize("stride", [1, 2])
def test_conv2d_nhwc(backend, dev, rng, stride):
    n, h, w, c, k, pad = 2, 9, 7, 24, 20, 1
    p, q = (h + 2 * pad - 3) // stride + 1, (w + 2 * pad - 3) // stride + 1
    x = rng.standard_normal((n, h, w, c)).astype(np.float16)
    wt = rng.standard_normal((3, 3, c, k)).astype(np.float16)
    y = dev.put(np.zeros((n, p, q, k), np.float16))
    grid = (-(-n * p * q // 32), -(-k // 16))
    meta = dict(R=3, S=3, PAD=pad, STRIDE=stride, BLOCK_M=32, BLOCK_N=16, BLOCK_K=16)
    tilelab.jit(K.conv2d_nhwc_kernel)[grid](dev.put(x), dev.put(wt), y, n, h, w, c, k, p, q, **meta, target=backend)
    xp = np.pad(x.astype(np.float64), ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    ref = sum(xp[:, r : r + p * stride : stride, s : s + q * stride : stride, :] @ wt[r, s].astype(np.float64)
              for r in range(3) for s in range(3))  # fmt: skip
    assert rel_err(dev.get(y), ref) < 2e-3


def test_embedding_backward_adds_every_token(backend, dev, rng):
    tokens, dim, vocab = 50, 40, 7  # ids repeat
    ids = rng.integers(0, vocab, tokens).astype(np.int64)
    dy = rng.standard_normal((tokens, dim)).astype(np.float16)
    dw = dev.put(np.zeros((vocab, dim), np.float32))
    grid = (-(-tokens // 16), -(-dim // 32))
    tilelab.jit(K.embedding_bwd_kernel)[grid](dev.put(ids), dev.put(dy), dw, tokens, dim, BLOCK_T=16, BLOCK_D=32,
                                              target=backend)  # fmt: skip
    ref = np.zeros((vocab, dim))
    np.add.at(ref, ids, dy.astype(np.float64))
    np.testing.assert_allclose(dev.get(dw), ref, rtol=1e-5, atol=1e-5)


def test_linear_recurrence_carries_across_chunks(backend, dev, rng):
    length, d = 150, 40
    a = rng.uniform(0.9, 1.0, (length, d)).astype(np.float32)
    b = rng.standard_normal((length, d)).astype(np.float32)
    h = dev.put(np.zeros((length, d), np.float32))
    tilelab.jit(K.linear_scan_kernel)[(-(-d // 16),)](dev.put(a), dev.put(b), h, length, d, BLOCK_L=32, BLOCK_D=16,
                                                      target=backend)  # fmt: skip
    ref, state = np.zeros((length, d)), np.zeros(d)
    for i in range(length):
        state = a[i] * state + b[i]
        ref[i] = state
    assert rel_err(dev.get(h), ref) < 1e-5


def test_moe_router_picks_the_two_largest(backend, dev, rng):
    tokens, experts = 37, 16
    logits = rng.standard_normal((tokens, experts)).astype(np.float32)
    weights, ids = dev.put(np.zeros((tokens, 2), np.float32)), dev.put(np.zeros((tokens, 2), np.int32))
    tilelab.jit(K.moe_router_kernel)[(-(-tokens // 8),)](dev.put(logits), weights, ids, tokens, E=experts, TOPK=2,
                                                         BLOCK_T=8, target=backend)  # fmt: skip
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    order = np.argsort(-p, 1, kind="stable")[:, :2]
    top = np.take_along_axis(p, order, 1)
    np.testing.assert_array_equal(dev.get(ids), order)
    np.testing.assert_allclose(dev.get(weights), top / top.sum(1, keepdims=True), rtol=1e-5)


def test_group_norm(backend, dev, rng):
    n, c, hw, groups = 3, 12, 50, 4
    x = rng.standard_normal((n, c, hw)).astype(np.float16)
    w, b = rng.standard_normal(c).astype(np.float32), rng.standard_normal(c).astype(np.float32)
    y = dev.put(np.zeros_like(x))
    tilelab.jit(K.group_norm_kernel)[(n * groups,)](dev.put(x), y, dev.put(w), dev.put(b), c, hw, groups, 1e-5,
                                                    BLOCK=64, target=backend)  # fmt: skip
    xr = x.astype(np.float64).reshape(n, groups, -1)
    norm = (xr - xr.mean(-1, keepdims=True)) / np.sqrt(xr.var(-1, keepdims=True) + 1e-5)
    assert rel_err(dev.get(y), norm.reshape(n, c, hw) * w[None, :, None] + b[None, :, None]) < 2e-3


def test_decode_attention_over_a_paged_cache(backend, dev, rng):
    batch, kv_heads, group, d = 3, 2, 4, 64
    seq = np.array([37, 5, 64], np.int32)  # a tail, a sequence shorter than a block, a whole number of blocks
    slots = rng.permutation(200)  # each sequence's tokens scattered over the cache
    table = np.zeros((batch, 64), np.int32)
    ends = np.cumsum(seq)
    for b in range(batch):
        table[b, : seq[b]] = slots[ends[b] - seq[b] : ends[b]]
    q = rng.standard_normal((batch, kv_heads * group, d)).astype(np.float16)
    k, v = (rng.standard_normal((200, kv_heads, d)).astype(np.float16) for _ in range(2))
    out = dev.put(np.zeros_like(q))
    scale = d**-0.5
    tilelab.jit(K.decode_attention_kernel)[(batch, kv_heads)](
        dev.put(q), dev.put(k), dev.put(v), dev.put(table), dev.put(seq), out, scale, kv_heads * group * d, d,
        kv_heads * d, d, kv_heads * d, d, 64, kv_heads * group * d, d,
        GROUP=group, BLOCK_H=16, BLOCK_N=16, HEAD_DIM=d, target=backend,
    )  # fmt: skip
    ref = np.zeros(q.shape)
    for b in range(batch):
        for h in range(kv_heads * group):
            rows = table[b, : seq[b]]
            s = k[rows, h // group].astype(np.float64) @ q[b, h].astype(np.float64) * scale
            p = np.exp(s - s.max())
            ref[b, h] = p / p.sum() @ v[rows, h // group].astype(np.float64)
    assert rel_err(dev.get(out), ref) < 2e-3


def _address(x) -> int:
    return x.ctypes.data if isinstance(x, np.ndarray) else x.data_ptr()


def test_grouped_matmul_reads_its_operands_through_address_tables(backend, dev, rng):
    if backend in ("interpret", "cuda-ir"):
        pytest.skip("the interpreter reads only the arrays passed as arguments, not addresses loaded from them")
    shapes = [(40, 48, 36), (16, 80, 64), (70, 20, 50)]  # tails in every dim; k not a multiple of BLOCK_K
    a = [rng.standard_normal((m, k)).astype(np.float16) for m, n, k in shapes]
    b = [rng.standard_normal((k, n)).astype(np.float16) for m, n, k in shapes]
    c = [dev.put(np.zeros((m, n), np.float16)) for m, n, k in shapes]
    a_dev, b_dev = [dev.put(x) for x in a], [dev.put(x) for x in b]

    def table(xs):
        return dev.put(np.array([_address(x) for x in xs], np.int64))

    sizes = dev.put(np.array(shapes, np.int32).ravel())
    strides = dev.put(np.array([(k, n, n) for m, n, k in shapes], np.int32).ravel())
    meta = dict(NUM_PROGRAMS=4, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
    tilelab.jit(K.grouped_matmul_kernel)[(4,)](table(a_dev), table(b_dev), table(c), sizes, strides, len(shapes),
                                               **meta, target=backend)  # fmt: skip
    for x, y, z in zip(a, b, c):
        assert rel_err(dev.get(z), x.astype(np.float64) @ y.astype(np.float64)) < 2e-3


def _pack_nibbles(q, axis):
    """Eight 4-bit values along ``axis`` into one int32 (the first in the low bits), as GPTQ packs them."""
    q = np.moveaxis(q.astype(np.uint32), axis, 0)
    words = np.zeros((q.shape[0] // 8, *q.shape[1:]), np.uint32)
    for j in range(8):
        words |= q[j::8] << np.uint32(4 * j)
    return np.moveaxis(words.view(np.int32), 0, axis)


def test_w4a16_matmul_unpacks_nibbles_zeros_and_scales(backend, dev, rng):
    m, n, k, group = 40, 48, 128, 32  # m and n leave tails; four groups of scales and zeros
    a = rng.standard_normal((m, k)).astype(np.float16)
    q = rng.integers(0, 16, (k, n))
    z = rng.integers(0, 16, (k // group, n))
    scales = (rng.random((k // group, n)) * 0.1 + 0.01).astype(np.float16)
    c = dev.put(np.zeros((m, n), np.float16))
    args = (dev.put(a), dev.put(_pack_nibbles(q, 0)), dev.put(scales), dev.put(_pack_nibbles(z, 1)), c)
    meta = dict(GROUP_SIZE=group, BLOCK_M=16, BLOCK_N=32, BLOCK_K=32, GROUP_M=2)
    tilelab.jit(K.w4a16_matmul_kernel)[(3 * 2,)](*args, m, n, k, k, n, n, n, n // 8, **meta, target=backend)
    w = (q - np.repeat(z, group, 0)) * np.repeat(scales.astype(np.float64), group, 0)
    assert rel_err(dev.get(c), a.astype(np.float64) @ w) < 2e-3


def test_w4a16_matmul_on_warpgroup_tiles(backend, dev, rng):
    """The tiles and warps the probe times (the wgmma path on Hopper, whose first compile ptxas serializes:
    compiled again with the loop's exit rotated, ``backends/cuda/lower_control.py``)."""
    m, n, k, group = 200, 256, 512, 128  # m leaves a tail in the second row of programs
    a = rng.standard_normal((m, k)).astype(np.float16)
    q, z = rng.integers(0, 16, (k, n)), rng.integers(0, 16, (k // group, n))
    scales = (rng.random((k // group, n)) * 0.1 + 0.01).astype(np.float16)
    c = dev.put(np.zeros((m, n), np.float16))
    args = (dev.put(a), dev.put(_pack_nibbles(q, 0)), dev.put(scales), dev.put(_pack_nibbles(z, 1)), c)
    meta = dict(GROUP_SIZE=group, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3)
    tilelab.jit(K.w4a16_matmul_kernel)[(2 * 2,)](*args, m, n, k, k, n, n, n, n // 8, **meta, target=backend)
    w = (q - np.repeat(z, group, 0)) * np.repeat(scales.astype(np.float64), group, 0)
    assert rel_err(dev.get(c), a.astype(np.float64) @ w) < 2e-3


def test_fp8_block_matmul_scales_each_partial_product(backend, dev, rng):
    import ml_dtypes

    m, n, k, block = 40, 64, 96, 32  # m leaves a tail; k not a multiple of BLOCK_K (a masked last step)
    a = rng.standard_normal((m, k)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.standard_normal((n, k)).astype(ml_dtypes.float8_e4m3fn)
    a_s = (rng.random((m, -(-k // block))) + 0.5).astype(np.float32)
    b_s = (rng.random((n // block, -(-k // block))) + 0.5).astype(np.float32)
    c = dev.put(np.zeros((m, n), ml_dtypes.bfloat16))
    meta = dict(SCALE_BLOCK=block, BLOCK_M=16, BLOCK_N=32, BLOCK_K=32, GROUP_M=2)
    grid = (3 * 2,)
    tilelab.jit(K.fp8_block_matmul_kernel)[grid](dev.put(a), dev.put(b), dev.put(a_s), dev.put(b_s), c, m, n, k, k,
                                                 k, n, a_s.shape[1], b_s.shape[1], **meta, target=backend)  # fmt: skip
    x = a.astype(np.float64) * np.repeat(a_s, block, 1)[:, :k]
    y = b.astype(np.float64) * np.repeat(np.repeat(b_s, block, 0), block, 1)[:, :k]
    assert rel_err(dev.get(c).astype(np.float64), x @ y.T) < 1e-2


def test_layernorm_backward_adds_rows_under_spin_locks(backend, dev, rng):
    m, n, groups = 37, 100, 4  # several rows per partial row; n leaves a tail of the block
    x = rng.standard_normal((m, n)).astype(np.float32)
    dy = rng.standard_normal((m, n)).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)
    mean = x.mean(1).astype(np.float32)
    rstd = (1 / np.sqrt(x.var(1) + 1e-5)).astype(np.float32)
    dx = dev.put(np.zeros((m, n), np.float32))
    dw, db = dev.put(np.full((groups, n), np.nan, np.float32)), dev.put(np.full((groups, n), np.nan, np.float32))
    locks = dev.put(np.zeros(2 * groups, np.int32))
    args = (dx, dev.put(dy), dw, db, dev.put(x), dev.put(w), dev.put(mean), dev.put(rstd), locks, n, n)
    tilelab.jit(K.layernorm_bwd_locked_kernel)[(m,)](*args, GROUP_M=groups, BLOCK=128, target=backend)
    xhat = (x - mean[:, None]) * rstd[:, None]
    wdy = w * dy
    ref_dx = (wdy - (xhat * (xhat * wdy).mean(1, keepdims=True) + wdy.mean(1, keepdims=True))) * rstd[:, None]
    np.testing.assert_allclose(dev.get(dx), ref_dx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dev.get(dw).sum(0), (dy * xhat).sum(0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dev.get(db).sum(0), dy.sum(0), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(dev.get(locks), [0] * groups + [1] * groups)


@pytest.mark.parametrize("causal", [False, True])
def test_varlen_attention_keeps_sequences_apart(backend, dev, rng, causal):
    lengths, heads, d = [37, 5, 64, 20], 2, 16  # tails of the blocks; one sequence shorter than a block
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    q, k, v = (rng.standard_normal((starts[-1], heads, d)).astype(np.float16) for _ in range(3))
    o = dev.put(np.zeros((starts[-1], heads, d), np.float16))
    grid = (-(-max(lengths) // 16), heads, len(lengths))
    tilelab.jit(K.varlen_attention_kernel)[grid](dev.put(q), dev.put(k), dev.put(v), o, dev.put(starts), d**-0.5,
                                                 heads * d, d, CAUSAL=causal, BLOCK_M=16, BLOCK_N=16, HEAD_DIM=d,
                                                 target=backend)  # fmt: skip
    got = dev.get(o)
    for lo, hi in zip(starts[:-1], starts[1:]):
        x, y, z = (a[lo:hi].astype(np.float64).transpose(1, 0, 2) for a in (q, k, v))
        s = x @ y.transpose(0, 2, 1) * d**-0.5
        if causal:
            s = np.where(np.tril(np.ones((hi - lo, hi - lo), bool)), s, -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        ref = (p / p.sum(-1, keepdims=True)) @ z
        assert rel_err(got[lo:hi].transpose(1, 0, 2), ref) < 1e-2


def test_nf4_dequant_looks_codes_up_in_the_codebook(backend, dev, rng):
    import ml_dtypes

    n, qblock = 1000, 64  # a tail of the last block
    q = rng.integers(0, 256, n // 2).astype(np.uint8)
    absmax = (rng.random(-(-n // qblock)) + 0.5).astype(np.float32)
    code = np.sort(rng.standard_normal(16)).astype(np.float32)
    out = dev.put(np.zeros(n, ml_dtypes.bfloat16))
    grid = (-(-(n // 2) // 128),)
    args = (dev.put(q), dev.put(absmax), dev.put(code), out, n)
    tilelab.jit(K.nf4_dequant_kernel)[grid](*args, BLOCK=128, QBLOCK=qblock, target=backend)
    codes = np.stack([q >> 4, q & 15], -1).ravel()
    ref = code[codes] * np.repeat(absmax, qblock)[:n]
    np.testing.assert_array_equal(dev.get(out), ref.astype(ml_dtypes.bfloat16))


def moe_align(topk_ids: np.ndarray, experts: int, block: int):
    """The (token, choice) pairs sorted by expert, each expert's padded to whole blocks with ``topk_ids.size``;
    the expert of each block; the padded length."""
    flat = topk_ids.ravel()
    ids, owners = [], []
    for e in range(experts):
        mine = np.flatnonzero(flat == e)
        padded = -(-len(mine) // block) * block
        ids.append(np.concatenate([mine, np.full(padded - len(mine), flat.size)]))
        owners += [e] * (padded // block)
    ids = np.concatenate(ids).astype(np.int32)
    return ids, np.array(owners, np.int32), np.array([len(ids)], np.int32)


@pytest.mark.parametrize("routed", [False, True])
def test_fused_moe_gathers_rows_and_weights_per_expert(backend, dev, rng, routed):
    tokens, top_k, experts, n, k, bm = 37, 2, 4, 48, 40, 16  # n and k leave tails; one expert gets no token
    a = rng.standard_normal((tokens, k)).astype(np.float16)
    w = (rng.standard_normal((experts, n, k)) * 0.2).astype(np.float16)
    topk_ids = np.stack([rng.choice([0, 1, 3], top_k, replace=False) for _ in range(tokens)])
    route = rng.random((tokens, top_k)).astype(np.float32)
    ids, owners, padded = moe_align(topk_ids, experts, bm)
    c = dev.put(np.zeros((tokens * top_k, n), np.float16))
    worst = -(-(tokens * top_k + experts * (bm - 1)) // bm)  # blocks if every expert left a partial one
    grid = (worst * -(-n // 32),)
    args = (dev.put(a), dev.put(w), c, dev.put(route), dev.put(ids), dev.put(owners), dev.put(padded))
    tilelab.jit(K.fused_moe_kernel)[grid](*args, n, k, tokens * top_k, k, 1, n * k, k, 1, n, 1, TOP_K=top_k,
                                          MUL_ROUTED_WEIGHT=routed, BLOCK_M=bm, BLOCK_N=32, BLOCK_K=16, GROUP_M=2,
                                          target=backend)  # fmt: skip
    ref = np.einsum("tk,tcnk->tcn", a.astype(np.float64), w[topk_ids].astype(np.float64))
    if routed:
        ref = ref * route[..., None]
    assert rel_err(dev.get(c), ref.reshape(tokens * top_k, n)) < 2e-3


def test_int8_quantization_rounds_halves_to_even(backend, dev, rng):
    import ml_dtypes

    rows, n = 6, 1000
    x = (rng.standard_normal((rows, n)) * 3).astype(ml_dtypes.bfloat16)
    x[0, :4] = [127.0, 0.5, 1.5, -2.5]  # the row's scale is 1: halves land on rint's ties
    y, scale = dev.put(np.zeros((rows, n), np.int8)), dev.put(np.zeros(rows, np.float32))
    tilelab.jit(K.int8_quant_kernel)[(rows,)](dev.put(x), y, scale, n, n, BLOCK=1024, target=backend)
    xf = x.astype(np.float32)
    s = np.maximum(np.abs(xf).max(1), np.float32(1e-8)) / np.float32(127.0)
    ref = np.clip(np.rint(xf / s[:, None]), -128, 127).astype(np.int8)
    got = dev.get(y)
    np.testing.assert_array_equal(got[0, :4], [127, 0, 2, -2])
    assert np.abs(got.astype(np.int32) - ref).max() <= 1 and (got == ref).mean() > 0.99  # GPU `/`: 2 ulp
    np.testing.assert_allclose(dev.get(scale), s, rtol=1e-6)


def test_tail_mass_sums_each_row_from_its_end(backend, dev, rng):
    rows, n = 5, 1000
    p = rng.uniform(0, 1, (rows, n)).astype(np.float32)
    out = dev.put(np.zeros((rows, n), np.float32))
    tilelab.jit(K.tail_mass_kernel)[(rows,)](dev.put(p), out, n, n, BLOCK=1024, num_warps=4, target=backend)
    ref = np.flip(np.cumsum(np.flip(p.astype(np.float64), 1), 1), 1)
    np.testing.assert_allclose(dev.get(out), ref, rtol=1e-5, atol=1e-4)


def test_dropout_residual_layer_norm_applies_the_mask_it_saves(backend, dev, rng):
    import ml_dtypes

    rows, n, p, eps = 4, 1000, 0.25, 1e-5
    x = rng.standard_normal((rows, n)).astype(ml_dtypes.bfloat16)
    r = rng.standard_normal((rows, n)).astype(ml_dtypes.bfloat16)
    w, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    y, keep = dev.put(np.zeros((rows, n), ml_dtypes.bfloat16)), dev.put(np.full((rows, n), 7, np.int8))
    args = (dev.put(x), dev.put(r), dev.put(w), dev.put(b), y, keep, 42, p, n, n, eps)
    tilelab.jit(K.dropout_add_layernorm_kernel)[(rows,)](*args, BLOCK=1024, num_warps=4, target=backend)
    kept = dev.get(keep)
    assert set(np.unique(kept)) <= {0, 1}
    assert abs(kept.mean() - (1 - p)) < 0.03
    h = np.where(kept == 1, x.astype(np.float64) / (1 - p), 0.0) + r.astype(np.float64)
    d = h - h.mean(1, keepdims=True)
    ref = d / np.sqrt((d * d).mean(1, keepdims=True) + eps) * w + b
    np.testing.assert_allclose(dev.get(y).astype(np.float64), ref, rtol=2e-2, atol=2e-2)


def test_expert_histogram_counts_every_id_once(backend, dev, rng):
    n, experts, block = 10000, 256, 4096  # a masked tail: its zeros must not count into expert 0
    ids = rng.integers(0, experts, n).astype(np.int32)
    counts = dev.put(np.zeros(experts, np.int32))
    grid = (-(-n // block),)
    tilelab.jit(K.expert_histogram_kernel)[grid](dev.put(ids), counts, n, BINS=experts, BLOCK=block, target=backend)
    np.testing.assert_array_equal(dev.get(counts), np.bincount(ids, minlength=experts))
