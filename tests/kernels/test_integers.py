"""Integer kernels: C-semantics division and remainder, shifts, bitwise ops, umulhi, unsigned types, casts."""

import ml_dtypes
import numpy as np

import tilelab
import tilelab.language as tl

from .support import cdiv


@tilelab.jit
def divmod_kernel(a_ptr, b_ptr, q_ptr, r_ptr, n, BLOCK: tl.constexpr):
    """Integer // and % truncate toward zero as in C (not Python's floor semantics)."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a = tl.load(a_ptr + offsets, mask=mask)
    b = tl.load(b_ptr + offsets, mask=mask, other=1)
    tl.store(q_ptr + offsets, a // b, mask=mask)
    tl.store(r_ptr + offsets, a % b, mask=mask)


def test_int_division_c_semantics(backend, dev, rng):
    n = 1000
    a = rng.integers(-1000, 1000, n, dtype=np.int32)
    b = rng.integers(1, 50, n, dtype=np.int32) * rng.choice(np.int32([-1, 1]), n)
    q, r = dev.empty(n, np.int32), dev.empty(n, np.int32)
    divmod_kernel[(cdiv(n, 256),)](dev.put(a), dev.put(b), q, r, n, BLOCK=256, target=backend)
    want_q = (np.abs(a) // np.abs(b)) * np.sign(a) * np.sign(b)
    np.testing.assert_array_equal(dev.get(q), want_q)
    np.testing.assert_array_equal(dev.get(r), np.fmod(a, b))


@tilelab.jit
def bitwise_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Signed bit ops: and, or, xor, not, left shift and arithmetic right shift."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a = tl.load(a_ptr + offsets, mask=mask)
    b = tl.load(b_ptr + offsets, mask=mask)
    shift = b & 15
    tl.store(out_ptr + 0 * n + offsets, a & b, mask=mask)
    tl.store(out_ptr + 1 * n + offsets, a | b, mask=mask)
    tl.store(out_ptr + 2 * n + offsets, a ^ b, mask=mask)
    tl.store(out_ptr + 3 * n + offsets, ~a, mask=mask)
    tl.store(out_ptr + 4 * n + offsets, a << shift, mask=mask)
    tl.store(out_ptr + 5 * n + offsets, a >> shift, mask=mask)


def test_bitwise_signed(backend, dev, rng):
    n = 700
    a, b = rng.integers(-(2**31), 2**31 - 1, (2, n), dtype=np.int32)
    out = dev.empty((6, n), np.int32)
    bitwise_kernel[(cdiv(n, 256),)](dev.put(a), dev.put(b), out, n, BLOCK=256, target=backend)
    shift = b & 15
    want = [a & b, a | b, a ^ b, ~a, a << shift, a >> shift]
    np.testing.assert_array_equal(dev.get(out), np.stack(want))


@tilelab.jit
def unsigned_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Unsigned 32-bit: logical right shift, wrapping multiply, umulhi, unsigned compare."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a = tl.load(a_ptr + offsets, mask=mask)
    b = tl.load(b_ptr + offsets, mask=mask)
    tl.store(out_ptr + 0 * n + offsets, a >> 7, mask=mask)
    tl.store(out_ptr + 1 * n + offsets, a * b, mask=mask)
    tl.store(out_ptr + 2 * n + offsets, tl.umulhi(a, b), mask=mask)
    tl.store(out_ptr + 3 * n + offsets, tl.where(a > b, a - b, b - a), mask=mask)
    tl.store(out_ptr + 4 * n + offsets, (a + b) % 1000003, mask=mask)


def test_unsigned_and_umulhi(backend, dev, rng):
    n = 513
    a, b = rng.integers(0, 2**32, (2, n), dtype=np.uint64).astype(np.uint32)
    out = dev.empty((5, n), np.uint32)
    unsigned_kernel[(cdiv(n, 128),)](dev.put(a), dev.put(b), out, n, BLOCK=128, target=backend)
    wide = a.astype(np.uint64) * b.astype(np.uint64)
    want = [
        a >> np.uint32(7),
        (wide & np.uint64(0xFFFFFFFF)).astype(np.uint32),
        (wide >> np.uint64(32)).astype(np.uint32),
        np.where(a > b, a - b, b - a),
        ((a.astype(np.uint64) + b) % (2**32) % 1000003).astype(np.uint32),
    ]
    np.testing.assert_array_equal(dev.get(out), np.stack(want))


@tilelab.jit
def float_casts_kernel(x_ptr, a_ptr, b_ptr, back_ptr, n, BLOCK: tl.constexpr, A: tl.constexpr, B: tl.constexpr):
    """f32 -> A and f32 -> B (round to nearest even), both widened back to f32 and summed."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    a, b = x.to(A), x.to(B)
    tl.store(a_ptr + offsets, a, mask=mask)
    tl.store(b_ptr + offsets, b, mask=mask)
    tl.store(back_ptr + offsets, a.to(tl.float32) + b.to(tl.float32), mask=mask)


