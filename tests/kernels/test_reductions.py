"""Reductions: fused softmax, layernorm forward/backward, sum/max/min over axes, argmax/argmin, f16 into f32."""

import numpy as np
import pytest

import tilelab
import tilelab.language as tl

from .support import cdiv


@tilelab.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    """Triton tutorial 02: one row per program; masked lanes read -inf so they vanish in exp."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    numerator = tl.exp(x)
    tl.store(out_ptr + row * out_row_stride + cols, numerator / tl.sum(numerator, axis=0), mask=mask)


@pytest.mark.parametrize("n_rows, n_cols", [(5, 1), (37, 100), (8, 256)])
def test_fused_softmax(backend, dev, rng, n_rows, n_cols):
    x = (rng.standard_normal((n_rows, n_cols)) * 3).astype(np.float32)
    out = dev.empty((n_rows, n_cols), np.float32)
    block = max(16, 1 << (n_cols - 1).bit_length())
    softmax_kernel[(n_rows,)](dev.put(x), out, n_cols, n_cols, n_cols, BLOCK=block, target=backend)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(dev.get(out), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


@tilelab.jit
def layernorm_fwd_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    """Triton tutorial 05: one row per program, runtime loops over column blocks for mean, variance, output."""
    row = tl.program_id(0)
    x_ptr += row * stride
    y_ptr += row * stride
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        x = tl.where(cols < n_cols, x - mean, 0.0)
        acc += x * x
    rstd = 1 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < n_cols
        w = tl.load(w_ptr + cols, mask=mask)
        b = tl.load(b_ptr + cols, mask=mask)
        x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + cols, (x - mean) * rstd * w + b, mask=mask)


def _layernorm_ref(x, w, b, eps):
    x = x.astype(np.float64)
    mean = x.mean(axis=1)
    rstd = 1 / np.sqrt(x.var(axis=1) + eps)
    xhat = (x - mean[:, None]) * rstd[:, None]
    return xhat * w + b, mean, rstd, xhat


def test_layernorm_forward(backend, dev, rng):
    n_rows, n_cols, eps = 13, 300, 1e-5
    x = (rng.standard_normal((n_rows, n_cols)) * 2 + 0.5).astype(np.float32)
    w, b = rng.standard_normal((2, n_cols)).astype(np.float32)
    y, mean, rstd = dev.empty(x.shape, np.float32), dev.empty(n_rows, np.float32), dev.empty(n_rows, np.float32)
    layernorm_fwd_kernel[(n_rows,)](
        dev.put(x), y, dev.put(w), dev.put(b), mean, rstd, n_cols, n_cols, eps, BLOCK=128, target=backend
    )
    want_y, want_mean, want_rstd, _ = _layernorm_ref(x, w, b, eps)
    np.testing.assert_allclose(dev.get(mean), want_mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dev.get(rstd), want_rstd, rtol=1e-5)
    np.testing.assert_allclose(dev.get(y), want_y, rtol=1e-4, atol=1e-5)


@tilelab.jit
def layernorm_bwd_dx_kernel(dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, n_cols, BLOCK: tl.constexpr):
    """dx for one row held in one block: rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    dy = tl.load(dy_ptr + row * n_cols + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)
    xhat = tl.where(mask, (x - mean) * rstd, 0.0)
    dxhat = dy * w
    c1 = tl.sum(xhat * dxhat, axis=0) / n_cols
    c2 = tl.sum(dxhat, axis=0) / n_cols
    tl.store(dx_ptr + row * n_cols + cols, (dxhat - (xhat * c1 + c2)) * rstd, mask=mask)


