"""Lane-wise loops of 1-D kernels (lanes.py): the same values as the interpreter, and the short pipeline.

Each kernel runs on the CPU target and on the interpreter (the reference semantics) on
fresh random data. The cases are chosen so that each version of a lane-wise loop runs:
plain vector code (every mask true), masked vector code (the last, partial program),
the buffered store (arrays that overlap), and the element-by-element fallback (an
``i32`` offset that wraps, where lanes would not be contiguous).
"""

import numpy as np
import pytest

import tilelab
import tilelab.language as tl
from tests.support.cpu_kernels import F32_SIG, add, both, lowered


@tilelab.jit
def mixed(x_ptr, i_ptr, h_ptr, out_ptr, flag_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.5)
    i = tl.load(i_ptr + offs, mask=mask, other=-3)
    h = tl.load(h_ptr + offs, mask=mask, other=2.0).to(tl.float32)
    y = tl.where(i > 0, tl.maximum(x, h) * 2.0 - tl.abs(x), tl.sqrt(tl.abs(h)) + i.to(tl.float32))
    tl.store(out_ptr + offs, (y + x * x).to(tl.float16), mask=mask)
    tl.store(flag_ptr + offs, (i & 3) == 1, mask=mask)


@tilelab.jit
def wrapping(x_ptr, out_ptr, base, BLOCK: tl.constexpr):
    offs = base + tl.arange(0, BLOCK)  # an i32 that wraps to negative values past lane INT_MAX - base
    tl.store(out_ptr + (offs - base), tl.load(x_ptr + (offs - base)) * 2, mask=offs >= 0)


@tilelab.jit
def squares_i64(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x * x - 1, mask=offs < n)


