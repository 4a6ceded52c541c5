"""Idioms of kernel libraries, each against numpy on every backend: a log-sum-exp by ``tl.reduce`` over a
tuple with a ``@jit`` combine, a reverse cumsum down the columns, a matmul over block pointers with the weight
read column-major (``order=(0, 1)``) and boundary checks, a paged KV-cache write with an early ``return`` for
padding slots, and one kernel mixing int64 program offsets, cache and eviction hints, a masked
``tl.histogram`` added atomically, a descending sort along the first axis, f16 atomics and
``tl.static_range`` with ``tl.static_assert``; a layer norm whose bias pointer may be ``None``, with
``@heuristics`` deciding a constexpr from it, and a chunked causal linear attention over block pointers that
carries its state across chunks and stores through ``p.dtype.element_ty``."""

import numpy as np

import tilelab
import tilelab.language as tl


@tilelab.jit
def _max_and_scaled_sum(m1, s1, m2, s2):
    m = tl.maximum(m1, m2)
    return m, s1 * tl.exp(m1 - m) + s2 * tl.exp(m2 - m)


@tilelab.jit
def logsumexp_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n + cols, mask=cols < n, other=-1e30)
    m, s = tl.reduce((x, tl.full(x.shape, 1.0, tl.float32)), 0, _max_and_scaled_sum)
    tl.store(out_ptr + row, m + tl.log(s))


def test_logsumexp_by_a_tuple_reduce(backend, dev, rng):
    x = (rng.standard_normal((5, 300)) * 4).astype(np.float32)
    out = dev.empty(5, np.float32)
    logsumexp_kernel[(5,)](dev.put(x), out, 300, BLOCK=512, target=backend)
    ref = np.log(np.exp(x.astype(np.float64)).sum(1))
    np.testing.assert_allclose(dev.get(out), ref, rtol=1e-5)


@tilelab.jit
def reverse_cumsum_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(out_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), axis=0, reverse=True))


def test_reverse_cumsum_down_the_columns(backend, dev, rng):
    x = rng.integers(-50, 50, (16, 32)).astype(np.int32)
    out = dev.empty(x.shape, np.int32)
    reverse_cumsum_kernel[(1,)](dev.put(x), out, M=16, N=32, target=backend)
    np.testing.assert_array_equal(dev.get(out), np.flip(np.cumsum(np.flip(x, 0), 0), 0))


