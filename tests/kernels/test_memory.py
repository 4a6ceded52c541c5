"""Memory access patterns: 2-D transpose tiles, 1-D and 2-D stencils, block-pointer copies."""

import numpy as np

import tilelab
import tilelab.language as tl

from .support import cdiv


@tilelab.jit
def transpose_kernel(x_ptr, out_ptr, m, n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """out = x.T, one BLOCK_M x BLOCK_N tile per program, transposed in registers with tl.trans."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    tile = tl.load(x_ptr + rows[:, None] * n + cols[None, :], mask=(rows[:, None] < m) & (cols[None, :] < n))
    out_mask = (cols[:, None] < n) & (rows[None, :] < m)
    tl.store(out_ptr + cols[:, None] * m + rows[None, :], tl.trans(tile), mask=out_mask)


def test_transpose(backend, dev, rng):
    m, n = 100, 70
    x = rng.standard_normal((m, n)).astype(np.float32)
    out = dev.empty((n, m), np.float32)
    transpose_kernel[(cdiv(m, 32), cdiv(n, 16))](dev.put(x), out, m, n, BLOCK_M=32, BLOCK_N=16, target=backend)
    np.testing.assert_array_equal(dev.get(out), x.T)


@tilelab.jit
def stencil_1d_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out[i] = x[i-1] - 2 x[i] + x[i+1], with x = 0 outside [0, n): shifted, masked loads."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    left = tl.load(x_ptr + i - 1, mask=(i >= 1) & (i - 1 < n), other=0.0)
    center = tl.load(x_ptr + i, mask=i < n, other=0.0)
    right = tl.load(x_ptr + i + 1, mask=i + 1 < n, other=0.0)
    tl.store(out_ptr + i, left - 2.0 * center + right, mask=i < n)


def test_stencil_1d(backend, dev, rng):
    n = 1001
    x = rng.standard_normal(n).astype(np.float32)
    out = dev.empty(n, np.float32)
    stencil_1d_kernel[(cdiv(n, 128),)](dev.put(x), out, n, BLOCK=128, target=backend)
    padded = np.pad(x.astype(np.float64), 1)
    np.testing.assert_allclose(dev.get(out), padded[:-2] - 2 * padded[1:-1] + padded[2:], rtol=1e-5, atol=1e-6)


@tilelab.jit
def load_shifted(x_ptr, rows, cols, m, n, di, dj):
    """The tile x[rows + di, cols + dj], zero outside the m x n grid."""
    r = rows[:, None] + di
    c = cols[None, :] + dj
    return tl.load(x_ptr + r * n + c, mask=(r >= 0) & (r < m) & (c >= 0) & (c < n), other=0.0)


@tilelab.jit
def stencil_2d_kernel(x_ptr, out_ptr, m, n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """The 5-point Laplacian on a 2-D grid of programs, zero boundary."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    center = load_shifted(x_ptr, rows, cols, m, n, 0, 0)
    around = load_shifted(x_ptr, rows, cols, m, n, -1, 0) + load_shifted(x_ptr, rows, cols, m, n, 1, 0)
    around += load_shifted(x_ptr, rows, cols, m, n, 0, -1) + load_shifted(x_ptr, rows, cols, m, n, 0, 1)
    mask = (rows[:, None] < m) & (cols[None, :] < n)
    tl.store(out_ptr + rows[:, None] * n + cols[None, :], around - 4.0 * center, mask=mask)


def test_stencil_2d_five_point(backend, dev, rng):
    m, n = 45, 70
    x = rng.standard_normal((m, n)).astype(np.float32)
    out = dev.empty((m, n), np.float32)
    stencil_2d_kernel[(cdiv(m, 16), cdiv(n, 32))](dev.put(x), out, m, n, BLOCK_M=16, BLOCK_N=32, target=backend)
    p = np.pad(x.astype(np.float64), 1)
    want = p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4 * p[1:-1, 1:-1]
    np.testing.assert_allclose(dev.get(out), want, rtol=1e-5, atol=1e-5)


@tilelab.jit
def block_ptr_copy_kernel(x_ptr, out_ptr, m, n, row0, col0, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Copy the window x[row0:, col0:] into out (m - row0) x (n - col0), through block pointers."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    src = tl.make_block_ptr(
        base=x_ptr, shape=(m, n), strides=(n, 1), offsets=(row0, col0), block_shape=(BLOCK_M, BLOCK_N), order=(1, 0)
    )
    src = tl.advance(src, (pid_m * BLOCK_M, pid_n * BLOCK_N))
    dst = tl.make_block_ptr(
        base=out_ptr,
        shape=(m - row0, n - col0),
        strides=(n - col0, 1),
        offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N),
        block_shape=(BLOCK_M, BLOCK_N),
        order=(1, 0),
    )
    tile = tl.load(src, boundary_check=(0, 1), padding_option="zero")
    tl.store(dst, tile * 2.0, boundary_check=(0, 1))


def test_block_pointer_copy(backend, dev, rng):
    m, n, row0, col0 = 50, 60, 3, 7
    x = rng.standard_normal((m, n)).astype(np.float32)
    out = dev.empty((m - row0, n - col0), np.float32)
    grid = (cdiv(m - row0, 16), cdiv(n - col0, 16))
    block_ptr_copy_kernel[grid](dev.put(x), out, m, n, row0, col0, BLOCK_M=16, BLOCK_N=16, target=backend)
    np.testing.assert_array_equal(dev.get(out), x[row0:, col0:] * 2)


def test_block_pointer_window_starting_before_the_array(backend, dev, rng):
    """Negative offsets: rows and columns before the array are masked (zeros), the bound ``-off <= i`` holds."""
    m, n, row0, col0 = 40, 36, -5, -19
    x = rng.standard_normal((m, n)).astype(np.float32)
    out = dev.empty((m - row0, n - col0), np.float32)
    grid = (cdiv(m - row0, 16), cdiv(n - col0, 16))
    block_ptr_copy_kernel[grid](dev.put(x), out, m, n, row0, col0, BLOCK_M=16, BLOCK_N=16, target=backend)
    want = np.zeros((m - row0, n - col0), np.float32)
    want[-row0:, -col0:] = x * 2
    np.testing.assert_array_equal(dev.get(out), want)


@tilelab.jit
def gather_kernel(x_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out[i] = x[idx[i]]: a data-dependent gather (pointers from loaded indices)."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    idx = tl.load(idx_ptr + i, mask=i < n, other=0)
    tl.store(out_ptr + i, tl.load(x_ptr + idx, mask=i < n), mask=i < n)


def test_gather(backend, dev, rng):
    n, size = 500, 97
    x = rng.standard_normal(size).astype(np.float32)
    idx = rng.integers(0, size, n, dtype=np.int32)
    out = dev.empty(n, np.float32)
    gather_kernel[(cdiv(n, 128),)](dev.put(x), dev.put(idx), out, n, BLOCK=128, target=backend)
    np.testing.assert_array_equal(dev.get(out), x[idx])
