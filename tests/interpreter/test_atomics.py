"""Atomics: sequential semantics across lanes and programs, old values, masks."""

import numpy as np
import pytest

from tests.support.ir_builders import KernelBuilder, poisoned
from tilelab.compiler.interpreter import run_kernel
from tilelab.compiler.ir import ops as O

B = 64


def histogram_kernel():
    k = KernelBuilder("hist", {"x": "*i32", "bins": "*i32", "n": "i32"})
    offs, mask = k.block_offsets(B, k.arg("n"))
    x = k.load(k.addptr(k.arg("x"), offs), mask)
    k.op(O.AtomicRMWOp("add", k.addptr(k.arg("bins"), x), k.const(1, "i32", (B,)), mask=mask))
    return k.finish()


def test_histogram_with_masked_tail(rng):
    n, nbins = 1000, 13
    x = rng.integers(0, nbins, n, dtype=np.int32)
    bins = rng.integers(0, 5, nbins, dtype=np.int32)
    expect = bins + np.bincount(x, minlength=nbins)
    run_kernel(histogram_kernel(), (16,), [x, bins, n])  # 1024 lanes, 24 masked off
    np.testing.assert_array_equal(bins, expect)


def test_atomic_add_returns_sequential_old_values(rng):
    """Every lane of every program adds ``v`` to one counter: ``old`` is the running sum."""
    k = KernelBuilder("ticket", {"v": "*i32", "counter": "*i32", "old": "*i32"})
    offs, _ = k.block_offsets(B, k.const(0, "i32"))
    v = k.load(k.addptr(k.arg("v"), offs))
    counter = k.splat(k.arg("counter"), (B,))
    old = k.op(O.AtomicRMWOp("add", counter, v))
    k.store(k.addptr(k.arg("old"), offs), old)
    v = rng.integers(1, 10, 3 * B, dtype=np.int32)
    counter = np.array([int(rng.integers(0, 100))], np.int32)
    start = int(counter[0])
    old = poisoned(3 * B, np.int32)
    run_kernel(k.finish(), (3,), [v, counter, old])
    np.testing.assert_array_equal(old, start + np.concatenate([[0], np.cumsum(v)[:-1]]))
    assert counter[0] == start + v.sum()


KINDS = {
    "max": np.maximum,
    "min": np.minimum,
    "umax": lambda a, b: np.maximum(a.view(np.uint32), b.view(np.uint32)).view(np.int32),
    "umin": lambda a, b: np.minimum(a.view(np.uint32), b.view(np.uint32)).view(np.int32),
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
    "xchg": lambda a, b: b,
}


@pytest.mark.parametrize("kind", KINDS)
def test_rmw_kinds_on_distinct_addresses(rng, kind):
    k = KernelBuilder("rmw", {"dst": "*i32", "v": "*i32", "old": "*i32"})
    offs = k.arange(B)
    mask = k.cmp("ne", k.bin("rem", offs, k.const(5, "i32", (B,))), k.const(0, "i32", (B,)))
    v = k.load(k.addptr(k.arg("v"), offs))
    old = k.op(O.AtomicRMWOp(kind, k.addptr(k.arg("dst"), offs), v, mask=mask))
    k.store(k.addptr(k.arg("old"), offs), old)
    dst = rng.integers(-(2**31), 2**31, B, dtype=np.int64).astype(np.int32)
    v = rng.integers(-(2**31), 2**31, B, dtype=np.int64).astype(np.int32)
    before = dst.copy()
    old = poisoned(B, np.int32)
    run_kernel(k.finish(), (1,), [dst, v, old])
    active = np.arange(B) % 5 != 0
    np.testing.assert_array_equal(dst, np.where(active, KINDS[kind](before, v), before))
    np.testing.assert_array_equal(old, np.where(active, before, 0))


def test_float_atomic_add_to_repeated_addresses(rng):
    k = KernelBuilder("fadd", {"dst": "*f32", "v": "*f32", "idx": "*i32"})
    offs = k.arange(B)
    idx = k.load(k.addptr(k.arg("idx"), offs))
    k.op(O.AtomicRMWOp("fadd", k.addptr(k.arg("dst"), idx), k.load(k.addptr(k.arg("v"), offs))))
    dst = rng.standard_normal(4).astype(np.float32)
    v = rng.standard_normal(B).astype(np.float32)
    idx = rng.integers(0, 4, B, dtype=np.int32)
    expect = dst.copy()
    for i, x in zip(idx, v):  # float sums depend on order: lane order is the reference
        expect[i] += x
    run_kernel(k.finish(), (1,), [dst, v, idx])
    np.testing.assert_array_equal(dst, expect)


def test_compare_and_swap_lock_order(rng):
    """Each program CASes ``lock`` from its id to id + 1: all succeed in grid order."""
    k = KernelBuilder("cas", {"lock": "*i32", "seen": "*i32"})
    pid = k.pid(0)
    old = k.op(O.AtomicCASOp(k.arg("lock"), pid, k.bin("add", pid, k.const(1, "i32"))))
    k.store(k.addptr(k.arg("seen"), pid), old)
    module = k.finish()
    lock = np.zeros(1, np.int32)
    seen = poisoned(8, np.int32)
    run_kernel(module, (8,), [lock, seen])
    assert lock[0] == 8
    np.testing.assert_array_equal(seen, np.arange(8))
    lock[0] = 3  # programs 0-2 see a mismatch and leave it; from program 3 on, each succeeds
    run_kernel(module, (8,), [lock, seen])
    np.testing.assert_array_equal(seen, [3, 3, 3, 3, 4, 5, 6, 7])
    assert lock[0] == 8
