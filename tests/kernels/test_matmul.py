"""Matrix multiplication: grouped tiled matmul (f32, f16), fused leaky relu, batched 3-D grid, block pointers,
f16 accumulators."""

import numpy as np
import pytest

import tilelab
import tilelab.language as tl
from benchmarks.probe import kernels as probe

from .support import DOT_TOL, assert_rel_norm, cdiv


@tilelab.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


@tilelab.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    ACTIVATION: tl.constexpr,
):
    """Triton tutorial 03: C = A @ B with programs ordered in groups of GROUP_M rows for L2 reuse."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if ACTIVATION == "leaky_relu":
        acc = leaky_relu(acc)
    c = acc.to(c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _matmul(backend, dev, a, b, dtype, activation=""):
    (M, K), (_, N) = a.shape, b.shape
    c = dev.empty((M, N), dtype)
    grid = (cdiv(M, 32) * cdiv(N, 32),)
    matmul_kernel[grid](
        dev.put(a),
        dev.put(b),
        c,
        M,
        N,
        K,
        K,
        1,
        N,
        1,
        N,
        1,
        BLOCK_M=32,
        BLOCK_N=32,
        BLOCK_K=32,
        GROUP_M=2,
        ACTIVATION=activation,
        target=backend,
    )
    return dev.get(c)


@pytest.mark.parametrize("dtype, name", [(np.float32, "f32"), (np.float16, "f16")])
def test_matmul(backend, dev, rng, dtype, name):
    M, N, K = 130, 70, 90  # none a multiple of 32: masked M, N and K tails
    a, b = rng.standard_normal((M, K)).astype(dtype), rng.standard_normal((K, N)).astype(dtype)
    got = _matmul(backend, dev, a, b, dtype)
    assert_rel_norm(got, a.astype(np.float64) @ b.astype(np.float64), DOT_TOL[(backend, name)])


def test_matmul_leaky_relu(backend, dev, rng):
    M, N, K = 64, 96, 48
    a, b = rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16)
    got = _matmul(backend, dev, a, b, np.float16, activation="leaky_relu")
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert (got < 0).any() and (got > 0).any()
    assert_rel_norm(got, np.where(ref >= 0, ref, 0.01 * ref), DOT_TOL[(backend, "f16")])


@tilelab.jit
def ieee_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK: tl.constexpr):
    """One-block matmul with full f32 products (input_precision="ieee" instead of the tf32 default)."""
    rows = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + rows[:, None] * K + rows[None, :], mask=(rows[:, None] < M) & (rows[None, :] < K), other=0.0)
    b = tl.load(b_ptr + rows[:, None] * N + rows[None, :], mask=(rows[:, None] < K) & (rows[None, :] < N), other=0.0)
    c = tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rows[:, None] * N + rows[None, :], c, mask=(rows[:, None] < M) & (rows[None, :] < N))


def test_matmul_ieee_f32(backend, dev, rng):
    M, N, K = 60, 50, 40
    a, b = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)
    c = dev.empty((M, N), np.float32)
    ieee_matmul_kernel[(1,)](dev.put(a), dev.put(b), c, M, N, K, BLOCK=64, target=backend)
    assert_rel_norm(dev.get(c), a.astype(np.float64) @ b.astype(np.float64), DOT_TOL[(backend, "ieee")])


@tilelab.jit
def batched_matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr
):
    """C[z] = A[z] @ B[z] on a 3-D grid: (row blocks, column blocks, batch)."""
    z = tl.program_id(2)
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    a_ptr += z * M * K
    b_ptr += z * K * N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(
            a_ptr + offs_m[:, None] * K + offs_k[None, :], mask=(offs_m[:, None] < M) & (offs_k[None, :] < K), other=0.0
        )
        b = tl.load(
            b_ptr + offs_k[:, None] * N + offs_n[None, :], mask=(offs_k[:, None] < K) & (offs_n[None, :] < N), other=0.0
        )
        acc += tl.dot(a, b)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + z * M * N + offs_m[:, None] * N + offs_n[None, :], acc, mask=mask)


def test_batched_matmul(backend, dev, rng):
    B, M, N, K = 3, 40, 24, 50
    a, b = rng.standard_normal((B, M, K)).astype(np.float16), rng.standard_normal((B, K, N)).astype(np.float16)
    c = dev.empty((B, M, N), np.float32)
    batched_matmul_kernel[(cdiv(M, 16), cdiv(N, 16), B)](
        dev.put(a), dev.put(b), c, M, N, K, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, target=backend
    )
    assert_rel_norm(dev.get(c), a.astype(np.float64) @ b.astype(np.float64), DOT_TOL[(backend, "f16")])


@tilelab.jit
def block_ptr_matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    """Matmul through block pointers: loads padded with zeros past the edges, advanced along K."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    a_block = tl.make_block_ptr(
        base=a_ptr,
        shape=(M, K),
        strides=(stride_am, stride_ak),
        offsets=(pid_m * BLOCK_M, 0),
        block_shape=(BLOCK_M, BLOCK_K),
        order=(1, 0),
    )
    b_block = tl.make_block_ptr(
        base=b_ptr,
        shape=(K, N),
        strides=(stride_bk, stride_bn),
        offsets=(0, pid_n * BLOCK_N),
        block_shape=(BLOCK_K, BLOCK_N),
        order=(1, 0),
    )
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, K, BLOCK_K):
        a = tl.load(a_block, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_block, boundary_check=(0, 1), padding_option="zero")
        acc += tl.dot(a, b)
        a_block = tl.advance(a_block, (0, BLOCK_K))
        b_block = tl.advance(b_block, (BLOCK_K, 0))
    c_block = tl.make_block_ptr(
        base=c_ptr,
        shape=(M, N),
        strides=(stride_cm, stride_cn),
        offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N),
        block_shape=(BLOCK_M, BLOCK_N),
        order=(1, 0),
    )
    tl.store(c_block, acc.to(tl.float16), boundary_check=(0, 1))


