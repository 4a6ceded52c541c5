"""Shape ops: join/split, interleave, reshape, permute, trans, sort, flip and gather."""

import numpy as np
import pytest

import tilelab
import tilelab.language as tl


@tilelab.jit
def join_split_kernel(a_ptr, b_ptr, pairs_ptr, sum_ptr, mixed_ptr, BLOCK: tl.constexpr):
    """join two [B] tiles into [B, 2], split it back, and interleave them into [2B]."""
    i = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + i)
    b = tl.load(b_ptr + i)
    pairs = tl.join(a, b)
    tl.store(pairs_ptr + i[:, None] * 2 + tl.arange(0, 2)[None, :], pairs)
    first, second = tl.split(pairs * 2.0)
    tl.store(sum_ptr + i, first - second)
    tl.store(mixed_ptr + tl.arange(0, 2 * BLOCK), tl.interleave(a, b))


def test_join_split_interleave(backend, dev, rng):
    n = 64
    a, b = rng.standard_normal((2, n)).astype(np.float32)
    pairs, diff, mixed = dev.empty((n, 2), np.float32), dev.empty(n, np.float32), dev.empty(2 * n, np.float32)
    join_split_kernel[(1,)](dev.put(a), dev.put(b), pairs, diff, mixed, BLOCK=n, target=backend)
    np.testing.assert_array_equal(dev.get(pairs), np.stack([a, b], axis=1))
    np.testing.assert_array_equal(dev.get(diff), 2 * a - 2 * b)
    np.testing.assert_array_equal(dev.get(mixed), np.stack([a, b], axis=1).ravel())


@tilelab.jit
def reshape_permute_kernel(
    x_ptr, reshaped_ptr, permuted_ptr, trans_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr
):
    """A flat [A*B*C] tile viewed as [A, B, C], permuted to [C, A, B], and a 2-D view transposed."""
    flat = tl.load(x_ptr + tl.arange(0, A * B * C))
    cube = tl.reshape(flat, (A, B, C))
    a = tl.arange(0, A)[:, None, None]
    b = tl.arange(0, B)[None, :, None]
    c = tl.arange(0, C)[None, None, :]
    tl.store(reshaped_ptr + a * B * C + b * C + c, cube + 1.0)
    perm = tl.permute(cube, (2, 0, 1))
    c2 = tl.arange(0, C)[:, None, None]
    a2 = tl.arange(0, A)[None, :, None]
    b2 = tl.arange(0, B)[None, None, :]
    tl.store(permuted_ptr + c2 * A * B + a2 * B + b2, perm)
    square = tl.reshape(flat, (A * B, C))
    rows = tl.arange(0, C)[:, None]
    cols = tl.arange(0, A * B)[None, :]
    tl.store(trans_ptr + rows * (A * B) + cols, square.T)


def test_reshape_permute_trans(backend, dev, rng):
    A, B, C = 2, 4, 8
    x = rng.standard_normal(A * B * C).astype(np.float32)
    reshaped, permuted = dev.empty((A, B, C), np.float32), dev.empty((C, A, B), np.float32)
    trans = dev.empty((C, A * B), np.float32)
    reshape_permute_kernel[(1,)](dev.put(x), reshaped, permuted, trans, A=A, B=B, C=C, target=backend)
    cube = x.reshape(A, B, C)
    np.testing.assert_array_equal(dev.get(reshaped), cube + 1)
    np.testing.assert_array_equal(dev.get(permuted), cube.transpose(2, 0, 1))
    np.testing.assert_array_equal(dev.get(trans), x.reshape(A * B, C).T)