def test_float_casts(backend, dev, rng):
    n = 900
    x = (rng.standard_normal(n) * 100).astype(np.float32)
    f16, bf16, back = dev.empty(n, np.float16), dev.empty(n, ml_dtypes.bfloat16), dev.empty(n, np.float32)
    float_casts_kernel[(cdiv(n, 256),)](dev.put(x), f16, bf16, back, n, BLOCK=256, A=tl.float16, B=tl.bfloat16,
                                        target=backend)  # fmt: skip
    np.testing.assert_array_equal(dev.get(f16), x.astype(np.float16))
    np.testing.assert_array_equal(dev.get(bf16).view(np.uint16), x.astype(ml_dtypes.bfloat16).view(np.uint16))
    want = x.astype(np.float16).astype(np.float32) + x.astype(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_array_equal(dev.get(back), want)


@tilelab.jit
def int_float_casts_kernel(x_ptr, i_ptr, f_ptr, bits_ptr, n, BLOCK: tl.constexpr):
    """float -> int truncates toward zero; int -> float rounds; bitcast reinterprets the bits."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    i = x.to(tl.int32)
    tl.store(i_ptr + offsets, i, mask=mask)
    tl.store(f_ptr + offsets, (i * 3 + 1).to(tl.float32), mask=mask)
    tl.store(bits_ptr + offsets, x.to(tl.uint32, bitcast=True) ^ 0x80000000, mask=mask)


def test_int_float_bitcast(backend, dev, rng):
    n = 800
    x = (rng.standard_normal(n) * 1000).astype(np.float32)
    i, f, bits = dev.empty(n, np.int32), dev.empty(n, np.float32), dev.empty(n, np.uint32)
    int_float_casts_kernel[(cdiv(n, 256),)](dev.put(x), i, f, bits, n, BLOCK=256, target=backend)
    want_i = np.trunc(x).astype(np.int32)
    np.testing.assert_array_equal(dev.get(i), want_i)
    np.testing.assert_array_equal(dev.get(f), (want_i * 3 + 1).astype(np.float32))
    np.testing.assert_array_equal(dev.get(bits), (-x).view(np.uint32))


@tilelab.jit
def saturating_casts_kernel(x_ptr, i8_ptr, u8_ptr, i16_ptr, i32_ptr, u32_ptr, i64_ptr, u64_ptr, n, BLOCK: tl.constexpr):
    """One float row to every integer type: toward zero, out-of-range values saturating, NaN to 0."""
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(i8_ptr + offsets, x.to(tl.int8), mask=mask)
    tl.store(u8_ptr + offsets, x.to(tl.uint8), mask=mask)
    tl.store(i16_ptr + offsets, x.to(tl.int16), mask=mask)
    tl.store(i32_ptr + offsets, x.to(tl.int32), mask=mask)
    tl.store(u32_ptr + offsets, x.to(tl.uint32), mask=mask)
    tl.store(i64_ptr + offsets, x.to(tl.int64), mask=mask)
    tl.store(u64_ptr + offsets, x.to(tl.uint64), mask=mask)


def test_float_to_int_saturates_at_every_width(backend, dev, rng):
    """Past each type's range a conversion gives the nearest end, NaN gives 0 (``fptosi.sat``; the GPU's
    ``cvt.rzi``), from f32 and from f64, whatever instruction each backend picks."""
    edges = [np.nan, np.inf, -np.inf, 1e30, -1e30, 3e9, -3e9, 2.5e19, -2.5e19, 2147483520.0, -2147483648.0, 70000.0,
             -70000.0, 300.0, -300.0, 255.9, 127.9, -128.9, -0.9, -0.0, 0.7, 2.5, -2.5]  # fmt: skip
    types = [np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64]
    for ftype in (np.float32, np.float64):
        x = np.concatenate([np.array(edges, ftype), (rng.standard_normal(41) * 10.0 ** rng.integers(0, 12, 41))])
        x = x.astype(ftype)
        outs = [dev.empty(len(x), t) for t in types]
        saturating_casts_kernel[(1,)](dev.put(x), *outs, len(x), BLOCK=64, target=backend)
        for t, out in zip(types, outs):
            info = np.iinfo(t)
            want = np.clip(np.trunc(np.nan_to_num(x.astype(np.float64), nan=0.0)), float(info.min), float(info.max))
            want = np.array([int(v) if abs(v) < 2**62 else (info.max if v > 0 else info.min) for v in want], object)
            np.testing.assert_array_equal(dev.get(out).astype(object), want, err_msg=f"{x.dtype} -> {t.__name__}")


@tilelab.jit
def int64_index_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """int64 arithmetic: products that overflow int32 must not wrap."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    big = x.to(tl.int64) * 3_000_000_000 + offsets
    tl.store(out_ptr + offsets, big, mask=mask)