def test_block_pointer_matmul(backend, dev, rng):
    M, N, K = 50, 40, 70
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    b_column_major = dev.put(b.T)  # B[k, n] lives at n * K + k: strides (1, K)
    c = dev.empty((M, N), np.float16)
    block_ptr_matmul_kernel[(cdiv(M, 32), cdiv(N, 32))](
        dev.put(a), b_column_major, c, M, N, K, K, 1, 1, K, N, 1, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, target=backend
    )
    assert_rel_norm(dev.get(c), a.astype(np.float64) @ b.astype(np.float64), DOT_TOL[(backend, "f16")])


@tilelab.jit
def bmm_kernel(
    a_ptr, b_ptr, c_ptr, Z, M, N, K, stride_az, stride_am, stride_bz, stride_bk, stride_cz, stride_cm,
    BZ: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, PRECISION: tl.constexpr,
):  # fmt: skip
    """``C[z] = A[z] @ B[z]``: ``BZ`` small products per program, K in steps of ``BK`` with a masked tail."""
    pid_z = tl.program_id(0)
    pid_m = tl.program_id(1)
    pid_n = tl.program_id(2)
    oz = pid_z * BZ + tl.arange(0, BZ)
    om = pid_m * BM + tl.arange(0, BM)
    on = pid_n * BN + tl.arange(0, BN)
    ok = tl.arange(0, BK)
    a_ptrs = a_ptr + oz[:, None, None] * stride_az + om[None, :, None] * stride_am + ok[None, None, :]
    b_ptrs = b_ptr + oz[:, None, None] * stride_bz + ok[None, :, None] * stride_bk + on[None, None, :]
    acc = tl.zeros((BZ, BM, BN), dtype=c_ptr.dtype.element_ty)
    for k in range(0, tl.cdiv(K, BK)):
        z_ok = oz[:, None, None] < Z
        a = tl.load(a_ptrs, mask=z_ok & (om[None, :, None] < M) & (ok[None, None, :] < K - k * BK), other=0)
        b = tl.load(b_ptrs, mask=z_ok & (ok[None, :, None] < K - k * BK) & (on[None, None, :] < N), other=0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    c_ptrs = c_ptr + oz[:, None, None] * stride_cz + om[None, :, None] * stride_cm + on[None, None, :]
    tl.store(c_ptrs, acc, mask=(oz[:, None, None] < Z) & (om[None, :, None] < M) & (on[None, None, :] < N))


@pytest.mark.parametrize("dtype", ["f16", "f32", "ieee"])
def test_batched_dot_values(backend, dev, rng, dtype):
    """The same kernel on every backend against numpy (on CUDA: the mma.sync path above; f32 in ieee, the FMA
    dot's batched outer products)."""
    z, m, n, k = 5, 40, 24, 50
    np_dtype = np.float16 if dtype == "f16" else np.float32
    a = rng.standard_normal((z, m, k)).astype(np_dtype)
    b = rng.standard_normal((z, k, n)).astype(np_dtype)
    c = dev.empty((z, m, n), np.float32)
    bz, bm, bn, bk = 4, 32, 16, 16
    bmm_kernel[(cdiv(z, bz), cdiv(m, bm), cdiv(n, bn))](
        dev.put(a), dev.put(b), c, z, m, n, k, k * m, k, n * k, n, n * m, n,
        BZ=bz, BM=bm, BN=bn, BK=bk, PRECISION="tf32" if dtype == "f32" else "ieee", target=backend,
    )  # fmt: skip
    assert_rel_norm(dev.get(c), a.astype(np.float64) @ b.astype(np.float64), DOT_TOL[(backend, dtype)])


@tilelab.jit
def precision_dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                         PRECISION: tl.constexpr):  # fmt: skip
    """One dot of whole f32 tiles in ``PRECISION`` (``tf32``, ``tf32x3`` or ``ieee``)."""
    om, on, ok = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + om[:, None] * K + ok[None, :])
    b = tl.load(b_ptr + ok[:, None] * N + on[None, :])
    tl.store(c_ptr + om[:, None] * N + on[None, :], tl.dot(a, b, input_precision=PRECISION))