@tilelab.jit
def sort_flip_kernel(x_ptr, asc_ptr, desc_ptr, flip_ptr, n_cols, BLOCK: tl.constexpr):
    """Sort each row (ascending and descending) and reverse it; one row per program."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * BLOCK + cols)
    tl.store(asc_ptr + row * BLOCK + cols, tl.sort(x))
    tl.store(desc_ptr + row * BLOCK + cols, tl.sort(x, descending=True))
    tl.store(flip_ptr + row * BLOCK + cols, tl.flip(x, 0))


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_sort_and_flip(backend, dev, rng, dtype):
    rows, block = 5, 128
    x = (rng.standard_normal((rows, block)) * 1000).astype(dtype)
    asc, desc, flipped = (dev.empty(x.shape, dtype) for _ in range(3))
    sort_flip_kernel[(rows,)](dev.put(x), asc, desc, flipped, block, BLOCK=block, target=backend)
    np.testing.assert_array_equal(dev.get(asc), np.sort(x, axis=1))
    np.testing.assert_array_equal(dev.get(desc), np.sort(x, axis=1)[:, ::-1])
    np.testing.assert_array_equal(dev.get(flipped), x[:, ::-1])


@tilelab.jit
def flip_sort_then_add_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    """A flip and a sort whose results meet a reduction's broadcast (the layout their users want differs from
    their source's: on CUDA this stopped the compile with an internal error)."""
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols)
    total = tl.sum(tl.ravel(x[:, None] * x[None, :]), 0)
    tl.store(out_ptr + cols, tl.flip(x, 0) + total)
    tl.store(out_ptr + BLOCK + cols, tl.sort(x) + total)


def test_flip_and_sort_take_their_source_layout(backend, dev, rng):
    block = 32
    x = rng.integers(-8, 8, block).astype(np.float32)  # small integers: the sums exact in any order
    out = dev.empty(2 * block, np.float32)
    flip_sort_then_add_kernel[(1,)](dev.put(x), out, BLOCK=block, num_warps=4, target=backend)
    total = np.sum(np.outer(x, x))
    np.testing.assert_array_equal(dev.get(out), np.concatenate([x[::-1] + total, np.sort(x) + total]))


@tilelab.jit
def gather_kernel(src_ptr, idx_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, I: tl.constexpr, J: tl.constexpr,
                  AXIS: tl.constexpr):  # fmt: skip
    """``tl.gather`` of an [M, N] tile (doubled first: a computed tile, not a load) by an [I, J] index tile."""
    src = tl.load(src_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    idx = tl.load(idx_ptr + tl.arange(0, I)[:, None] * J + tl.arange(0, J)[None, :])
    tl.store(out_ptr + tl.arange(0, I)[:, None] * J + tl.arange(0, J)[None, :], tl.gather(src + src, idx, AXIS))


@pytest.mark.parametrize(
    "axis, src_shape, idx_shape, dtype, idx_dtype",
    [
        (0, (64, 32), (16, 32), np.float32, np.int32),  # fewer indices than rows
        (0, (16, 32), (128, 32), np.float16, np.int64),  # more indices than rows
        (1, (32, 64), (32, 64), np.int32, np.int16),  # a permutation-sized gather within rows
        (1, (8, 128), (8, 4), np.int8, np.uint8),  # a few picks from long rows
        (1, (128, 128), (128, 64), np.float16, np.int32),  # 1M pairs of index and source position
    ],
)
def test_gather(backend, dev, rng, axis, src_shape, idx_shape, dtype, idx_dtype):
    src = (rng.standard_normal(src_shape) * 50).astype(dtype)
    size = src_shape[axis]
    low = 0 if np.issubdtype(idx_dtype, np.unsignedinteger) else -size  # negative indices count from the end
    idx = rng.integers(low, size, idx_shape).astype(idx_dtype)
    out = dev.empty(idx_shape, dtype)
    gather_kernel[(1,)](dev.put(src), dev.put(idx), out, *src_shape, *idx_shape, AXIS=axis, target=backend)
    np.testing.assert_array_equal(dev.get(out), np.take_along_axis(src + src, idx.astype(np.int64) % size, axis))


def test_gather_larger_than_shared_memory(backend, dev, rng):
    """A 1 MB source: gathered on the CPU targets; on the GPU (through shared memory) ``OutOfResources``."""
    src = rng.standard_normal((512, 512)).astype(np.float32)
    idx = rng.integers(-512, 512, (512, 128)).astype(np.int32)
    out = dev.empty(idx.shape, np.float32)
    args = (dev.put(src), dev.put(idx), out, 512, 512, 512, 128)
    if backend == "cuda":
        with pytest.raises(tilelab.OutOfResources, match="shared memory"):
            gather_kernel[(1,)](*args, AXIS=1, target=backend)
        return
    gather_kernel[(1,)](*args, AXIS=1, target=backend)
    np.testing.assert_array_equal(dev.get(out), np.take_along_axis(src + src, idx % 512, 1))


@tilelab.jit
def gather_rows_kernel(x_ptr, perm_ptr, out_ptr, B: tl.constexpr, R: tl.constexpr, C: tl.constexpr):
    """A 3-D gather of bools along the middle axis: each of B tiles' R rows reordered by its own permutation."""
    b = tl.arange(0, B)[:, None, None]
    r = tl.arange(0, R)[None, :, None]
    c = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + (b * R + r) * C + c)
    perm = tl.load(perm_ptr + b * R + r + c * 0)
    tl.store(out_ptr + (b * R + r) * C + c, tl.gather(x > 0, perm, 1))


