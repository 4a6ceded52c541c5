"""``tl.histogram``: counts of each value ``0 .. bins-1``, per backend, against ``np.bincount``.

Values outside the bins (negative or too large) count nowhere, masked elements neither; sources narrower
and wider than 32 bits, more bins than elements and fewer bins than threads, a tile small enough that
threads hold copies of one element (each counted once), and blocks added into global bins by many programs.
"""

import numpy as np
import pytest

import tilelab
import tilelab.language as tl

from .support import cdiv


@tilelab.jit
def block_histogram_kernel(x_ptr, hist_ptr, n, BINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.atomic_add(hist_ptr + tl.arange(0, BINS), tl.histogram(x, BINS, mask=offs < n))


@tilelab.jit
def tile_histogram_kernel(x_ptr, out_ptr, BINS: tl.constexpr, BLOCK: tl.constexpr):
    """Each program's own histogram, stored (no atomics): the values of one tile, no mask."""
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK))
    tl.store(out_ptr + pid * BINS + tl.arange(0, BINS), tl.histogram(x, BINS))


def reference(x, bins, n=None):
    x = x.reshape(-1)[:n].astype(np.int64)
    return np.bincount(x[(x >= 0) & (x < bins)], minlength=bins).astype(np.int32)


@pytest.mark.parametrize(
    "dtype,bins,block",
    [("int32", 256, 1024), ("int64", 16, 512), ("uint8", 64, 256), ("int16", 512, 128), ("int32", 8, 16)],
)
def test_tile_histograms(backend, dev, rng, dtype, bins, block):
    programs = 3
    lo = 0 if dtype.startswith("u") else -8
    hi = min(np.iinfo(dtype).max, bins + 8)
    x = rng.integers(lo, hi, (programs, block)).astype(dtype)  # some below 0, some past the last bin
    x[0, : block // 4] = 3  # many equal values in one tile: one bin counted by every lane at once
    out = dev.empty((programs, bins), np.int32)
    tile_histogram_kernel[(programs,)](dev.put(x), out, BINS=bins, BLOCK=block, num_warps=4, target=backend)
    np.testing.assert_array_equal(dev.get(out), np.stack([reference(r, bins) for r in x]))


def test_masked_histogram_added_by_many_programs(backend, dev, rng):
    n, bins, block = 5000, 128, 512
    x = rng.integers(-4, bins + 4, n).astype(np.int32)
    start = rng.integers(1, 10, bins).astype(np.int32)  # the global bins start non-zero
    hist = dev.put(start)
    block_histogram_kernel[(cdiv(n, block),)](dev.put(x), hist, n, BINS=bins, BLOCK=block, target=backend)
    np.testing.assert_array_equal(dev.get(hist), start + reference(x, bins))