@tilelab.jit
def block_ptr_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """``c = a @ b.T`` with b stored (N, K): read as a (K, N) block whose first dim is the fastest."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    a_block = tl.make_block_ptr(a_ptr, (M, K), (K, 1), (pid_m * BM, 0), (BM, BK), (1, 0))
    b_block = tl.make_block_ptr(b_ptr, (K, N), (1, K), (0, pid_n * BN), (BK, BN), (0, 1))
    acc = tl.zeros((BM, BN), tl.float32)
    for _ in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_block, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_block, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a, b, acc)
        a_block = tl.advance(a_block, (0, BK))
        b_block = tl.advance(b_block, (BK, 0))
    c_block = tl.make_block_ptr(c_ptr, (M, N), (N, 1), (pid_m * BM, pid_n * BN), (BM, BN), (1, 0))
    tl.store(c_block, acc.to(tl.float16), boundary_check=(0, 1))


def test_block_pointer_matmul_with_a_column_major_weight(backend, dev, rng):
    m, n, k = 70, 50, 90  # tails in every dimension
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((n, k)).astype(np.float16)
    c = dev.empty((m, n), np.float16)
    block_ptr_matmul_kernel[(3, 2)](dev.put(a), dev.put(b), c, m, n, k, BM=32, BN=32, BK=32, target=backend)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    assert np.abs(dev.get(c) - ref).max() / np.abs(ref).max() < 2e-3


@tilelab.jit
def kv_cache_write_kernel(k_ptr, cache_ptr, slots_ptr, stride_t, stride_page, PAGE: tl.constexpr, D: tl.constexpr):
    t = tl.program_id(0)
    slot = tl.load(slots_ptr + t).to(tl.int64)
    if slot < 0:  # a padding token: nothing to write
        return
    d = tl.arange(0, D)
    page, offset = slot // PAGE, slot % PAGE
    tl.store(cache_ptr + page * stride_page + offset * D + d, tl.load(k_ptr + t * stride_t + d))


def test_paged_kv_cache_write_skips_padding_slots(backend, dev, rng):
    tokens, d, page, pages = 10, 64, 4, 8
    k = rng.standard_normal((tokens, d)).astype(np.float16)
    slots = rng.permutation(pages * page)[:tokens].astype(np.int32)
    slots[[3, 7]] = -1
    cache = dev.put(np.zeros((pages, page, d), np.float16))
    kv_cache_write_kernel[(tokens,)](dev.put(k), cache, dev.put(slots), d, page * d, PAGE=page, D=d, target=backend)
    ref = np.zeros((pages * page, d), np.float16)
    kept = slots >= 0
    ref[slots[kept]] = k[kept]
    np.testing.assert_array_equal(dev.get(cache).reshape(-1, d), ref)


@tilelab.jit
def mixed_kernel(x_ptr, hist_ptr, sorted_ptr, sums_ptr, out_ptr, n, M: tl.constexpr, N: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + pid * M * N + offs, eviction_policy="evict_last", cache_modifier=".cg")
    low = tl.load(x_ptr + pid * M * N + tl.arange(0, N)).to(tl.int32) & 15  # the first row's low bits
    tl.atomic_add(hist_ptr + tl.arange(0, 16), tl.histogram(low, 16, mask=tl.arange(0, N) < n), sem="relaxed")
    tl.store(sorted_ptr + pid * M * N + offs, tl.sort(x, 0, descending=True), cache_modifier=".cs")
    tl.atomic_add(sums_ptr + tl.arange(0, N), tl.sum(x, 0).to(tl.float16))
    acc = tl.zeros([M, N], tl.float32)
    for i in tl.static_range(3):
        tl.static_assert(i < 3)
        acc += tl.where(i % 2 == 0, x * (i + 1), -x)
    tl.store(out_ptr + pid * M * N + offs, acc)


def test_hints_histogram_sort_f16_atomics_and_static_loops(backend, dev, rng):
    programs, m, n_cols, n = 3, 16, 32, 20
    x = rng.integers(-20, 20, (programs, m, n_cols)).astype(np.float32)  # every partial sum exact in f16
    hist, sums = dev.put(np.zeros(16, np.int32)), dev.put(np.zeros(n_cols, np.float16))
    srt, out = dev.empty(x.shape, np.float32), dev.empty(x.shape, np.float32)
    mixed_kernel[(programs,)](dev.put(x), hist, srt, sums, out, n, M=m, N=n_cols, target=backend)
    low = x[:, 0, :].astype(np.int32) & 15
    np.testing.assert_array_equal(dev.get(hist), sum(np.bincount(r[:n], minlength=16) for r in low))
    np.testing.assert_array_equal(dev.get(srt), -np.sort(-x, 1))
    np.testing.assert_array_equal(dev.get(sums), x.sum((0, 1)).astype(np.float16))
    np.testing.assert_array_equal(dev.get(out), 3 * x)


@tilelab.heuristics(
    {"HAS_BIAS": lambda args: args["b_ptr"] is not None, "BLOCK": lambda args: tilelab.next_power_of_2(args["n"])}
)
@tilelab.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, stride, n, eps, HAS_BIAS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    inside = cols < n
    x = tl.load(x_ptr + row * stride + cols, mask=inside, other=0.0).to(tl.float32)
    centered = tl.where(inside, x - tl.sum(x, axis=0) / n, 0.0)
    y = centered / tl.sqrt(tl.sum(centered * centered, axis=0) / n + eps) * tl.load(w_ptr + cols, mask=inside)
    if HAS_BIAS:
        y += tl.load(b_ptr + cols, mask=inside)
    tl.store(y_ptr + row * stride + cols, y, mask=inside)


def test_heuristics_read_an_optional_pointer(backend, dev, rng):
    x = rng.standard_normal((5, 300)).astype(np.float32)
    w, b = rng.standard_normal((2, 300)).astype(np.float32)
    ref = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5) * w
    for bias, want in ((None, ref), (dev.put(b), ref + b)):
        y = dev.put(np.zeros_like(x))
        layer_norm_kernel[(5,)](dev.put(x), dev.put(w), bias, y, 300, 300, 1e-5, target=backend)
        np.testing.assert_allclose(dev.get(y), want, rtol=1e-4, atol=1e-4)


@tilelab.jit
def chunked_linear_attention_kernel(q, k, v, o, stride_h, T, scale, D: tl.constexpr, BT: tl.constexpr):
    bh = tl.program_id(0)
    idx = tl.arange(0, BT)
    causal = idx[:, None] >= idx[None, :]
    state = tl.zeros([D, D], dtype=tl.float32)
    p_q = tl.make_block_ptr(q + bh * stride_h, (T, D), (D, 1), (0, 0), (BT, D), (1, 0))
    p_k = tl.make_block_ptr(k + bh * stride_h, (D, T), (1, D), (0, 0), (D, BT), (0, 1))
    p_v = tl.make_block_ptr(v + bh * stride_h, (T, D), (D, 1), (0, 0), (BT, D), (1, 0))
    p_o = tl.make_block_ptr(o + bh * stride_h, (T, D), (D, 1), (0, 0), (BT, D), (1, 0))
    for _ in range(0, tl.cdiv(T, BT)):
        b_q = tl.load(p_q, boundary_check=(0, 1))
        b_q = (b_q * scale).to(b_q.dtype)
        b_k = tl.load(p_k, boundary_check=(0, 1))
        b_v = tl.load(p_v, boundary_check=(0, 1), padding_option="zero")
        s = tl.where(causal, tl.dot(b_q, b_k, allow_tf32=False), 0)
        b_o = tl.dot(s.to(b_q.dtype), b_v, allow_tf32=False)
        b_o += tl.dot(b_q, state.to(b_q.dtype), allow_tf32=False)
        state = state + tl.dot(b_k, b_v, allow_tf32=False)
        tl.store(p_o, b_o.to(p_o.dtype.element_ty), boundary_check=(0, 1))
        p_q = tl.advance(p_q, (BT, 0))
        p_k = tl.advance(p_k, (0, BT))
        p_v = tl.advance(p_v, (BT, 0))
        p_o = tl.advance(p_o, (BT, 0))


def test_chunked_linear_attention_over_block_pointers(backend, dev, rng):
    bh, t, d = 3, 50, 32  # the last chunk of 16 a tail
    q, k, v = (rng.standard_normal((bh, t, d)).astype(np.float16) for _ in range(3))
    o = dev.put(np.zeros_like(q))
    chunked_linear_attention_kernel[(bh,)](dev.put(q), dev.put(k), dev.put(v), o, t * d, t, d**-0.5, D=d, BT=16,
                                           target=backend)  # fmt: skip
    qd, kd, vd = (a.astype(np.float64) for a in (q, k, v))
    ref = (np.einsum("btd,bsd->bts", qd * d**-0.5, kd) * np.tril(np.ones((t, t)))) @ vd
    got = dev.get(o).astype(np.float64)
    assert np.abs(got - ref).max() / np.abs(ref).max() < 2e-3


@tilelab.constexpr_function
def _padded(n):
    return tilelab.next_power_of_2(n)


@tilelab.jit
def random_parts_kernel(out, seed, n, N: tl.constexpr):
    # the random module's parts as kernels call them, and a block size from a constexpr function
    BLOCK: tl.constexpr = _padded(N)
    offs = tl.arange(0, BLOCK)
    a, b, _, _ = tl.randint4x(seed, offs)
    z, _ = tl.pair_uniform_to_normal(tl.uint_to_uniform_float(a), tl.uint_to_uniform_float(b))
    tl.store(out + offs, tl.uint_to_uniform_float(a), mask=offs < n)
    tl.store(out + n + offs, tl.rand(seed, offs), mask=offs < n)
    tl.store(out + 2 * n + offs, z, mask=offs < n)
    tl.store(out + 3 * n + offs, tl.randn(seed, offs), mask=offs < n)


def test_random_parts_and_a_constexpr_function(backend, dev):
    tilelab.set_allocator(lambda size, alignment, stream: None)  # Triton's scripts set one; nothing calls it here
    out = dev.put(np.full(4 * 100, np.nan, np.float32))
    random_parts_kernel[(1,)](out, 1234, 100, N=100, target=backend)
    u, rand, z, randn = dev.get(out).reshape(4, 100)
    np.testing.assert_array_equal(u, rand)  # the same draws as tl.rand / tl.randn
    np.testing.assert_array_equal(z, randn)
    assert abs(z.mean()) < 0.4 and 0.6 < z.std() < 1.4 and 0.0 <= u.min() and u.max() < 1.0
    tilelab.set_allocator(None)


@tilelab.jit
def tuple_arguments_kernel(ptrs, sizes, out, BLOCK: tl.constexpr):
    # tuples as arguments, as Triton takes them: unpacked, indexed with constants, measured with len
    x_ptr, y_ptr, bias = ptrs
    n, scale = sizes
    offs = tl.arange(0, BLOCK)
    inside = offs < n
    acc = tl.load(x_ptr + offs, mask=inside) + tl.load(ptrs[1] + offs, mask=inside)
    for i in tl.static_range(2):
        acc += tl.load(ptrs[i] + offs, mask=inside)
    if bias is not None:
        acc += tl.load(bias + offs, mask=inside)
    tl.store(out + offs, acc * scale + len(ptrs), mask=inside)


def test_tuple_arguments(backend, dev, rng):
    x, y, b = (rng.standard_normal(100).astype(np.float32) for _ in range(3))
    for bias, scale in ((None, 1), (b, 3), (b, 2.5)):  # an element None, an int specialized to 1, a float
        out = dev.put(np.zeros(100, np.float32))
        args = ((dev.put(x), dev.put(y), None if bias is None else dev.put(bias)), (100, scale), out)
        grid = lambda meta: (tilelab.cdiv(meta["sizes"][0], meta["BLOCK"]),)  # noqa: E731 (the tuple as given)
        tuple_arguments_kernel[grid](*args, BLOCK=128, target=backend)
        want = (2 * (x + y) + (0 if bias is None else bias)) * np.float32(scale) + 3
        np.testing.assert_allclose(dev.get(out), want, rtol=1e-6, atol=1e-6)


@tilelab.jit
def constexpr_tuple_kernel(out, SHAPE: tl.constexpr):
    offs = tl.arange(0, SHAPE[0])[:, None] * SHAPE[1] + tl.arange(0, SHAPE[1])[None, :]
    tl.store(out + offs, tl.full(SHAPE, len(SHAPE), tl.float32))


def test_a_constexpr_tuple_stays_a_compile_time_value(backend, dev):
    out = dev.put(np.zeros(32, np.float32))
    constexpr_tuple_kernel[(1,)](out, SHAPE=(4, 8), target=backend)
    np.testing.assert_array_equal(dev.get(out), 2.0)
