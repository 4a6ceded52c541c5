"""Atomics: an int32 histogram with atomic_add, atomic_max, a float sum across programs, atomic_cas claims,
tiles added by several programs (the values each replaced)."""

import numpy as np
import pytest

import tilelab
import tilelab.language as tl

from .support import cdiv


@tilelab.jit
def histogram_kernel(x_ptr, hist_ptr, n, NUM_BINS: tl.constexpr, BLOCK: tl.constexpr):
    """Count values into bins: many programs add 1 to the same int32 bins."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0)
    tl.atomic_add(hist_ptr + x % NUM_BINS, 1, mask=mask)


def test_histogram_atomic_add(backend, dev, rng):
    n, bins = 5000, 16
    x = rng.integers(0, 1000, n, dtype=np.int32)
    start = rng.integers(1, 10, bins, dtype=np.int32)  # bins start non-zero: the kernel must add, not store
    hist = dev.put(start)
    histogram_kernel[(cdiv(n, 256),)](dev.put(x), hist, n, NUM_BINS=bins, BLOCK=256, target=backend)
    np.testing.assert_array_equal(dev.get(hist), start + np.bincount(x % bins, minlength=bins))


@tilelab.jit
def atomic_max_kernel(x_ptr, keys_ptr, table_ptr, best_ptr, n, BLOCK: tl.constexpr):
    """Per-key maxima with colliding tensor atomics, and one global maximum from a scalar atomic."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=-(2**31))
    keys = tl.load(keys_ptr + offsets, mask=mask, other=0)
    tl.atomic_max(table_ptr + keys, x, mask=mask)
    tl.atomic_max(best_ptr, tl.max(x, axis=0))


def test_atomic_max(backend, dev, rng):
    n, n_keys = 3000, 10
    x = rng.integers(-(10**6), 10**6, n, dtype=np.int32)
    keys = rng.integers(0, n_keys, n, dtype=np.int32)
    table = dev.put(np.full(n_keys, -(2**31), dtype=np.int32))
    best = dev.put(np.full(1, -(2**31), dtype=np.int32))
    atomic_max_kernel[(cdiv(n, 256),)](dev.put(x), dev.put(keys), table, best, n, BLOCK=256, target=backend)
    want = np.full(n_keys, -(2**31), dtype=np.int32)
    np.maximum.at(want, keys, x)
    np.testing.assert_array_equal(dev.get(table), want)
    np.testing.assert_array_equal(dev.get(best), [x.max()])


@tilelab.jit
def atomic_sum_kernel(x_ptr, total_ptr, n, BLOCK: tl.constexpr):
    """A float sum across programs: each adds its block's partial sum to one scalar."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    tl.atomic_add(total_ptr, tl.sum(x, axis=0))


def test_atomic_add_float_sum(backend, dev, rng):
    n = 10000
    x = rng.standard_normal(n).astype(np.float32)
    total = dev.put(np.ones(1, np.float32))
    atomic_sum_kernel[(cdiv(n, 512),)](dev.put(x), total, n, BLOCK=512, target=backend)
    np.testing.assert_allclose(dev.get(total), [1 + x.astype(np.float64).sum()], rtol=1e-4, atol=1e-3)


@tilelab.jit
def claim_kernel(slots_ptr, seen_ptr, NUM_SLOTS: tl.constexpr):
    """Each program tries once to claim a slot with compare-and-swap (no spinning) and records what it saw."""
    pid = tl.program_id(0)
    seen = tl.atomic_cas(slots_ptr + pid % NUM_SLOTS, -1, pid)
    tl.store(seen_ptr + pid, seen)


def test_atomic_cas_claims(backend, dev):
    programs, n_slots = 40, 8
    slots = dev.put(np.full(n_slots, -1, dtype=np.int32))
    seen = dev.empty(programs, np.int32)
    claim_kernel[(programs,)](slots, seen, NUM_SLOTS=n_slots, target=backend)
    slots, seen = dev.get(slots), dev.get(seen)
    for s in range(n_slots):
        contenders = np.arange(s, programs, n_slots)
        winners = contenders[seen[contenders] == -1]
        assert len(winners) == 1, f"slot {s}: {len(winners)} programs saw it free"
        assert slots[s] == winners[0]
        np.testing.assert_array_equal(seen[contenders[contenders != winners[0]]], winners[0])


@tilelab.jit
def accumulate_kernel(x_ptr, out_ptr, old_ptr, m, n, BM: tl.constexpr, BN: tl.constexpr, SEM: tl.constexpr):
    """Every program of a column adds the same tile into ``out`` and keeps the values it replaced."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    mask = (rm[:, None] < m) & (rn[None, :] < n)
    offs = rm[:, None] * n + rn[None, :]
    x = tl.load(x_ptr + offs, mask=mask)
    old = tl.atomic_add(out_ptr + offs, x, mask=mask, sem=SEM)
    tl.store(old_ptr + tl.program_id(1) * m * n + offs, old, mask=mask)