@tilelab.jit
def layernorm_bwd_dwdb_kernel(
    dy_ptr, x_ptr, mean_ptr, rstd_ptr, dw_ptr, db_ptr, n_rows, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
):
    """dw and db: each program owns a block of columns and loops over row blocks, summing down axis 0."""
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    dw = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    db = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for start in range(0, n_rows, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
        offsets = rows[:, None] * n_cols + cols[None, :]
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        dy = tl.load(dy_ptr + offsets, mask=mask, other=0.0)
        mean = tl.load(mean_ptr + rows, mask=rows < n_rows, other=0.0)
        rstd = tl.load(rstd_ptr + rows, mask=rows < n_rows, other=0.0)
        dw += dy * (x - mean[:, None]) * rstd[:, None]
        db += dy
    tl.store(dw_ptr + cols, tl.sum(dw, axis=0), mask=cols < n_cols)
    tl.store(db_ptr + cols, tl.sum(db, axis=0), mask=cols < n_cols)


def test_layernorm_backward(backend, dev, rng):
    n_rows, n_cols, eps = 21, 100, 1e-5
    x = (rng.standard_normal((n_rows, n_cols)) + 1).astype(np.float32)
    w, b = rng.standard_normal((2, n_cols)).astype(np.float32)
    dy = rng.standard_normal((n_rows, n_cols)).astype(np.float32)
    _, mean, rstd, xhat = _layernorm_ref(x, w, b, eps)
    mean_d, rstd_d = dev.put(mean.astype(np.float32)), dev.put(rstd.astype(np.float32))
    x_d, dy_d = dev.put(x), dev.put(dy)
    dx, dw, db = dev.empty(x.shape, np.float32), dev.empty(n_cols, np.float32), dev.empty(n_cols, np.float32)
    layernorm_bwd_dx_kernel[(n_rows,)](dy_d, x_d, dev.put(w), mean_d, rstd_d, dx, n_cols, BLOCK=128, target=backend)
    layernorm_bwd_dwdb_kernel[(cdiv(n_cols, 32),)](
        dy_d, x_d, mean_d, rstd_d, dw, db, n_rows, n_cols, BLOCK_M=8, BLOCK_N=32, target=backend
    )
    dxhat = dy * w.astype(np.float64)
    want_dx = rstd[:, None] * (dxhat - dxhat.mean(1, keepdims=True) - xhat * (dxhat * xhat).mean(1, keepdims=True))
    np.testing.assert_allclose(dev.get(dx), want_dx, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dev.get(dw), (dy * xhat).sum(0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dev.get(db), dy.astype(np.float64).sum(0), rtol=1e-4, atol=1e-5)


@tilelab.jit
def axis_reductions_kernel(
    x_ptr, col_sum_ptr, row_max_ptr, row_min_ptr, total_ptr, m, n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
):
    """One 2-D tile: sum over axis 0, max and min over axis 1, and a full sum; masked lanes neutral."""
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < m) & (cols[None, :] < n)
    offsets = rows[:, None] * n + cols[None, :]
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(col_sum_ptr + cols, tl.sum(x, axis=0), mask=cols < n)
    x_hi = tl.load(x_ptr + offsets, mask=mask, other=-float("inf"))
    tl.store(row_max_ptr + rows, tl.max(x_hi, axis=1), mask=rows < m)
    tl.store(row_min_ptr + rows, tl.min(tl.where(mask, x, float("inf")), axis=1), mask=rows < m)
    tl.store(total_ptr, tl.sum(tl.sum(x, axis=1), axis=0))


def test_sum_max_min_over_axes(backend, dev, rng):
    m, n = 27, 50
    x = (rng.standard_normal((m, n)) - 2).astype(np.float32)  # mostly negative: a 0 leaking into max shows
    col_sum, row_max = dev.empty(n, np.float32), dev.empty(m, np.float32)
    row_min, total = dev.empty(m, np.float32), dev.empty(1, np.float32)
    axis_reductions_kernel[(1,)](
        dev.put(x), col_sum, row_max, row_min, total, m, n, BLOCK_M=32, BLOCK_N=64, target=backend
    )
    np.testing.assert_allclose(dev.get(col_sum), x.astype(np.float64).sum(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(dev.get(row_max), x.max(1))
    np.testing.assert_array_equal(dev.get(row_min), x.min(1))
    np.testing.assert_allclose(dev.get(total), [x.astype(np.float64).sum()], rtol=1e-5)


@tilelab.jit
def argmax_argmin_kernel(x_ptr, amax_ptr, amin_ptr, n_cols, BLOCK: tl.constexpr):
    """Index of the largest and smallest element of each row (one row per program)."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    tl.store(amax_ptr + row, tl.argmax(x, axis=0))
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=float("inf"))
    tl.store(amin_ptr + row, tl.argmin(x, axis=0))


def test_argmax_argmin(backend, dev, rng):
    n_rows, n_cols = 19, 90
    x = rng.permuted(np.tile(np.arange(n_cols, dtype=np.float32) - 200, (n_rows, 1)), axis=1)  # no ties, all < 0
    amax, amin = dev.empty(n_rows, np.int32), dev.empty(n_rows, np.int32)
    argmax_argmin_kernel[(n_rows,)](dev.put(x), amax, amin, n_cols, BLOCK=128, target=backend)
    np.testing.assert_array_equal(dev.get(amax), x.argmax(1))
    np.testing.assert_array_equal(dev.get(amin), x.argmin(1))


@tilelab.jit
def f16_row_sum_kernel(x_ptr, sum_ptr, isum_ptr, i8_ptr, n_cols, BLOCK: tl.constexpr):
    """Reductions that widen: f16 summed in f32 (dtype=), int8 summed in int32 (Triton's default)."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    tl.store(sum_ptr + row, tl.sum(x, axis=0, dtype=tl.float32))
    small = tl.load(i8_ptr + row * n_cols + cols, mask=mask, other=0)
    tl.store(isum_ptr + row, tl.sum(small, axis=0))


def test_f16_sum_into_f32_and_int8_into_int32(backend, dev, rng):
    n_rows, n_cols = 9, 1000
    x = (rng.standard_normal((n_rows, n_cols)) + 10).astype(np.float16)  # f16 accumulation would lose digits
    i8 = rng.integers(60, 127, (n_rows, n_cols), dtype=np.int8)  # an int8 sum would wrap
    sums, isums = dev.empty(n_rows, np.float32), dev.empty(n_rows, np.int32)
    f16_row_sum_kernel[(n_rows,)](dev.put(x), sums, isums, dev.put(i8), n_cols, BLOCK=1024, target=backend)
    np.testing.assert_allclose(dev.get(sums), x.astype(np.float64).sum(1), rtol=1e-6)
    np.testing.assert_array_equal(dev.get(isums), i8.astype(np.int32).sum(1))


@tilelab.jit
def max_abs(a, b):
    return tl.maximum(tl.abs(a), tl.abs(b))


@tilelab.jit
def custom_reduce_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """tl.reduce with a user combine function: the largest magnitude per program."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    tl.store(out_ptr + tl.program_id(0), tl.reduce(x, 0, max_abs))


def test_reduce_custom_combine(backend, dev, rng):
    n, block = 1000, 128
    x = rng.standard_normal(n).astype(np.float32)
    out = dev.empty(cdiv(n, block), np.float32)
    custom_reduce_kernel[(cdiv(n, block),)](dev.put(x), out, n, BLOCK=block, target=backend)
    padded = np.zeros(cdiv(n, block) * block, np.float32)
    padded[:n] = np.abs(x)
    np.testing.assert_array_equal(dev.get(out), padded.reshape(-1, block).max(1))


@tilelab.jit
def whole_tile_kernel(x_ptr, sum_ptr, max_ptr, amax_ptr, amin_ptr, n, BLOCK: tl.constexpr):
    """Reductions of a whole tile to one value: on the GPU the warps' partials meet across lanes."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n + cols, mask=cols < n, other=0.0)
    tl.store(sum_ptr + row, tl.sum(x, axis=0))
    tl.store(max_ptr + row, tl.max(tl.where(cols < n, x, -float("inf")), axis=0))
    tl.store(amax_ptr + row, tl.argmax(tl.where(cols < n, x, -float("inf")), axis=0))
    tl.store(amin_ptr + row, tl.argmin(tl.where(cols < n, x, float("inf")), axis=0))


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8, 16, 32])
def test_whole_tile_reductions_over_any_number_of_warps(backend, dev, rng, num_warps):
    n_rows, n, block = 5, 3000, 4096
    x = rng.integers(-40, 40, (n_rows, n)).astype(np.float32)  # small integers: exact sums, many ties
    outs = [dev.empty(n_rows, np.float32), dev.empty(n_rows, np.float32)]
    outs += [dev.empty(n_rows, np.int32), dev.empty(n_rows, np.int32)]
    whole_tile_kernel[(n_rows,)](dev.put(x), *outs, n, BLOCK=block, num_warps=num_warps, target=backend)
    sums, maxs, amax, amin = (dev.get(o) for o in outs)
    np.testing.assert_array_equal(sums, x.sum(1))
    np.testing.assert_array_equal(maxs, x.max(1))
    np.testing.assert_array_equal(amax, x.argmax(1))  # the first of the ties, as numpy
    np.testing.assert_array_equal(amin, x.argmin(1))