def test_gather_middle_axis_of_bools(backend, dev, rng):
    B, R, C = 4, 16, 8
    x = rng.standard_normal((B, R, C)).astype(np.float32)
    perm = np.stack([rng.permutation(R) for _ in range(B)]).astype(np.int32)
    out = dev.empty((B, R, C), np.bool_)
    gather_rows_kernel[(1,)](dev.put(x), dev.put(perm), out, B=B, R=R, C=C, target=backend)
    np.testing.assert_array_equal(dev.get(out), np.take_along_axis(x, perm[:, :, None].repeat(C, 2), 1) > 0)


@tilelab.jit
def broadcast_kernel(x_ptr, y_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    """Explicit broadcasting: tl.broadcast_to, expand_dims and tl.full/zeros tiles."""
    col = tl.load(x_ptr + tl.arange(0, M))
    row = tl.load(y_ptr + tl.arange(0, N))
    grid = tl.broadcast_to(tl.expand_dims(col, 1), (M, N)) + tl.expand_dims(row, 0)
    grid += tl.full((M, N), 0.5, tl.float32) + tl.zeros((M, N), tl.float32)
    tl.store(out_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], grid)


def test_broadcast_expand_full(backend, dev, rng):
    M, N = 16, 32
    x, y = rng.standard_normal(M).astype(np.float32), rng.standard_normal(N).astype(np.float32)
    out = dev.empty((M, N), np.float32)
    broadcast_kernel[(1,)](dev.put(x), dev.put(y), out, M=M, N=N, target=backend)
    np.testing.assert_array_equal(dev.get(out), x[:, None] + y[None, :] + np.float32(0.5))


@tilelab.jit
def dequant_int4_kernel(q_ptr, scale_ptr, out_ptr, n, BLOCK: tl.constexpr, GROUP: tl.constexpr):
    """Two 4-bit values a byte (low nibble first), minus 8, times their group's scale: ``interleave``d back."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    packed = tl.load(q_ptr + offs, mask=mask, other=0)
    lo = ((packed & 0xF).to(tl.int8) - 8).to(tl.float16)
    hi = (((packed >> 4) & 0xF).to(tl.int8) - 8).to(tl.float16)
    s = tl.load(scale_ptr + offs // GROUP, mask=mask, other=0.0)
    out = tl.interleave(lo, hi) * tl.interleave(s, s)
    o = tl.program_id(0) * 2 * BLOCK + tl.arange(0, 2 * BLOCK)
    tl.store(out_ptr + o, out, mask=o < 2 * n)


def test_int4_dequant_interleave(backend, dev, rng):
    n, group = 3000, 32
    q = rng.integers(0, 256, n, dtype=np.uint8)
    scale = rng.integers(1, 8, n // group + 1).astype(np.float16)
    out = dev.empty(2 * n, np.float16)
    dequant_int4_kernel[(-(-n // 512),)](dev.put(q), dev.put(scale), out, n, BLOCK=512, GROUP=group, target=backend)
    nibbles = np.stack([q & 0xF, q >> 4], axis=1).astype(np.int16) - 8
    want = (nibbles * scale[np.arange(n) // group][:, None].astype(np.float32)).astype(np.float16).ravel()
    np.testing.assert_array_equal(dev.get(out), want)
