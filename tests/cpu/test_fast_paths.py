"""The CPU backend's fast paths: unmasked loops for all-true masks, loads fused into stores.

Each kernel runs on the CPU target and on the interpreter (the reference semantics)
on fresh random data; the cases are chosen so that a wrong fast path gives a wrong
answer: tails of partial blocks, stores that overwrite what a later element reads,
aliased and overlapping arguments, and stores between a load and its use.
"""

import re

import numpy as np
import pytest

import tilelab
import tilelab.language as tl
from tests.support.cpu_kernels import F32_SIG, add, both


@tilelab.jit
def shift_right(x_ptr, limit, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs + 1, tl.load(x_ptr + offs, mask=offs < limit) * 2, mask=offs < limit)


@tilelab.jit
def copy_scaled(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3, mask=mask)


@tilelab.jit
def store_between(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(x_ptr + offs, mask=mask)
    b = a + 1
    tl.store(x_ptr + offs, a * 0 + 5, mask=mask)
    tl.store(out_ptr + offs, b, mask=mask)


@tilelab.jit
def shifted_copy(x_ptr, out_ptr, n, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + (offs - shift), mask=offs >= shift, other=-1.0), mask=offs < n)


@tilelab.jit
def shift_where(x_ptr, m_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs + 1, tl.load(x_ptr + offs) * 2, mask=tl.load(m_ptr + offs) > 0)


@tilelab.jit
def grid_ids(out_ptr):
    x, y, z = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    lin = (z * tl.num_programs(1) + y) * tl.num_programs(0) + x
    tl.store(out_ptr + lin, x + 100 * y + 10000 * z)


@pytest.mark.parametrize("n", [1, 255, 256, 1000, 4096 + 17])
def test_vector_add_matches_numpy_on_full_and_partial_blocks(rng, n):
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.full(n + 8, np.nan, np.float32)
    add[(tilelab.cdiv(n, 256),)](x, y, out, n, BLOCK=256, target="cpu")
    np.testing.assert_array_equal(out[:n], x + y)
    assert np.isnan(out[n:]).all()


@pytest.mark.parametrize("limit", [128, 77])
def test_store_over_what_later_elements_read_keeps_tile_semantics(rng, limit):
    x = rng.standard_normal(129).astype(np.float32)  # one program: no race between programs
    (cpu,), (ref,) = both(shift_right, (1,), [x], limit=limit, BLOCK=128)
    np.testing.assert_array_equal(cpu, ref)
    np.testing.assert_array_equal(cpu[1 : limit + 1], x[:limit] * 2)  # not x[0] * 2**k


@pytest.mark.parametrize("shift", [-1, 0, 1, 200])
def test_overlapping_arguments_match_the_interpreter(rng, shift):
    buf = rng.standard_normal(1200).astype(np.float32)
    n = 512
    src, dst = (buf[300 : 300 + n], buf[300 + shift : 300 + shift + n])
    cpu_buf, ref_buf = buf.copy(), buf.copy()
    for b, target in ((cpu_buf, "cpu"), (ref_buf, "interpret")):
        # one program: between programs the order of reads and writes is a race on any target
        copy_scaled[(1,)](b[300 : 300 + n], b[300 + shift : 300 + shift + n], n, BLOCK=n, target=target)
    np.testing.assert_array_equal(cpu_buf, ref_buf)
    assert src.shape == dst.shape


@pytest.mark.parametrize("shift", [-3, 0, 5])
@pytest.mark.parametrize("n", [300, 512])
def test_overlapping_sum_of_two_loads_reads_all_before_writing(rng, shift, n):
    buf = rng.standard_normal(700).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    cpu_buf, ref_buf = buf.copy(), buf.copy()
    for b, target in ((cpu_buf, "cpu"), (ref_buf, "interpret")):
        # one program per call: between programs the order of reads and writes is a race
        add[(1,)](b[100 : 100 + n], y, b[100 + shift : 100 + shift + n], n, BLOCK=512, target=target)
    np.testing.assert_array_equal(cpu_buf, ref_buf)
    np.testing.assert_array_equal(cpu_buf[100 + shift : 100 + shift + n], buf[100 : 100 + n] + y)


def test_overlapping_store_with_a_loaded_mask_reads_all_before_writing(rng):
    x = rng.standard_normal(129).astype(np.float32)
    m = rng.integers(-1, 2, 128).astype(np.int32)
    (cpu, _), (ref, _) = both(shift_where, (1,), [x, m], BLOCK=128)
    np.testing.assert_array_equal(cpu, ref)
    on = np.flatnonzero(m > 0)
    np.testing.assert_array_equal(cpu[on + 1], x[on] * 2)


@pytest.mark.parametrize("shift", [0, 3, 300])
def test_negative_offsets_from_an_argument_pointer_take_the_right_path(rng, shift):
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    shifted_copy[(tilelab.cdiv(n, 128),)](x, out, n, shift, BLOCK=128, target="cpu")
    expected = np.concatenate([np.full(shift, -1.0, np.float32), x[: n - shift]])
    np.testing.assert_array_equal(out, expected)


def test_a_store_between_a_load_and_its_use_does_not_change_what_was_read(rng):
    n = 700
    x = rng.standard_normal(n).astype(np.float32)
    cpu, ref = both(store_between, (tilelab.cdiv(n, 128),), [x, np.zeros(n, np.float32)], n=n, BLOCK=128)
    np.testing.assert_array_equal(cpu[1], x + 1)
    np.testing.assert_array_equal(cpu[0], ref[0])


@pytest.mark.parametrize("threads", ["1", "2"])
def test_program_ids_of_a_3d_grid_split_over_threads(monkeypatch, threads):
    monkeypatch.setenv("TILELAB_NUM_THREADS", threads)
    grid = (7, 5, 3)
    out = np.full(105, -1, np.int32)
    grid_ids[grid](out, target="cpu")
    z, y, x = np.meshgrid(range(3), range(5), range(7), indexing="ij")
    np.testing.assert_array_equal(out, (x + 100 * y + 10000 * z).ravel())


def test_vector_add_fast_path_uses_plain_vector_loads_without_gathers():
    ck = tilelab.compile(add, signature=F32_SIG, constants={"BLOCK": 1024}, target="cpu", snapshots=False)
    llir = ck.asm["llir"]
    assert re.search(r"= load <\d+ x float>", llir), "no unmasked vector load in the fast path"
    assert re.search(r"store <\d+ x float>", llir), "no unmasked vector store in the fast path"
    assert "gather" not in llir
