"""Scans: tl.cumsum, tl.cumprod and tl.associative_scan with a user combine function."""

import numpy as np

import tilelab
import tilelab.language as tl

from .support import cdiv


@tilelab.jit
def cumsum_cumprod_kernel(x_ptr, sum_ptr, prod_ptr, isum_ptr, n_cols, BLOCK: tl.constexpr):
    """Inclusive prefix sum and product of each row (one row per program), and an int32 prefix sum."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=1.0)
    tl.store(sum_ptr + row * n_cols + cols, tl.cumsum(x, axis=0), mask=mask)
    tl.store(prod_ptr + row * n_cols + cols, tl.cumprod(x, axis=0), mask=mask)
    tl.store(isum_ptr + row * n_cols + cols, tl.cumsum((x * 100).to(tl.int32), axis=0), mask=mask)


def test_cumsum_cumprod(backend, dev, rng):
    n_rows, n_cols = 6, 200
    x = rng.uniform(0.9, 1.1, (n_rows, n_cols)).astype(np.float32)
    sums, prods, isums = (dev.empty(x.shape, dt) for dt in (np.float32, np.float32, np.int32))
    cumsum_cumprod_kernel[(n_rows,)](dev.put(x), sums, prods, isums, n_cols, BLOCK=256, target=backend)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(dev.get(sums), np.cumsum(x64, 1), rtol=1e-5)
    np.testing.assert_allclose(dev.get(prods), np.cumprod(x64, 1), rtol=1e-4)
    np.testing.assert_array_equal(dev.get(isums), np.cumsum((x * 100).astype(np.int32), 1))


@tilelab.jit
def cumsum_2d_kernel(x_ptr, out_ptr, m, n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, AXIS: tl.constexpr):
    """A prefix sum along either axis of a 2-D tile."""
    rows = tl.arange(0, BLOCK_M)[:, None]
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < m) & (cols < n)
    x = tl.load(x_ptr + rows * n + cols, mask=mask, other=0.0)
    tl.store(out_ptr + rows * n + cols, tl.cumsum(x, axis=AXIS), mask=mask)


def test_cumsum_2d_axes(backend, dev, rng):
    m, n = 10, 20
    x = rng.standard_normal((m, n)).astype(np.float32)
    for axis in (0, 1):
        out = dev.empty(x.shape, np.float32)
        cumsum_2d_kernel[(1,)](dev.put(x), out, m, n, BLOCK_M=16, BLOCK_N=32, AXIS=axis, target=backend)
        np.testing.assert_allclose(dev.get(out), np.cumsum(x.astype(np.float64), axis), rtol=1e-5, atol=1e-5)


@tilelab.jit
def first_order(a_left, b_left, a_right, b_right):
    """Compose h -> a_l * h + b_l then h -> a_r * h + b_r: an associative combine."""
    return a_left * a_right, b_left * a_right + b_right


@tilelab.jit
def linear_recurrence_kernel(a_ptr, b_ptr, h_ptr, n, BLOCK: tl.constexpr):
    """h[t] = a[t] * h[t-1] + b[t] (h[-1] = 0) in one parallel scan over pairs."""
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    a = tl.load(a_ptr + offsets, mask=mask, other=1.0)
    b = tl.load(b_ptr + offsets, mask=mask, other=0.0)
    _, h = tl.associative_scan((a, b), axis=0, combine_fn=first_order)
    tl.store(h_ptr + offsets, h, mask=mask)


def test_associative_scan_linear_recurrence(backend, dev, rng):
    n = 300
    a = rng.uniform(0.5, 1.0, n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    h = dev.empty(n, np.float32)
    linear_recurrence_kernel[(1,)](dev.put(a), dev.put(b), h, n, BLOCK=512, target=backend)
    want, state = np.empty(n), 0.0
    for t in range(n):
        state = float(a[t]) * state + float(b[t])
        want[t] = state
    np.testing.assert_allclose(dev.get(h), want, rtol=1e-4, atol=1e-5)


@tilelab.jit
def larger(a, b):
    return tl.maximum(a, b)


@tilelab.jit
def running_max_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """A running maximum per block: a scan with a @jit combine function."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=-float("inf"))
    tl.store(out_ptr + offsets, tl.associative_scan(x, 0, larger), mask=mask)


