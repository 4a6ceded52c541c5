"""Targets agree where the differential fuzzer found them apart (Triton's rules decide).

* Booleans are ``i1`` integers wrapping modulo 2 (Triton's ``c + c`` is an ``i1`` add):
  ``c + c`` is all False, ``c - d`` and ``c + d`` are ``c ^ d``, ``c * d`` is ``c & d``, ``-c`` is ``c``.
  The interpreter took numpy's ``or`` for ``+`` and refused ``-``.
* Float constants beyond their type's range fold to infinity, as a conversion on the GPU
  does: ``x_f16 * 1e30`` crashed the CPU compile inside llvmlite.
"""

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import tilelab
import tilelab.language as tl

TARGETS = ["interpret", "cpu"]


@tilelab.jit
def bool_arith(x, y, out_add, out_self, out_sub, out_mul, out_neg, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    c = tl.load(x + i) > 0
    d = tl.load(y + i) > 0
    tl.store(out_add + i, c + d)
    tl.store(out_self + i, c + c)
    tl.store(out_sub + i, c - d)
    tl.store(out_mul + i, c * d)
    tl.store(out_neg + i, -c)


@pytest.mark.parametrize("target", TARGETS)
def test_bool_arithmetic_wraps_modulo_two(target, rng):
    x, y = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    outs = [np.zeros(64, bool) for _ in range(5)]
    bool_arith[(1,)](x, y, *outs, BLOCK=64, target=target)
    c, d = x > 0, y > 0
    for got, want in zip(outs, [c ^ d, np.zeros(64, bool), c ^ d, c & d, c]):
        np.testing.assert_array_equal(got, want)


@tilelab.jit
def scale_f16(x, out, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(out + i, tl.load(x + i) * 1e30 + 1e-30)


@pytest.mark.parametrize("target", TARGETS)
def test_f16_constants_beyond_range_fold_to_infinity(target, rng):
    x = rng.standard_normal(32).astype(np.float16)
    x[:3] = [0.0, 1.0, -1.0]
    out = np.zeros(32, np.float16)
    scale_f16[(1,)](x, out, BLOCK=32, target=target)
    with np.errstate(invalid="ignore", over="ignore"):
        want = x * np.float16(np.inf) + np.float16(0.0)  # 1e30 -> inf, 1e-30 -> 0 in f16
    np.testing.assert_array_equal(out, want)


@tilelab.jit
def min_max(x, y, out_max, out_min, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    a, b = tl.load(x + i), tl.load(y + i)
    tl.store(out_max + i, tl.maximum(a, b))
    tl.store(out_min + i, tl.minimum(a, b))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_min_max_order_negative_zero_below_positive_zero(target, dtype, rng):
    """IEEE 754-2019 maximumNumber: the non-NaN operand, and max(0.0, -0.0) == 0.0 in either order."""
    x = rng.standard_normal(64).astype(dtype)
    y = rng.standard_normal(64).astype(dtype)
    x[:6], y[:6] = [0.0, -0.0, -0.0, 0.0, np.nan, 1.0], [-0.0, 0.0, -0.0, 0.0, 2.0, np.nan]
    hi, lo = np.zeros(64, dtype), np.zeros(64, dtype)
    min_max[(1,)](x, y, hi, lo, BLOCK=64, target=target)
    np.testing.assert_array_equal(hi, np.fmax(x, y))
    np.testing.assert_array_equal(lo, np.fmin(x, y))
    assert not np.signbit(hi[:2]).any() and np.signbit(lo[:3]).all() and not np.signbit(lo[3])


@tilelab.jit
def narrow_1d(x, out_h, out_b, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    v = tl.load(x + i)
    tl.store(out_h + i, v.to(tl.float16))
    tl.store(out_b + i, v.to(tl.bfloat16))


@tilelab.jit
def narrow_2d(x, out_h, out_b, R: tl.constexpr, C: tl.constexpr):
    i = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    v = tl.load(x + i)
    tl.store(out_h + i, v.to(tl.float16))
    tl.store(out_b + i, v.to(tl.bfloat16))


def _double_rounding_cases(rng, narrow, mantissa_bits):
    """f64 values just past a tie of ``narrow``: rounding to f32 first lands on the tie, then rounds to even."""
    base = rng.standard_normal(128).astype(narrow).astype(np.float64)
    ulp = np.abs(base) * 2.0**-mantissa_bits
    past_tie = base + ulp / 2 + ulp * 2.0**-20
    before_tie = base + ulp / 2 - ulp * 2.0**-20
    wide = rng.standard_normal(256) * 10.0 ** rng.integers(-8, 6, 256)
    return np.concatenate([past_tie, before_tie, wide, [0.0, -0.0, np.inf, -np.inf, 1e300, -1e-300, 65520.0]])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape", ["1d", "2d"])
def test_f64_to_f16_and_bf16_round_once(target, shape, rng):
    """f64 -> f16 crashed the CPU target (LLVM called __truncdfhf2, which the process lacks); both narrowings
    must round the f64 value itself to nearest even, not a rounded f32 of it."""
    import ml_dtypes

    cases = [_double_rounding_cases(rng, np.float16, 10), _double_rounding_cases(rng, ml_dtypes.bfloat16, 7)]
    x = np.concatenate(cases)
    x = np.resize(x, 1024)
    out_h, out_b = np.zeros(1024, np.float16), np.zeros(1024, ml_dtypes.bfloat16)
    if shape == "1d":
        narrow_1d[(1,)](x, out_h, out_b, BLOCK=1024, target=target)
    else:
        narrow_2d[(1,)](x, out_h, out_b, R=32, C=32, target=target)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out_h.view(np.uint16), x.astype(np.float16).view(np.uint16))
        np.testing.assert_array_equal(out_b.view(np.uint16), x.astype(ml_dtypes.bfloat16).view(np.uint16))


@tilelab.jit
def arg_extremes(x, out_max, out_min, out_fast, ROWS: tl.constexpr, COLS: tl.constexpr):
    rows = tl.arange(0, ROWS)[:, None]
    cols = tl.arange(0, COLS)[None, :]
    v = tl.load(x + rows * COLS + cols)
    tl.store(out_max + tl.arange(0, COLS), tl.argmax(v, axis=0))
    tl.store(out_min + tl.arange(0, COLS), tl.argmin(v, axis=0))
    tl.store(out_fast + tl.arange(0, COLS), tl.argmax(v, axis=0, tie_break_left=False))


def nan_ignoring(fn, x, axis):
    """``np.argmax`` / ``np.argmin`` with NaN ignored (the index of the extreme number; of all NaNs, the first)."""
    fill = -np.inf if fn is np.argmax else np.inf
    return fn(np.where(np.isnan(x), fill, x), axis=axis)


@pytest.mark.parametrize("target", ["interpret", "cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_argmax_and_argmin_ignore_nan_on_every_target(target, rng):
    """NaN is ignored, as ``tl.max`` ignores it, the same on every target (the fuzzer's seed 500603:
    ``[0, nan, 0, ...]`` gave 0 on the CPU and 2 on the GPU, when a combine left NaN out of its
    comparisons and the GPU's shuffle tree visited another order)."""
    from tests.conftest import DeviceMemory

    rows, cols = 32, 16
    x = rng.integers(-3, 3, (rows, cols)).astype(np.float32)  # many ties
    x[rng.random((rows, cols)) < 0.1] = np.nan
    x[:, 0] = 0.0  # a column of ties only
    x[[1, 5], 1] = np.nan  # NaNs before and after a tie
    x[:, 2] = np.nan  # a column of NaNs only: its first index
    dev = DeviceMemory(target)
    outs = [dev.put(np.full(cols, -1, np.int32)) for _ in range(3)]
    arg_extremes[(1,)](dev.put(x), *outs, ROWS=rows, COLS=cols, target=target)
    got_max, got_min, got_fast = (dev.get(o) for o in outs)
    np.testing.assert_array_equal(got_max, nan_ignoring(np.argmax, x, 0))
    np.testing.assert_array_equal(got_min, nan_ignoring(np.argmin, x, 0))
    picked = x[got_fast, np.arange(cols)]
    numbers = ~np.isnan(x).all(axis=0)
    assert np.all(picked[numbers] == np.nanmax(x[:, numbers], axis=0))  # any index of the max will do


@tilelab.jit
def arg_of_row(x, out, BLOCK: tl.constexpr):
    v = tl.load(x + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK))
    both = tl.where(tl.arange(0, 2) == 0, tl.argmax(v, axis=0), tl.argmin(v, axis=0))
    tl.store(out + tl.program_id(0) * 2 + tl.arange(0, 2), both)


@pytest.mark.parametrize("target", ["interpret", "cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_argmax_of_rows_with_nans_and_ties_across_lanes_and_warps(target, num_warps, rng):
    """Whole rows to one index: partials meet in every lane order and through shared memory; NaNs
    (ignored) and ties (lowest index wins) in lanes and warps far apart."""
    from tests.conftest import DeviceMemory

    rows, block = 24, 2048
    x = rng.integers(-2, 3, (rows, block)).astype(np.float32)  # ties everywhere
    for r in range(0, rows, 2):  # every other row gets NaNs, at random places
        x[r, rng.choice(block, size=1 + r % 5, replace=False)] = np.nan
    x[3, [1500, 7, 900]] = np.nan
    x[5] = np.nan  # a row of NaNs: its first index
    dev = DeviceMemory(target)
    out = dev.put(np.full((rows, 2), -1, np.int32))
    arg_of_row[(rows,)](dev.put(x), out, BLOCK=block, num_warps=num_warps, target=target)
    want = np.stack([nan_ignoring(np.argmax, x, 1), nan_ignoring(np.argmin, x, 1)], 1)
    np.testing.assert_array_equal(dev.get(out), want)


@tilelab.jit
def arg_of_narrow(x, out, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    v = tl.load(x + i)
    tl.store(out + tl.arange(0, 2), tl.where(tl.arange(0, 2) == 0, tl.argmax(v, axis=0), tl.argmin(v, axis=0)))


@pytest.mark.parametrize("target", ["interpret", "cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.float16])
def test_argmax_of_narrow_values_across_warps(target, dtype, rng):
    """Values of 1 or 2 bytes and i32 indices meet in shared memory across warps: each array aligned to its
    element size (the fuzzer's seed 601977: i8 argmin over 64 elements in 2 warps, a misaligned address)."""
    from tests.conftest import DeviceMemory

    dev = DeviceMemory(target)
    for block in (64, 256):
        x = rng.integers(-100, 100, block).astype(dtype)
        out = dev.put(np.full(2, -1, np.int32))
        arg_of_narrow[(1,)](dev.put(x), out, BLOCK=block, num_warps=4, target=target)
        np.testing.assert_array_equal(dev.get(out), [np.argmax(x), np.argmin(x)])


ALL_TARGETS = ["interpret", "cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


@tilelab.jit
def max_with_index_of_bools(x, out, ROWS: tl.constexpr, COLS: tl.constexpr):
    r, c = tl.arange(0, ROWS), tl.arange(0, COLS)
    v = tl.load(x + r[:, None] * COLS + c[None, :]) > 0
    top, where = tl.max(v, axis=1, return_indices=True)
    tl.static_assert(top.dtype == tl.int1)  # the values keep the operand's type
    tl.store(out + r * 2, top.to(tl.int32))
    tl.store(out + r * 2 + 1, where)


@pytest.mark.parametrize("target", ["interpret", "cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_max_with_index_of_bools(target, rng):
    from tests.conftest import DeviceMemory

    dev = DeviceMemory(target)
    x = (rng.random((16, 64)) < 0.05).astype(np.int32)  # some rows all False: index 0
    out = dev.put(np.full((16, 2), -1, np.int32))
    max_with_index_of_bools[(1,)](dev.put(x), out, ROWS=16, COLS=64, num_warps=4, target=target)
    np.testing.assert_array_equal(dev.get(out), np.stack([x.max(1), np.argmax(x, 1)], 1))


@tilelab.jit
def narrow_abs(x, out8, out16, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    v = tl.load(x + i)
    tl.store(out8 + i, tl.abs(v.to(tl.int8)).to(tl.int32))
    tl.store(out16 + i, tl.abs(v.to(tl.int16)).to(tl.int32))


@pytest.mark.parametrize("target", ALL_TARGETS)
def test_abs_of_the_narrow_minimum_wraps(target):
    """``abs(int16(-32768))`` is -32768 in 16 bits, and stays so when widened (the GPU's ``abs.s16`` then
    ``cvt.s32.s16`` gave +32768: the fuzzer's seed 621525)."""
    from tests.conftest import DeviceMemory

    dev = DeviceMemory(target)
    x = np.array([-32768, 32767, -128, 127, -5, 0, 65535, -32769] * 4, np.int32)
    out8, out16 = dev.put(np.zeros(32, np.int32)), dev.put(np.zeros(32, np.int32))
    narrow_abs[(1,)](dev.put(x), out8, out16, BLOCK=32, target=target)
    np.testing.assert_array_equal(dev.get(out8), np.abs(x.astype(np.int8)).astype(np.int32))
    np.testing.assert_array_equal(dev.get(out16), np.abs(x.astype(np.int16)).astype(np.int32))


@tilelab.jit
def nan_rules(x, y, out_min, out_max, out_i16, out_u8, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    a = tl.load(x + i)
    b = tl.load(y + i)
    tl.store(out_min + i, tl.minimum(a, b))
    tl.store(out_max + i, tl.maximum(a, b))
    tl.store(out_i16 + i, (a - a).to(tl.int16))
    tl.store(out_u8 + i, (a * b).to(tl.uint8))


@pytest.mark.parametrize("target", ALL_TARGETS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_minimum_maximum_and_casts_of_nan(target, dtype):
    """``minimum(x, nan)`` is ``x`` and ``-0.0 < +0.0``; NaN converts to the integer 0 (a CPU with AVX-512
    gave NaN and -32768: the fuzzer's seeds 600756, 618517, 604515)."""
    from tests.conftest import DeviceMemory

    dev = DeviceMemory(target)
    a = np.array([1.0, np.nan, np.nan, -0.0, 0.0, np.inf, -np.inf, 2.5] * 4, dtype)
    b = np.array([np.nan, 3.0, np.nan, 0.0, -0.0, 1.0, np.nan, -7.0] * 4, dtype)
    outs = [dev.put(np.zeros(32, d)) for d in (dtype, dtype, np.int16, np.uint8)]
    nan_rules[(1,)](dev.put(a), dev.put(b), *outs, BLOCK=32, target=target)
    got_min, got_max, got_i16, got_u8 = (dev.get(o) for o in outs)
    np.testing.assert_array_equal(got_min, np.fmin(a, b))
    np.testing.assert_array_equal(got_max, np.fmax(a, b))
    zero_min = np.signbit(got_min[(a == 0) & (b == 0)])
    zero_max = np.signbit(got_max[(a == 0) & (b == 0)])
    assert zero_min.all() and not zero_max.any()  # -0.0 < +0.0
    with np.errstate(invalid="ignore"):
        nan_diff, nan_prod = np.isnan(a - a), np.isnan(a * b)
    np.testing.assert_array_equal(got_i16[nan_diff], 0)
    np.testing.assert_array_equal(got_u8[nan_prod], 0)


@tilelab.jit
def nan_extremes(x, y, out_min, out_max, out_reduced, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    a = tl.load(x + i)
    b = tl.load(y + i)
    tl.store(out_min + i, tl.minimum(a, b))
    tl.store(out_max + i, tl.maximum(a, b))
    tl.store(out_reduced + tl.arange(0, 2), tl.join(tl.max(a, axis=0), tl.min(a, axis=0)))


SIGNALING_NAN = {np.float16: 0x7C01, np.float32: 0x7F800001, np.float64: 0x7FF0000000000001}


@pytest.mark.parametrize("target", ALL_TARGETS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_minimum_maximum_of_a_signaling_nan_are_the_number(target, dtype):
    """A signaling NaN is a NaN to ``tl.minimum`` / ``tl.maximum`` and their reductions: the other operand wins
    (the interpreter took numpy's ``fmax``, which returns NaN for a signaling one outside its vector loop: the
    fuzzer's seed 7013090, an f16 bit pattern bitcast from an integer and widened)."""
    from tests.conftest import DeviceMemory

    dev = DeviceMemory(target)
    bits = np.dtype(dtype).itemsize * 8
    snan = np.array([SIGNALING_NAN[dtype], SIGNALING_NAN[dtype] | 1 << (bits - 1)], f"u{bits // 8}").view(dtype)
    # eight elements: numpy's fmax gets a signaling NaN right in its 16-wide vector loop, wrong in its tail
    a = np.array([1.0, 0, -3.0, 0, 2.0, -0.0, 0, 5.0], dtype)
    b = np.array([0, -2.0, 0, 4.0, 0, 0, 0, -1.0], dtype)
    a[[1, 3, 6]], b[[0, 2, 4, 6]] = snan[[0, 1, 0]], snan[[1, 0, 1, 0]]
    outs = [dev.put(np.zeros(n, dtype)) for n in (8, 8, 2)]
    nan_extremes[(1,)](dev.put(a), dev.put(b), *outs, BLOCK=8, target=target)
    got_min, got_max, got_reduced = (dev.get(o) for o in outs)
    qa, qb = np.where(np.isnan(a), np.nan, a), np.where(np.isnan(b), np.nan, b)  # the same NaNs, quiet
    np.testing.assert_array_equal(got_min, np.fmin(qa, qb))
    np.testing.assert_array_equal(got_max, np.fmax(qa, qb))
    np.testing.assert_array_equal(got_reduced, [np.nanmax(qa), np.nanmin(qa)])


@tilelab.jit
def halves_under_branches(x_half, x_int, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :]
    mask = offs < n
    h = tl.load(x_half + offs, mask=mask, other=0)
    i = tl.load(x_int + offs, mask=mask, other=0)
    if n > 20:
        v = h.to(tl.float16)
    else:
        v = i.to(tl.float16)
    tl.store(out + offs, v, mask=mask)


@pytest.mark.parametrize("target", ALL_TARGETS)
def test_f16_pairs_loaded_under_one_branch_keep_their_order(target, rng):
    """A pair of f16 loaded as one word under one branch of an ``if`` and converted under the other: each
    element keeps its own half (ptxas took the low half twice from the unpack ``mov.b32 {_, %rs}``, so
    every odd element read its even neighbour: the fuzzer's seed 602254)."""
    from tests.conftest import DeviceMemory

    dev = DeviceMemory(target)
    n = 768
    h = rng.standard_normal(n).astype(np.float16)
    i = rng.integers(0, 100, n).astype(np.uint32)
    out = dev.put(np.zeros(n, np.float16))
    halves_under_branches[(3,)](dev.put(h), dev.put(i), out, n, BLOCK=256, target=target)
    np.testing.assert_array_equal(dev.get(out), h)


def test_gpu_code_takes_upper_halves_with_a_shift():
    """The PTX of that kernel: no unpack ``mov.b32 {_, %rs}`` (what ptxas mistranslated), a shift instead."""
    signature = {"x_half": "*f16", "x_int": "*u32", "out": "*f16", "n": "i32"}
    divisibility = dict.fromkeys(signature, 16)
    compiled = tilelab.compile(
        halves_under_branches, signature, {"BLOCK": 256}, target="cuda:sm_90", divisibility=divisibility
    )
    ptx = compiled.asm["ptx"]
    assert "ld.global.b32" in ptx or "ld.global.v2.b32" in ptx  # the pair is loaded as one word
    assert "{_, %rs" not in ptx and "shr.u32" in ptx


@tilelab.jit
def rsqrt_f16(x, out, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(out + i, tl.rsqrt(tl.load(x + i)))


@pytest.mark.parametrize("target", TARGETS)
def test_f16_rsqrt_rounds_once_from_f32(target, rng):
    """f16 math runs in f32 and rounds once: the CPU's ``1 / sqrt(x)`` rounded the square root to f16
    first (700 of 4096 results one f16 ulp off the interpreter's)."""
    x = np.exp2(rng.uniform(-14, 15, 1024)).astype(np.float16)
    out = np.zeros(1024, np.float16)
    rsqrt_f16[(1,)](x, out, BLOCK=1024, target=target)
    np.testing.assert_array_equal(out, (1 / np.sqrt(x.astype(np.float32))).astype(np.float16))


@tilelab.jit
def atomic_extremes(x, hi, lo, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    v = tl.load(x + i)
    tl.atomic_max(hi + i % 4, v)
    tl.atomic_min(lo + i % 4, v)


@pytest.mark.parametrize("target", TARGETS)
def test_float_atomic_max_min_drop_nan(target):
    """Float ``atomic_max`` / ``atomic_min`` keep the number, as ``tl.maximum`` (LLVM's ``atomicrmw fmax``
    on the CPU and GPU); the interpreter's numpy ``maximum`` spread the NaN, in memory or in the value."""
    x = np.array([1.0, np.nan, -3.0, 2.0, np.nan, 5.0, 4.0, -1.0], np.float32)
    hi = np.array([0.0, 0.0, 0.0, np.nan], np.float32)
    lo = hi.copy()
    atomic_extremes[(1,)](x, hi, lo, BLOCK=8, target=target)
    np.testing.assert_array_equal(hi, [1.0, 5.0, 4.0, 2.0])
    np.testing.assert_array_equal(lo, [0.0, 0.0, -3.0, -1.0])


@tilelab.jit
def int_to_bf16(x32, x64, out32, out64, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(out32 + i, tl.load(x32 + i).to(tl.bfloat16))
    tl.store(out64 + i, tl.load(x64 + i).to(tl.bfloat16))


def _nearest_bf16(v: int) -> float:
    """The bf16 nearest the integer ``v``, ties to even, computed exactly."""
    if v == 0:
        return 0.0
    ulp = Fraction(2) ** (abs(v).bit_length() - 8)
    return float(round(Fraction(abs(v)) / ulp) * ulp) * (1 if v > 0 else -1)


@pytest.mark.parametrize("target", ALL_TARGETS)
def test_an_integer_rounds_to_bf16_once(target, rng):
    """int -> bf16 went through f32 on the CPU and GPU, rounding twice: the int32 1094713352 is the f32
    1094713344, exactly between two bf16 values, which then tied to even the wrong way (the fuzzer's seed
    7029032). A 64-bit integer past 2**53 rounded twice on every target through f64."""
    from tests.conftest import DeviceMemory

    dev = DeviceMemory(target)
    x32 = np.concatenate(
        [[1094713352, -1094713352, 2**31 - 1, -(2**31), 16777217, 0], rng.integers(-(2**31), 2**31, 58)]
    )
    x64 = np.concatenate([[2**60 + 2**52 + 1, -(2**60 + 2**52 + 1), 2**63 - 1, -(2**63), 2**53 + 1, 0]])
    x64 = np.concatenate([x64, rng.integers(-(2**63), 2**63 - 1, 58, dtype=np.int64)])
    out32, out64 = dev.put(np.zeros(64, ml_dtypes.bfloat16)), dev.put(np.zeros(64, ml_dtypes.bfloat16))
    int_to_bf16[(1,)](
        dev.put(x32.astype(np.int32)), dev.put(x64.astype(np.int64)), out32, out64, BLOCK=64, target=target
    )
    np.testing.assert_array_equal(dev.get(out32).astype(np.float64), [_nearest_bf16(int(v)) for v in x32])
    np.testing.assert_array_equal(dev.get(out64).astype(np.float64), [_nearest_bf16(int(v)) for v in x64])