def test_int64_arithmetic(backend, dev, rng):
    n = 300
    x = rng.integers(-(2**20), 2**20, n, dtype=np.int32)
    out = dev.empty(n, np.int64)
    int64_index_kernel[(cdiv(n, 128),)](dev.put(x), out, n, BLOCK=128, target=backend)
    np.testing.assert_array_equal(dev.get(out), x.astype(np.int64) * 3_000_000_000 + np.arange(n))


@tilelab.jit
def fp8_casts_kernel(x_ptr, e4m3_ptr, e5m2_ptr, n, BLOCK: tl.constexpr):
    """f32 -> fp8 (e4m3fn and e5m2), the CUDA target two at a time in hardware where the GPU has it."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(e4m3_ptr + offsets, x.to(tl.float8e4nv), mask=mask)
    tl.store(e5m2_ptr + offsets, x.to(tl.float8e5), mask=mask)


def test_fp8_casts_round_like_ml_dtypes(backend, dev, rng):
    """Bit for bit ml_dtypes: ties to even, subnormals, and past the largest finite NaN (e4m3) or inf (e5m2)
    where the GPU's conversion saturates; NaN keeps its sign; each pair's two bytes in order."""
    n = 2000
    scales = rng.choice([2.0**-12, 2.0**-7, 1.0, 100.0, 448.0, 4e4, 6e4], n)
    x = (rng.standard_normal(n) * scales).astype(np.float32)
    edges = [448.0, 463.9, 464.0, 480.0, 57344.0, 61439.0, 61440.0, np.inf, np.nan, -np.nan, 2.0**-9, 3 * 2.0**-10]
    edges += [2.0**-16, 3 * 2.0**-17, 2.0**-17, -0.0, 1e30, -1e30, 1.0625, 1.1875]
    edges += [float(np.nextafter(np.float32(464), np.float32(500)))]  # just past the tie that rounds to 448
    x[: 2 * len(edges)] = np.array(edges + [-e for e in edges], np.float32)
    e4m3, e5m2 = dev.empty(n, ml_dtypes.float8_e4m3fn), dev.empty(n, ml_dtypes.float8_e5m2)
    fp8_casts_kernel[(cdiv(n, 512),)](dev.put(x), e4m3, e5m2, n, BLOCK=512, target=backend)
    with np.errstate(invalid="ignore", over="ignore"):
        for got, fmt in ((e4m3, ml_dtypes.float8_e4m3fn), (e5m2, ml_dtypes.float8_e5m2)):
            np.testing.assert_array_equal(dev.get(got).view(np.uint8), x.astype(fmt).view(np.uint8))


def test_fnuz_fp8_casts_round_like_ml_dtypes(backend, dev, rng):
    """float8e4b8 / float8e5b16 (AMD's fp8: no infinity, no negative zero, 0x80 the NaN) bit for bit as ml_dtypes'
    fnuz types: overflow and infinity to the NaN, values that round to zero to +0, subnormals; widening back
    exact."""
    n = 2000
    x = (rng.standard_normal(n) * rng.choice([2.0**-12, 2.0**-7, 1.0, 60.0, 240.0, 4e4, 6e4], n)).astype(np.float32)
    edges = [240.0, 247.9, 248.0, 57344.0, 61439.0, 61440.0, np.inf, np.nan, 2.0**-10, 2.0**-11, 2.0**-17, 1e-9, 0.0]
    x[: 2 * len(edges)] = np.array(edges + [-e for e in edges], np.float32)
    e4, e5 = dev.empty(n, ml_dtypes.float8_e4m3fnuz), dev.empty(n, ml_dtypes.float8_e5m2fnuz)
    back = dev.empty(n, np.float32)
    float_casts_kernel[(cdiv(n, 512),)](dev.put(x), e4, e5, back, n, BLOCK=512, A=tl.float8e4b8, B=tl.float8e5b16,
                                        target=backend)  # fmt: skip
    with np.errstate(invalid="ignore", over="ignore"):
        want4, want5 = x.astype(ml_dtypes.float8_e4m3fnuz), x.astype(ml_dtypes.float8_e5m2fnuz)
        np.testing.assert_array_equal(dev.get(e4).view(np.uint8), want4.view(np.uint8))
        np.testing.assert_array_equal(dev.get(e5).view(np.uint8), want5.view(np.uint8))
        np.testing.assert_array_equal(dev.get(back), want4.astype(np.float32) + want5.astype(np.float32))