def test_tf32x3_is_as_exact_as_f32(backend, dev, rng):
    """``input_precision="tf32x3"``: the interpreter and the CPU multiply in f32; CUDA as three tf32 dots on its
    tensor cores (split-tf32x3): within f32's tolerance of the float64 product either way."""
    m, n, k = 64, 64, 128
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    c = dev.empty((m, n), np.float32)
    precision_dot_kernel[(1,)](dev.put(a), dev.put(b), c, M=m, N=n, K=k, PRECISION="tf32x3", num_warps=4,
                               target=backend)  # fmt: skip
    assert_rel_norm(dev.get(c), a.astype(np.float64) @ b.astype(np.float64), DOT_TOL[(backend, "ieee")])


@tilelab.jit
def small_dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    """One dot of whole tiles plus an accumulator of 3, in the output's type."""
    om, on, ok = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + om[:, None] * K + ok[None, :])
    b = tl.load(b_ptr + ok[:, None] * N + on[None, :])
    acc = tl.full((M, N), 3, c_ptr.dtype.element_ty)
    c = tl.dot(a, b, acc, input_precision="ieee", out_dtype=c_ptr.dtype.element_ty)
    tl.store(c_ptr + om[:, None] * N + on[None, :], c)


@pytest.mark.parametrize("dtype", ["f32", "f64", "i8"])
@pytest.mark.parametrize("shape", [(1, 8, 4), (2, 1, 8), (16, 4, 1), (8, 64, 2), (32, 32, 16)])
def test_dot_shapes_narrower_than_a_vector(backend, dev, rng, dtype, shape):
    """The CPU's register-blocked dot at its edges (rows fewer than a block, columns fewer than a SIMD
    vector, K of one), the interpreter, and CUDA's FMA dot (outer products of vectors too short or too few
    for its 16-byte loads): exact against numpy."""
    m, n, k = shape
    src, out = {"f32": (np.float32, np.float32), "f64": (np.float64, np.float64), "i8": (np.int8, np.int32)}[dtype]
    a = rng.integers(-8, 8, (m, k)).astype(src)  # small integers: every sum is exact in any order
    b = rng.integers(-8, 8, (k, n)).astype(src)
    c = dev.empty((m, n), out)
    small_dot_kernel[(1,)](dev.put(a), dev.put(b), c, M=m, N=n, K=k, target=backend)
    np.testing.assert_array_equal(dev.get(c), (a.astype(np.int64) @ b.astype(np.int64) + 3).astype(out))


f16_acc_matmul_kernel = tilelab.jit(probe.f16_acc_matmul_kernel)


@pytest.mark.parametrize("wgmma", ["1", "0"], ids=["wgmma", "mma_sync"])
@pytest.mark.parametrize("fused", [True, False], ids=["acc_in_dot", "acc_added"])
def test_f16_accumulator_matmul(backend, dev, rng, monkeypatch, fused, wgmma):
    """The probe's kernel (the tutorial's matmul with ``out_dtype=tl.float16``) against float64: the interpreter
    and the CPU round the sum to f16 after every dot, CUDA once after the loop (on its tensor cores, Hopper's
    wgmma or mma.sync); both within f16's rounding of a 200-long sum."""
    if backend != "cuda" and wgmma == "0":
        pytest.skip("the switch between two CUDA instructions")
    monkeypatch.setenv("TILELAB_CUDA_WGMMA", wgmma)
    M, N, K = 96, 80, 200
    a, b = rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16)
    c = dev.empty((M, N), np.float16)
    f16_acc_matmul_kernel[(cdiv(M, 64), cdiv(N, 64))](
        dev.put(a),
        dev.put(b),
        c,
        M,
        N,
        K,
        K,
        N,
        N,
        BLOCK_M=64,
        BLOCK_N=64,
        BLOCK_K=32,
        ACC_IN_DOT=fused,
        num_warps=4,
        target=backend,
    )
    assert_rel_norm(dev.get(c), a.astype(np.float64) @ b.astype(np.float64), 3e-3)


@pytest.mark.parametrize("fmt", ["float8_e4m3fn", "float8_e5m2"])
def test_fp8_dot_into_f16(backend, dev, rng, fmt):
    """fp8 operands summed into an f16 result (``out_dtype=tl.float16``, as Triton allows): small integers, so
    every sum is exact in f16 whatever the order; on CUDA a wgmma of 64 rows (widen-accumulators)."""
    import ml_dtypes

    m = n = k = 64
    a = rng.integers(-3, 4, (m, k)).astype(getattr(ml_dtypes, fmt))
    b = rng.integers(-3, 4, (k, n)).astype(getattr(ml_dtypes, fmt))
    c = dev.empty((m, n), np.float16)
    small_dot_kernel[(1,)](dev.put(a), dev.put(b), c, M=m, N=n, K=k, num_warps=4, target=backend)
    np.testing.assert_array_equal(dev.get(c), (a.astype(np.int64) @ b.astype(np.int64) + 3).astype(np.float16))
