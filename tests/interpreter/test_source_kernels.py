"""Kernels written in the language, built by the frontend, run on the interpreter."""

import numpy as np
import pytest

import tilelab.language as tl
from tilelab.compiler.frontend import build_module
from tilelab.compiler.interpreter import KernelRuntimeError, run_kernel
from tilelab.compiler.ir.types import parse_type


def build(fn, signature: dict[str, str], **constants):
    return build_module(fn, {k: parse_type(v) for k, v in signature.items()}, constants)


def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(
            a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0
        )
        b = tl.load(
            b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0
        )
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def test_matmul_with_k_loop(rng):
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32"}
    module = build(matmul, sig, BM=16, BN=32, BK=16)
    M, N, K = 40, 50, 70
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float32)
    run_kernel(module, (3, 2), [a, b, c, M, N, K])
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)


def histogram(x_ptr, bins_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.atomic_add(bins_ptr + x, 1, mask=mask)


def test_histogram(rng):
    module = build(histogram, {"x_ptr": "*i32", "bins_ptr": "*i32", "n": "i32"}, BLOCK=128)
    x = rng.integers(0, 10, 1000, dtype=np.int32)
    bins = np.zeros(10, np.int32)
    run_kernel(module, (8,), [x, bins, 1000])
    np.testing.assert_array_equal(bins, np.bincount(x, minlength=10))


def cumsum_argmax(x_ptr, cs_ptr, am_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(cs_ptr + offs, tl.cumsum(x, axis=0))
    tl.store(am_ptr, tl.argmax(x, axis=0))


def test_cumsum_and_argmax(rng):
    module = build(cumsum_argmax, {"x_ptr": "*i32", "cs_ptr": "*i32", "am_ptr": "*i32"}, BLOCK=64)
    x = rng.integers(-100, 100, 64, dtype=np.int32)
    cs, am = np.zeros(64, np.int32), np.full(1, -1, np.int32)
    run_kernel(module, (1,), [x, cs, am])
    np.testing.assert_array_equal(cs, np.cumsum(x))
    assert am[0] == np.argmax(x)


def copy_no_mask(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


def test_sanitizer_quotes_the_python_line(rng):
    module = build(copy_no_mask, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, BLOCK=64)
    x = rng.standard_normal(100).astype(np.float32)
    out = np.zeros(128, np.float32)
    with pytest.raises(KernelRuntimeError) as info:
        run_kernel(module, (2,), [x, out], sanitize=True)
    msg = str(info.value)
    line = copy_no_mask.__code__.co_firstlineno + 2
    assert f"test_source_kernels.py:{line}: out-of-bounds load in program (1, 0, 0) at element [36]" in msg
    assert "    tl.store(out_ptr + offs, tl.load(x_ptr + offs))" in msg
    assert "x_ptr: [0x" in msg and "out_ptr: [0x" in msg


def checked(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_assert(x < 50, "x too big")


def test_device_assert_from_source(rng):
    module = build(checked, {"x_ptr": "*i32"}, BLOCK=32)
    x = rng.integers(0, 50, 32, dtype=np.int32)
    run_kernel(module, (1,), [x])
    x[17] = 77
    line = checked.__code__.co_firstlineno + 2
    with pytest.raises(KernelRuntimeError, match=rf":{line}: device assertion failed .* element \[17\]: x too big"):
        run_kernel(module, (1,), [x])
