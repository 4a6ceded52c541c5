"""``tl.topk``, ``tl.squeeze`` and ``tl.unsqueeze`` (Triton 3.6's standard library) on every backend."""

from __future__ import annotations

import numpy as np
import pytest

import tilelab
import tilelab.language as tl
from tilelab.errors import CompilationError


@tilelab.jit
def topk_kernel(x_ptr, out_ptr, N: tl.constexpr, K: tl.constexpr, ROWS: tl.constexpr):
    rows = tl.arange(0, ROWS)[:, None]
    x = tl.load(x_ptr + rows * N + tl.arange(0, N)[None, :])
    top = tl.topk(x, K)
    tl.store(out_ptr + rows * K + tl.arange(0, K)[None, :], top)


@tilelab.jit
def squeeze_kernel(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    col = tl.unsqueeze(x, 1)  # [N, 1]
    row = tl.unsqueeze(x, 0)  # [1, N]
    grid = col * 2 + row  # [N, N]
    tl.store(out_ptr + tl.arange(0, N), tl.squeeze(tl.sum(grid, axis=1, keep_dims=True), 1))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
@pytest.mark.parametrize("n, k", [(64, 8), (32, 32), (128, 1)])
def test_topk_is_the_k_largest_largest_first(backend, dev, rng, dtype, n, k):
    rows = 4
    if dtype == np.int32:
        x = rng.integers(-20, 20, (rows, n)).astype(dtype)  # ties
    else:
        x = rng.standard_normal((rows, n)).astype(dtype)
        x[0, :3] = [-0.0, 0.0, -0.0]
    out = dev.put(np.zeros((rows, k), dtype))
    topk_kernel[(1,)](dev.put(x), out, N=n, K=k, ROWS=rows, target=backend)
    want = -np.sort(-x.astype(np.float64), axis=1)[:, :k].astype(dtype)
    np.testing.assert_array_equal(dev.get(out), want)


def test_squeeze_and_unsqueeze(backend, dev, rng):
    x = rng.integers(-9, 9, 16).astype(np.int32)
    out = dev.put(np.zeros(16, np.int32))
    squeeze_kernel[(1,)](dev.put(x), out, N=16, target=backend)
    np.testing.assert_array_equal(dev.get(out), 2 * 16 * x + x.sum())


def test_topk_compiles_for_sm_90a():
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32"}
    ck = tilelab.compile(topk_kernel, sig, {"N": 256, "K": 16, "ROWS": 8}, target="cuda:sm_90a", cache=False)
    assert ".entry" in ck.asm["ptx"]


@tilelab.jit
def bad_topk_kernel(x_ptr, K: tl.constexpr, DIM: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 8)[:, None] * 16 + tl.arange(0, 16)[None, :])
    tl.topk(x, K, dim=DIM)


@pytest.mark.parametrize("k, dim, message", [(3, 1, "powers of two"), (32, 1, "powers of two"), (4, 0, "last")])
def test_bad_topk_names_the_line(k, dim, message):
    with pytest.raises(CompilationError, match=rf"test_topk.py:\d+: .*{message}"):
        tilelab.compile(bad_topk_kernel, {"x_ptr": "*fp32"}, {"K": k, "DIM": dim}, target="cpu", cache=False)


@tilelab.jit
def bitonic_merge_kernel(x_ptr, out_ptr, N: tl.constexpr, ROWS: tl.constexpr, DESCENDING: tl.constexpr):
    offs = tl.arange(0, ROWS)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(out_ptr + offs, tl.bitonic_merge(tl.load(x_ptr + offs), descending=DESCENDING))


def merge_network(x: np.ndarray, descending: bool) -> np.ndarray:
    """Triton's merge network in numpy: for d = n/2 .. 1, each pair (j, j + d) of a 2d block compares and swaps."""
    x = x.copy()
    n = x.shape[-1]
    d = n // 2
    while d >= 1:
        pairs = x.reshape(*x.shape[:-1], n // (2 * d), 2, d)
        left, right = pairs[..., 0, :].copy(), pairs[..., 1, :].copy()
        with np.errstate(invalid="ignore"):
            take_right = (left > right) != descending
            take_left = (right > left) != (not descending)
        pairs[..., 0, :] = np.where(take_right, right, left)
        pairs[..., 1, :] = np.where(take_left, left, right)
        x = pairs.reshape(x.shape)
        d //= 2
    return x


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("n", [2, 16, 64])
def test_bitonic_merge_sorts_bitonic_rows(backend, dev, rng, descending, n):
    rows = 4
    halves = np.sort(rng.integers(-20, 20, (rows, n)).astype(np.float32), axis=1)  # ties included
    x = np.concatenate([halves[:, : n // 2], halves[:, n // 2 :][:, ::-1]], axis=1)  # rising, then falling
    out = dev.put(np.zeros_like(x))
    bitonic_merge_kernel[(1,)](dev.put(x), out, N=n, ROWS=rows, DESCENDING=descending, target=backend)
    want = np.sort(x, axis=1)
    np.testing.assert_array_equal(dev.get(out), want[:, ::-1] if descending else want)


@pytest.mark.parametrize("descending", [False, True])
def test_bitonic_merge_of_any_row_is_the_network(backend, dev, rng, descending):
    """Not bitonic, NaNs and ties: the same compare-and-swap network as Triton's, value for value."""
    rows, n = 8, 32
    x = rng.integers(-4, 4, (rows, n)).astype(np.float32)
    x[rng.random((rows, n)) < 0.1] = np.nan
    out = dev.put(np.zeros_like(x))
    bitonic_merge_kernel[(1,)](dev.put(x), out, N=n, ROWS=rows, DESCENDING=descending, target=backend)
    np.testing.assert_array_equal(dev.get(out), merge_network(x, descending))