@pytest.mark.parametrize(("dtype", "n"), [(np.float32, 64), (np.float32, 61), (np.float16, 64)])
@pytest.mark.parametrize("sem", ["acq_rel", "relaxed"])
def test_tile_atomic_add_returns_each_replaced_value(backend, dev, rng, dtype, n, sem):
    """Several programs add one tile (4 f32 at a time where a row allows it, one where ``n`` is odd)."""
    m, repeats = 50, 3
    x = rng.integers(-8, 8, (m, n)).astype(dtype)  # small integers: sums exact in any order
    start = rng.integers(-8, 8, (m, n)).astype(dtype)
    out, old = dev.put(start.copy()), dev.empty((repeats, m, n), dtype)
    accumulate_kernel[(cdiv(m, 16), repeats)](dev.put(x), out, old, m, n, BM=16, BN=64, SEM=sem, target=backend)
    np.testing.assert_array_equal(dev.get(out), start + repeats * x)
    seen = np.sort(dev.get(old), axis=0)  # each program saw the tile after some of the others' adds
    np.testing.assert_array_equal(seen, np.sort(np.stack([start + k * x for k in range(repeats)]), axis=0))


@tilelab.jit
def add_outer_products_kernel(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr):
    """A split-K epilogue's shape: each program's f32 tile, made in registers, added into one bf16 matrix (the
    CPU: a compare-and-swap loop on each element's bits; the GPU: vector adds on sm_90)."""
    pid = tl.program_id(0)
    rm, rn = tl.arange(0, BM), tl.arange(0, BN)
    acc = tl.load(a_ptr + pid * BM + rm)[:, None] * tl.load(b_ptr + pid * BN + rn)[None, :]
    tl.atomic_add(c_ptr + rm[:, None] * BN + rn[None, :], acc.to(tl.bfloat16), sem="relaxed")


def test_programs_add_tiles_into_bf16(backend, dev, rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf16 = ml_dtypes.bfloat16
    programs, bm, bn = 3, 128, 128
    a = rng.integers(-4, 5, (programs, bm)).astype(np.float32)  # products and sums small integers: exact in bf16
    b = rng.integers(-4, 5, (programs, bn)).astype(np.float32)
    start = rng.integers(-8, 9, (bm, bn)).astype(np.float32)
    c = dev.put(start.astype(bf16))
    add_outer_products_kernel[(programs,)](dev.put(a), dev.put(b), c, BM=bm, BN=bn, num_warps=8, target=backend)
    ref = start + np.einsum("pm,pn->mn", a, b)
    np.testing.assert_array_equal(dev.get(c).astype(np.float32), ref)


@tilelab.jit
def locked_accumulate_kernel(x_ptr, acc_ptr, lock_ptr, count_ptr, n, GROUPS: tl.constexpr, BLOCK: tl.constexpr):
    """Triton's layer-norm-backward pattern: the programs of a group take turns, under a spin lock, adding
    their row into the group's buffer (the first one stores it). The buffer's plain loads and stores are
    ordered by the lock's ``acq_rel`` compare-and-swap and exchange (Triton's default ordering); as in
    Triton's tutorial, a barrier before the exchange makes every thread's stores precede it (the scalar
    exchange runs in one thread, and its ordering covers that thread's own accesses)."""
    pid = tl.program_id(0)
    group = pid % GROUPS
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + pid * n + offs, mask=mask)
    lock = lock_ptr + group
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    count = tl.load(count_ptr + group)
    if count == 0:
        tl.atomic_xchg(count_ptr + group, 1)
    else:
        x += tl.load(acc_ptr + group * n + offs, mask=mask)
    tl.store(acc_ptr + group * n + offs, x, mask=mask)
    tl.debug_barrier()
    tl.atomic_xchg(lock, 0)


def test_spin_lock_orders_the_buffer_it_guards(backend, dev, rng):
    rows, n, groups = 512, 300, 8
    x = rng.integers(-8, 8, (rows, n)).astype(np.float32)  # small integers: sums exact in any order
    acc = dev.put(np.full((groups, n), np.nan, np.float32))
    locks, counts = dev.put(np.zeros(groups, np.int32)), dev.put(np.zeros(groups, np.int32))
    locked_accumulate_kernel[(rows,)](dev.put(x), acc, locks, counts, n, GROUPS=groups, BLOCK=512, target=backend)
    want = x.reshape(rows // groups, groups, n).sum(axis=0)
    np.testing.assert_array_equal(dev.get(acc), want)
    np.testing.assert_array_equal(dev.get(locks), 0)
