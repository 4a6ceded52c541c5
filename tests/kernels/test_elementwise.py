"""Elementwise kernels: vector add, axpy, fused chains, broadcasting, where/clamp, jit helpers, constexprs."""

import numpy as np
import pytest

import tilelab
import tilelab.language as tl

from .support import cdiv


@tilelab.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Triton tutorial 01: one block of elements per program, the tail masked."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


@pytest.mark.parametrize("n", [1, 1000, 4099])
def test_add(backend, dev, rng, n):
    x, y = rng.standard_normal((2, n)).astype(np.float32)
    out = dev.empty(n, np.float32)
    add_kernel[(cdiv(n, 512),)](dev.put(x), dev.put(y), out, n, BLOCK=512, target=backend)
    np.testing.assert_allclose(dev.get(out), x + y, rtol=1e-6)


def test_add_f16(backend, dev, rng):
    n = 777
    x, y = rng.standard_normal((2, n)).astype(np.float16)
    out = dev.empty(n, np.float16)
    add_kernel[(cdiv(n, 128),)](dev.put(x), dev.put(y), out, n, BLOCK=128, target=backend)
    np.testing.assert_allclose(dev.get(out), x + y, rtol=1e-3)


@tilelab.jit
def axpy_kernel(a, x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """y <- a * x + y in place, with a runtime float scalar."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, a * x + y, mask=mask)


def test_axpy(backend, dev, rng):
    n, a = 2049, float(rng.uniform(0.5, 2.0))
    x, y = rng.standard_normal((2, n)).astype(np.float32)
    y_d = dev.put(y)
    axpy_kernel[(cdiv(n, 256),)](a, dev.put(x), y_d, n, BLOCK=256, target=backend)
    np.testing.assert_allclose(dev.get(y_d), np.float32(a) * x + y, rtol=1e-5, atol=1e-6)


@tilelab.jit
def fused_chain_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """A fused chain of math: exp, sqrt, log, abs, sigmoid and a division, all in registers."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    y = tl.load(y_ptr + offsets, mask=mask, other=1.0)
    z = tl.exp(-x * x) * tl.sqrt(tl.abs(y) + 1.0) + tl.log(1.0 + tl.abs(x))
    z = z / (1.0 + tl.abs(y)) - tl.sigmoid(x) + tl.sin(x) * tl.cos(y)
    tl.store(out_ptr + offsets, z, mask=mask)


def test_fused_chain(backend, dev, rng):
    n = 3000
    x, y = rng.standard_normal((2, n))
    out = dev.empty(n, np.float32)
    fused_chain_kernel[(cdiv(n, 1024),)](
        dev.put(x.astype(np.float32)), dev.put(y.astype(np.float32)), out, n, BLOCK=1024, target=backend
    )
    x, y = x.astype(np.float32).astype(np.float64), y.astype(np.float32).astype(np.float64)
    z = np.exp(-x * x) * np.sqrt(np.abs(y) + 1) + np.log1p(np.abs(x))
    want = z / (1 + np.abs(y)) - 1 / (1 + np.exp(-x)) + np.sin(x) * np.cos(y)
    np.testing.assert_allclose(dev.get(out), want, rtol=1e-5, atol=1e-5)


@tilelab.jit
def outer_kernel(x_ptr, y_ptr, out_ptr, m, n, stride_m, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """out[i, j] = x[i] * y[j] + 1: a column and a row broadcast to a 2-D tile, on a 2-D grid."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + rows, mask=rows < m)
    y = tl.load(y_ptr + cols, mask=cols < n)
    mask = (rows[:, None] < m) & (cols[None, :] < n)
    tl.store(out_ptr + rows[:, None] * stride_m + cols[None, :], x[:, None] * y[None, :] + 1, mask=mask)


def test_outer_product(backend, dev, rng):
    m, n = 77, 130
    x, y = rng.standard_normal(m).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = dev.empty((m, n), np.float32)
    outer_kernel[(cdiv(m, 32), cdiv(n, 64))](
        dev.put(x), dev.put(y), out, m, n, n, BLOCK_M=32, BLOCK_N=64, target=backend
    )
    fused = 1e-6 * np.abs(np.outer(x, y)).max()  # CUDA's fma (on by default, as Triton) skips the product's rounding
    np.testing.assert_allclose(dev.get(out), np.outer(x, y) + 1, rtol=1e-6, atol=fused)


@tilelab.jit
def where_clamp_kernel(x_ptr, y_ptr, out_ptr, lo, hi, n, BLOCK: tl.constexpr):
    """Selection and clamping: where, maximum, minimum and clamp, written to four output rows."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.where(x > y, x - y, 2 * y), mask=mask)
    tl.store(out_ptr + n + offsets, tl.maximum(x, y), mask=mask)
    tl.store(out_ptr + 2 * n + offsets, tl.minimum(x, 0.5), mask=mask)
    tl.store(out_ptr + 3 * n + offsets, tl.clamp(x, lo, hi), mask=mask)


def test_where_maximum_clamp(backend, dev, rng):
    n = 1111
    x, y = rng.standard_normal((2, n)).astype(np.float32)
    out = dev.empty((4, n), np.float32)
    where_clamp_kernel[(cdiv(n, 256),)](dev.put(x), dev.put(y), out, -0.25, 0.75, n, BLOCK=256, target=backend)
    want = [np.where(x > y, x - y, 2 * y), np.maximum(x, y), np.minimum(x, 0.5), np.clip(x, -0.25, 0.75)]
    np.testing.assert_allclose(dev.get(out), np.stack(want), rtol=1e-6)


@tilelab.jit
def leaky(x, slope):
    """A helper @jit function, called from kernels (inlined by the compiler)."""
    return tl.where(x >= 0, x, slope * x)


@tilelab.jit
def scale_and_shift(x, a, b):
    return leaky(x * a, 0.1) + b


@tilelab.jit
def helper_call_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, scale_and_shift(x, 2.0, leaky(x, 0.5)), mask=mask)


def test_jit_helper_calls(backend, dev, rng):
    n = 999
    x = rng.standard_normal(n).astype(np.float32)
    out = dev.empty(n, np.float32)
    helper_call_kernel[(cdiv(n, 128),)](dev.put(x), out, n, BLOCK=128, target=backend)

    def ref_leaky(v, s):
        return np.where(v >= 0, v, np.float32(s) * v)

    np.testing.assert_allclose(dev.get(out), ref_leaky(2 * x, 0.1) + ref_leaky(x, 0.5), rtol=1e-6)


@tilelab.jit
def activation_kernel(x_ptr, out_ptr, n, ACTIVATION: tl.constexpr, BLOCK: tl.constexpr):
    """A constexpr string picks the code path at compile time (one specialization each)."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    if ACTIVATION == "relu":
        y = tl.maximum(x, 0.0)
    elif ACTIVATION == "square":
        y = x * x
    else:
        y = -x
    tl.store(out_ptr + offsets, y, mask=mask)


@pytest.mark.parametrize("activation", ["relu", "square", "negate"])
def test_constexpr_specialization(backend, dev, rng, activation):
    n = 500
    x = rng.standard_normal(n).astype(np.float32)
    out = dev.empty(n, np.float32)
    activation_kernel[(cdiv(n, 64),)](dev.put(x), out, n, ACTIVATION=activation, BLOCK=64, target=backend)
    want = {"relu": np.maximum(x, 0), "square": x * x, "negate": -x}[activation]
    np.testing.assert_allclose(dev.get(out), want, rtol=1e-6)


@tilelab.jit
def mixed_precision_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Promotion: f16 + f32 is f32; an int32 tile times a float scalar is f32."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a = tl.load(a_ptr + offsets, mask=mask)
    b = tl.load(b_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, a + b + offsets * 0.5, mask=mask)


def test_mixed_precision_promotion(backend, dev, rng):
    n = 600
    a = rng.standard_normal(n).astype(np.float16)
    b = rng.standard_normal(n).astype(np.float32)
    out = dev.empty(n, np.float32)
    mixed_precision_kernel[(cdiv(n, 128),)](dev.put(a), dev.put(b), out, n, BLOCK=128, target=backend)
    want = a.astype(np.float32) + b + np.arange(n, dtype=np.float32) * np.float32(0.5)
    np.testing.assert_allclose(dev.get(out), want, rtol=1e-6)
