"""Control flow: while loops, runtime if/else, static_range unrolling, grid-stride loops, nested loops."""

import numpy as np

import tilelab
import tilelab.language as tl

from .support import cdiv


@tilelab.jit
def halvings_kernel(x_ptr, steps_ptr, value_ptr):
    """A scalar while loop whose trip count depends on loaded data: halve until below 1."""
    pid = tl.program_id(0)
    v = tl.load(x_ptr + pid)
    steps = 0
    while v >= 1.0:
        v = v * 0.5
        steps += 1
    tl.store(steps_ptr + pid, steps)
    tl.store(value_ptr + pid, v)


def test_while_loop_data_dependent(backend, dev, rng):
    n = 50
    x = rng.uniform(0.1, 5000.0, n).astype(np.float32)
    steps, values = dev.empty(n, np.int32), dev.empty(n, np.float32)
    halvings_kernel[(n,)](dev.put(x), steps, values, target=backend)
    want_steps = np.array([max(0, int(np.floor(np.log2(v))) + 1) for v in x.astype(np.float64)], dtype=np.int32)
    np.testing.assert_array_equal(dev.get(steps), want_steps)
    np.testing.assert_array_equal(dev.get(values), x / np.float32(2.0) ** want_steps)


@tilelab.jit
def branch_kernel(x_ptr, mode_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """A runtime if/elif/else on a per-program scalar loaded from memory (tiles defined on every path)."""
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    mode = tl.load(mode_ptr + pid)
    if mode == 0:
        y = x * 2.0
    elif mode == 1:
        y = x - 1.0
    else:
        y = tl.abs(x)
    tl.store(out_ptr + offsets, y, mask=mask)


def test_runtime_if_else(backend, dev, rng):
    n, block = 1000, 64
    x = rng.standard_normal(n).astype(np.float32)
    modes = rng.integers(0, 3, cdiv(n, block), dtype=np.int32)
    out = dev.empty(n, np.float32)
    branch_kernel[(cdiv(n, block),)](dev.put(x), dev.put(modes), out, n, BLOCK=block, target=backend)
    per_elem = np.repeat(modes, block)[:n]
    want = np.select([per_elem == 0, per_elem == 1], [x * 2, x - 1], np.abs(x))
    np.testing.assert_array_equal(dev.get(out), want)


@tilelab.jit
def static_range_kernel(x_ptr, out_ptr, n, TAPS: tl.constexpr, BLOCK: tl.constexpr):
    """A TAPS-tap moving sum, the tap loop unrolled at compile time with tl.static_range."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for t in tl.static_range(TAPS):
        acc += (t + 1) * tl.load(x_ptr + offsets + t, mask=offsets + t < n, other=0.0)
    tl.store(out_ptr + offsets, acc, mask=offsets < n)


def test_static_range_unrolled(backend, dev, rng):
    n, taps = 500, 4
    x = rng.standard_normal(n).astype(np.float32)
    out = dev.empty(n, np.float32)
    static_range_kernel[(cdiv(n, 128),)](dev.put(x), out, n, TAPS=taps, BLOCK=128, target=backend)
    padded = np.pad(x.astype(np.float64), (0, taps))
    terms = [(t + 1) * padded[t : t + n] for t in range(taps)]
    # the taps may cancel near zero: the sum's rounding scales with the terms' magnitude, not with the result
    atol = 4 * np.finfo(np.float32).eps * sum(np.abs(term) for term in terms).max()
    np.testing.assert_allclose(dev.get(out), sum(terms), rtol=1e-5, atol=atol)


@tilelab.jit
def grid_stride_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """A persistent grid-stride loop: few programs cover many blocks, stepping by num_programs."""
    step = tl.num_programs(0) * BLOCK
    for start in range(tl.program_id(0) * BLOCK, n, step):
        offsets = start + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 3.0 + tl.num_programs(0), mask=mask)


def test_num_programs_grid_stride(backend, dev, rng):
    n, programs = 3000, 3
    x = rng.standard_normal(n).astype(np.float32)
    out = dev.empty(n, np.float32)
    grid_stride_kernel[(programs,)](dev.put(x), out, n, BLOCK=128, target=backend)
    fused = 1e-6 * np.abs(x * 3).max()  # CUDA's fma (on by default, as Triton) skips the product's rounding
    np.testing.assert_allclose(dev.get(out), x * 3 + programs, rtol=1e-6, atol=fused)


@tilelab.jit
def nested_loops_kernel(x_ptr, out_ptr, m, n, BLOCK: tl.constexpr):
    """Nested runtime loops with a loop-carried scalar and tile: out[r] = sum_j (j % 3 + 1) * x[r, j]."""
    total = 0.0
    for r in range(0, m):
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, n, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + r * n + cols, mask=cols < n, other=0.0) * (cols % 3 + 1).to(tl.float32)
        row_sum = tl.sum(acc, axis=0)
        tl.store(out_ptr + r, row_sum)
        total += row_sum
    tl.store(out_ptr + m, total)


def test_nested_runtime_loops(backend, dev, rng):
    m, n = 7, 100
    x = rng.standard_normal((m, n)).astype(np.float32)
    out = dev.empty(m + 1, np.float32)
    nested_loops_kernel[(1,)](dev.put(x), out, m, n, BLOCK=32, target=backend)
    terms = x.astype(np.float64) * (np.arange(n) % 3 + 1)
    rows, got = terms.sum(1), dev.get(out)
    # sums of normals may cancel near zero: the tolerance scales with the terms added, not with the result
    np.testing.assert_allclose(got[:m], rows, rtol=1e-5, atol=1e-6 * np.abs(terms).sum(1).max())
    np.testing.assert_allclose(got[m], rows.sum(), rtol=1e-5, atol=1e-6 * np.abs(terms).sum())


@tilelab.jit
def collatz_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """A tile-wide while loop: iterate until every lane reached 1, lanes that finished stay put."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    v = tl.load(x_ptr + offsets, mask=mask, other=1)
    steps = tl.zeros([BLOCK], dtype=tl.int32)
    while tl.max(v, axis=0) > 1:
        active = v > 1
        v = tl.where(active, tl.where(v % 2 == 0, v // 2, 3 * v + 1), v)
        steps += active.to(tl.int32)
    tl.store(out_ptr + offsets, steps, mask=mask)


def test_tile_while_collatz(backend, dev, rng):
    n = 200
    x = rng.integers(1, 1000, n, dtype=np.int32)
    out = dev.empty(n, np.int32)
    collatz_kernel[(cdiv(n, 64),)](dev.put(x), out, n, BLOCK=64, target=backend)

    def steps(v):
        count = 0
        while v > 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            count += 1
        return count

    np.testing.assert_array_equal(dev.get(out), [steps(int(v)) for v in x])


@tilelab.jit
def conditional_expression_kernel(x_ptr, y_ptr, out_ptr, hits_ptr, n, BLOCK: tl.constexpr):
    """Conditional expressions with run-time conditions: only the taken branch's loads, stores and atomics run."""
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    # a value: the first load would run past the end of x for the last programs if both branches ran
    v = tl.load(x_ptr + offsets) if (pid + 1) * BLOCK <= n else tl.load(x_ptr + offsets, mask=offsets < n, other=-1.0)
    # no value: a store (and an atomic count of the branch) on one side only
    tl.store(out_ptr + offsets, v * 2.0, mask=offsets < n) if pid % 2 == 0 else tl.store(
        out_ptr + offsets, -v, mask=offsets < n
    )
    tl.atomic_add(hits_ptr, 1) if pid % 3 == 0 else tl.atomic_add(hits_ptr + 1, 1)
    # numbers of two types in the branches: the result has the wider one
    scale = 0.5 if pid > 1 else 2
    tl.store(y_ptr + offsets, v * scale, mask=offsets < n)


def test_conditional_expressions_run_only_the_taken_branch(backend, dev, rng):
    n, block = 200, 32
    programs = cdiv(n, block)
    x = rng.standard_normal(n).astype(np.float32)
    out, y = dev.empty(n, np.float32), dev.empty(n, np.float32)
    hits = dev.put(np.zeros(2, np.int32))
    conditional_expression_kernel[(programs,)](dev.put(x), y, out, hits, n, BLOCK=block, target=backend)
    pid = np.arange(n) // block
    np.testing.assert_array_equal(dev.get(out), np.where(pid % 2 == 0, x * 2, -x))
    np.testing.assert_array_equal(dev.get(y), x * np.where(pid > 1, np.float32(0.5), np.float32(2.0)))
    thirds = sum(1 for p in range(programs) if p % 3 == 0)
    np.testing.assert_array_equal(dev.get(hits), [thirds, programs - thirds])