@tilelab.jit
def twice(x_ptr, a_ptr, b_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    y = tl.load(x_ptr + offs, mask=offs < n) + 1  # used by two stores: computed into a buffer once
    tl.store(a_ptr + offs, y, mask=offs < n)
    tl.store(b_ptr + offs, y * 3, mask=offs < n)


@tilelab.jit
def scale_rows(x_ptr, out_ptr, n_cols, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    for start in range(0, n_cols, BLOCK):  # lane loops inside a loop with a runtime bound
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
        tl.store(out_ptr + row * n_cols + cols, x * scale - 1.0, mask=cols < n_cols)


@tilelab.jit
def exp_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.exp(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)


def test_vector_add_is_lane_code_for_the_short_pipeline(monkeypatch):
    text, pipeline = lowered(monkeypatch, add, F32_SIG, {"BLOCK": 1024})
    assert pipeline == "lanes"
    assert "load <16 x float>" in text and "store <16 x float>" in text  # every mask true: plain vectors
    assert "masked.load.v16f32" in text and "masked.store.v16f32" in text  # the partial program
    assert "loop.body" not in text, "no element-by-element loop: pid * 1024 + arange(1024) never wraps"


@pytest.mark.parametrize("n", [1, 77, 1024, 4096, 4096 + 5])
def test_vector_add_full_partial_and_in_place(rng, n):
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.full(n + 8, np.nan, np.float32)
    add[(tilelab.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024, target="cpu")
    np.testing.assert_array_equal(out[:n], x + y)
    assert np.isnan(out[n:]).all()
    expected = x + y
    add[(tilelab.cdiv(n, 1024),)](x, y, x, n, BLOCK=1024, target="cpu")  # out is x: the same addresses
    np.testing.assert_array_equal(x, expected)


@pytest.mark.parametrize("shift", [-17, -1, 1, 16, 1000])
def test_partly_overlapping_store_reads_everything_first(rng, shift):
    buf = rng.standard_normal(4000).astype(np.float32)
    y = rng.standard_normal(1024).astype(np.float32)
    cpu_buf, ref_buf = buf.copy(), buf.copy()
    for b, target in ((cpu_buf, "cpu"), (ref_buf, "interpret")):
        # one program: between programs the order of reads and writes is a race on any target
        add[(1,)](b[1500:2524], y, b[1500 + shift : 2524 + shift], 1000, BLOCK=1024, target=target)
    np.testing.assert_array_equal(cpu_buf, ref_buf)


@pytest.mark.parametrize("n", [256, 200])
def test_mixed_types_casts_selects_and_bool_stores_match_the_interpreter(monkeypatch, rng, n):
    sig = {"x_ptr": "*fp32", "i_ptr": "*i32", "h_ptr": "*fp16", "out_ptr": "*fp16", "flag_ptr": "*i1", "n": "i32"}
    assert lowered(monkeypatch, mixed, sig, {"BLOCK": 128})[1] == "lanes"
    args = [
        rng.standard_normal(n).astype(np.float32),
        rng.integers(-50, 50, n).astype(np.int32),
        rng.standard_normal(n).astype(np.float16),
        np.full(n, np.nan, np.float16),
        np.zeros(n, np.bool_),
        n,
    ]
    cpu, ref = both(mixed, (tilelab.cdiv(n, 128),), args, BLOCK=128)
    np.testing.assert_allclose(cpu[3].astype(np.float32), ref[3].astype(np.float32), rtol=2e-3, atol=2e-3)
    np.testing.assert_array_equal(cpu[4], ref[4])


def test_i32_offsets_that_wrap_take_the_element_fallback(monkeypatch, rng):
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "base": "i32"}
    text, pipeline = lowered(monkeypatch, wrapping, sig, {"BLOCK": 64})
    assert pipeline == "lanes" and "loop.body" in text, "offsets that may wrap need the fallback"
    x = rng.standard_normal(64).astype(np.float32)
    for base in (5, 2**31 - 10):  # the second wraps after ten lanes: only those are stored
        (_, cpu, _), (_, ref, _) = both(wrapping, (1,), [x, np.full(64, np.nan, np.float32), base], BLOCK=64)
        np.testing.assert_array_equal(cpu, ref)
    np.testing.assert_array_equal(cpu[:10], x[:10] * 2)
    assert np.isnan(cpu[10:]).all()


def test_i64_offsets_and_a_value_used_twice(monkeypatch, rng):
    n = 3000
    x = rng.standard_normal(n).astype(np.float32)
    assert (
        lowered(monkeypatch, squares_i64, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 256})[1]
        == "lanes"
    )
    cpu, ref = both(squares_i64, (tilelab.cdiv(n, 256),), [x, np.full(n, np.nan, np.float32), n], BLOCK=256)
    np.testing.assert_array_equal(cpu[1], ref[1])
    sig = {"x_ptr": "*fp32", "a_ptr": "*fp32", "b_ptr": "*fp32", "n": "i32"}
    assert lowered(monkeypatch, twice, sig, {"BLOCK": 256})[1] == "lanes"
    cpu, ref = both(twice, (tilelab.cdiv(n, 256),), [x, np.zeros(n, np.float32), np.zeros(n, np.float32), n], BLOCK=256)
    np.testing.assert_array_equal(cpu[1], x + 1)
    np.testing.assert_array_equal(cpu[2], ref[2])


@pytest.mark.parametrize("n_cols", [64, 100, 300])
def test_lane_loops_inside_a_runtime_loop(monkeypatch, rng, n_cols):
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n_cols": "i32", "scale": "fp32"}
    assert lowered(monkeypatch, scale_rows, sig, {"BLOCK": 64})[1] == "lanes"
    x = rng.standard_normal((5, n_cols)).astype(np.float32)
    cpu, ref = both(scale_rows, (5,), [x, np.full_like(x, np.nan), n_cols, 1.5], BLOCK=64)
    np.testing.assert_array_equal(cpu[1], ref[1])
    np.testing.assert_array_equal(cpu[1], x * np.float32(1.5) - 1)


def test_ops_lanes_do_not_cover_leave_the_loop_to_llvms_vectorizer(monkeypatch, rng):
    text, pipeline = lowered(
        monkeypatch, exp_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 256}
    )
    assert pipeline == "vectorize"
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    exp_kernel[(tilelab.cdiv(n, 256),)](x, out, n, BLOCK=256, target="cpu")
    np.testing.assert_allclose(out, np.exp(x), rtol=2e-6)