def test_associative_scan_running_max(backend, dev, rng):
    n, block = 700, 256
    x = rng.standard_normal(n).astype(np.float32)
    out = dev.empty(n, np.float32)
    running_max_kernel[(cdiv(n, block),)](dev.put(x), out, n, BLOCK=block, target=backend)
    padded = np.full(cdiv(n, block) * block, -np.inf, np.float32)
    padded[:n] = x
    np.testing.assert_array_equal(dev.get(out), np.maximum.accumulate(padded.reshape(-1, block), 1).ravel()[:n])


@tilelab.jit
def reverse_scans_kernel(x_ptr, a_ptr, sum_ptr, h_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr):
    """Suffix sums of an int32 tile along ``AXIS``, and the first-order recurrence run backwards along it.

    A reverse scan is the scan of the flipped tile, flipped back (as Triton defines it): its result at ``i``
    is ``combine(result[i + 1], x[i])``, so ``first_order`` gives ``h[i] = a[i] * h[i + 1] + x[i]`` (a combine
    whose operand order matters).
    """
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    a = tl.load(a_ptr + offs)
    tl.store(sum_ptr + offs, tl.cumsum(x.to(tl.int32), axis=AXIS, reverse=True))
    _, h = tl.associative_scan((a, x), AXIS, first_order, reverse=True)
    tl.store(h_ptr + offs, h)


def _backwards(a, x, axis):
    a, x = np.moveaxis(a.astype(np.float64), axis, 0), np.moveaxis(x.astype(np.float64), axis, 0)
    h, state = np.zeros_like(x), np.zeros(x.shape[1:])
    for i in range(x.shape[0] - 1, -1, -1):
        state = a[i] * state + x[i]
        h[i] = state
    return np.moveaxis(h, 0, axis)


def test_reverse_scans_along_either_axis(backend, dev, rng):
    for (m, n), axis in (((64, 32), 0), ((64, 32), 1), ((4, 1024), 1), ((128, 8), 0)):
        x = rng.integers(-20, 20, (m, n)).astype(np.float32)
        a = rng.uniform(0.5, 1.0, (m, n)).astype(np.float32)
        sums, h = dev.empty((m, n), np.int32), dev.empty((m, n), np.float32)
        reverse_scans_kernel[(1,)](dev.put(x), dev.put(a), sums, h, M=m, N=n, AXIS=axis, target=backend)
        np.testing.assert_array_equal(dev.get(sums), np.flip(np.cumsum(np.flip(x, axis), axis), axis))
        np.testing.assert_allclose(dev.get(h), _backwards(a, x, axis), rtol=1e-4, atol=1e-4)


def test_reverse_scans_in_each_thread_arrangement(backend, dev, rng):
    """Reverse scans whose axis runs through one warp, across warps in chunks, or down many lines at once (the
    totals turned into prefixes in shared memory first), with int64 sums (two 32-bit shuffles a step)."""
    cases = (((1, 1024), 1, 1), ((8, 256), 1, 8), ((2, 512), 1, 2), ((256, 4), 0, 4), ((64, 64), 0, 8))
    for (m, n), axis, warps in cases:
        x = rng.integers(-20, 20, (m, n)).astype(np.float32)
        a = rng.uniform(0.5, 1.0, (m, n)).astype(np.float32)
        sums, h = dev.empty((m, n), np.int32), dev.empty((m, n), np.float32)
        reverse_scans_kernel[(1,)](
            dev.put(x), dev.put(a), sums, h, M=m, N=n, AXIS=axis, num_warps=warps, target=backend
        )  # fmt: skip
        np.testing.assert_array_equal(dev.get(sums), np.flip(np.cumsum(np.flip(x, axis), axis), axis))
        np.testing.assert_allclose(dev.get(h), _backwards(a, x, axis), rtol=1e-4, atol=1e-4)


@tilelab.jit
def reverse_cumsum_i64_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols, mask=cols < n, other=0)
    tl.store(out_ptr + cols, tl.cumsum(x, axis=0, reverse=True), mask=cols < n)


def test_reverse_cumsum_of_int64_across_warps(backend, dev, rng):
    x = rng.integers(-(2**40), 2**40, 1000).astype(np.int64)
    out = dev.empty(1000, np.int64)
    reverse_cumsum_i64_kernel[(1,)](dev.put(x), out, 1000, BLOCK=1024, num_warps=4, target=backend)
    np.testing.assert_array_equal(dev.get(out), np.flip(np.cumsum(np.flip(x))))
