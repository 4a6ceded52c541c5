"""``libdevice`` as Triton kernels call it, against numpy on every backend: the math functions that are ops of
their own (``rint``, ``log10``, ``cbrt``, ``erfc``, ``asinh``, ``acosh``, ``atanh``, ``copysign``, ``hypot``) and
the ones spelled with other ops (roundings to integers, bit views, ``mulhi``, ``brev``, ``ffs``...)."""

import math

import numpy as np
import pytest

import tilelab
import tilelab.language as tl
from tilelab.language.extra import libdevice

N = 256

#: name -> (numpy reference, input domain as (low, high); None: the whole line, with halves)
FLOAT_UNARY = {
    "rint": (np.rint, None),
    "round": (lambda x: np.trunc(x + np.copysign(0.5, x)), None),
    "log10": (np.log10, (1e-30, 1e30)),
    "cbrt": (np.cbrt, (-1e30, 1e30)),
    "erfc": (np.vectorize(math.erfc, otypes=[np.float64]), (-5.0, 9.0)),
    "asinh": (np.arcsinh, (-1e10, 1e10)),
    "acosh": (np.arccosh, (1.0, 1e10)),
    "atanh": (np.arctanh, (-0.999, 0.999)),
    "exp10": (lambda x: 10.0**x, (-30.0, 30.0)),
    "rcbrt": (lambda x: 1 / np.cbrt(x), (1e-30, 1e30)),
    "normcdf": (lambda x: np.vectorize(math.erfc)(-x / math.sqrt(2)) / 2, (-8.0, 8.0)),
    "saturatef": (lambda x: np.clip(x, 0.0, 1.0), (-2.0, 3.0)),
}


@tilelab.jit
def float_unary_kernel(x, out, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(out + 0 * N + i, libdevice.rint(tl.load(x + 0 * N + i)))
    tl.store(out + 1 * N + i, libdevice.round(tl.load(x + 1 * N + i)))
    tl.store(out + 2 * N + i, libdevice.log10(tl.load(x + 2 * N + i)))
    tl.store(out + 3 * N + i, libdevice.cbrt(tl.load(x + 3 * N + i)))
    tl.store(out + 4 * N + i, libdevice.erfc(tl.load(x + 4 * N + i)))
    tl.store(out + 5 * N + i, libdevice.asinh(tl.load(x + 5 * N + i)))
    tl.store(out + 6 * N + i, libdevice.acosh(tl.load(x + 6 * N + i)))
    tl.store(out + 7 * N + i, libdevice.atanh(tl.load(x + 7 * N + i)))
    tl.store(out + 8 * N + i, libdevice.exp10(tl.load(x + 8 * N + i)))
    tl.store(out + 9 * N + i, libdevice.rcbrt(tl.load(x + 9 * N + i)))
    tl.store(out + 10 * N + i, libdevice.normcdf(tl.load(x + 10 * N + i)))
    tl.store(out + 11 * N + i, libdevice.saturatef(tl.load(x + 11 * N + i)))


def _draw(rng, domain, dtype):
    if domain is None:  # halves and values between integers, of both signs
        return np.concatenate([rng.integers(-50, 50, N // 2) + 0.5, rng.uniform(-1e6, 1e6, N // 2)]).astype(dtype)
    lo, hi = domain
    if lo > 0 and hi / lo > 1e3:  # magnitudes spread over the exponents
        return np.exp(rng.uniform(np.log(lo), np.log(hi), N)).astype(dtype)
    if lo < 0 < hi and hi > 1e3:  # the same, either sign
        return (np.exp(rng.uniform(-69.0, np.log(hi), N)) * rng.choice([-1.0, 1.0], N)).astype(dtype)
    return rng.uniform(lo, hi, N).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_functions(backend, dev, rng, dtype):
    xs = np.stack([_draw(rng, domain, dtype) for _, domain in FLOAT_UNARY.values()])
    xs[11, :4] = [np.nan, np.inf, -np.inf, 0.5]  # saturatef: NaN gives 0
    out = dev.empty(xs.shape, dtype)
    float_unary_kernel[(1,)](dev.put(xs), out, N=N, target=backend)
    got = dev.get(out).astype(np.float64)
    rtol = 1e-5 if dtype == np.float32 else 1e-13
    for k, (name, (ref, _)) in enumerate(FLOAT_UNARY.items()):
        with np.errstate(invalid="ignore"):
            want = ref(xs[k].astype(np.float64))
        if name in ("rint", "round", "saturatef"):  # exact
            np.testing.assert_array_equal(got[k], np.nan_to_num(want, nan=0.0), err_msg=name)
        else:
            np.testing.assert_allclose(got[k], want, rtol=rtol, atol=1e-37, err_msg=name)


@tilelab.jit
def float_binary_kernel(x, y, out, N: tl.constexpr):
    i = tl.arange(0, N)
    a, b = tl.load(x + i), tl.load(y + i)
    tl.store(out + 0 * N + i, libdevice.copysign(a, b))
    tl.store(out + 1 * N + i, libdevice.hypot(a, b))
    tl.store(out + 2 * N + i, libdevice.fmod(a, b))
    tl.store(out + 3 * N + i, libdevice.fmax(a, b))
    tl.store(out + 4 * N + i, libdevice.fmin(a, b))
    tl.store(out + 5 * N + i, libdevice.fdim(a, b))
    tl.store(out + 6 * N + i, libdevice.rhypot(a, b))
    tl.store(out + 7 * N + i, libdevice.norm3d(a, b, a))
    tl.store(out + 8 * N + i, libdevice.norm4d(a, b, b, a))
    tl.store(out + 9 * N + i, libdevice.fast_dividef(a, b))


def test_float_binary_functions(backend, dev, rng):
    x = (rng.standard_normal(N) * 10.0 ** rng.integers(-3, 4, N)).astype(np.float32)
    y = (rng.standard_normal(N) * 10.0 ** rng.integers(-3, 4, N)).astype(np.float32)
    x[:3], y[:3] = [np.nan, 1.0, -np.inf], [2.0, np.nan, 5.0]
    out = dev.empty((10, N), np.float32)
    float_binary_kernel[(1,)](dev.put(x), dev.put(y), out, N=N, target=backend)
    got = dev.get(out)
    a, b = x.astype(np.float64), y.astype(np.float64)
    with np.errstate(invalid="ignore"):
        fdim = np.where(np.isnan(a) | np.isnan(b), np.nan, np.maximum(a - b, 0.0))
        exact = {"copysign": np.copysign(x, y), "fmod": np.fmod(x, y), "fmax": np.fmax(x, y), "fmin": np.fmin(x, y)}
        close = {"hypot": np.hypot(a, b), "fdim": fdim, "rhypot": 1 / np.hypot(a, b), "div": a / b}
        close.update(norm3d=np.sqrt(2 * a * a + b * b), norm4d=np.sqrt(2 * a * a + 2 * b * b))
    for k, name in enumerate(["copysign", "hypot", "fmod", "fmax", "fmin", "fdim", "rhypot", "norm3d", "norm4d"]):
        if name in exact:
            np.testing.assert_array_equal(got[k], exact[name], err_msg=name)
        else:
            np.testing.assert_allclose(got[k], close[name], rtol=2e-6, err_msg=name)
    np.testing.assert_allclose(got[9], close["div"], rtol=2e-6)


@tilelab.jit
def conversions_kernel(x, d, ints, outs, N: tl.constexpr):
    i = tl.arange(0, N)
    v, w = tl.load(x + i), tl.load(d + i)
    tl.store(ints + 0 * N + i, libdevice.float2int_rn(v).to(tl.int64))
    tl.store(ints + 1 * N + i, libdevice.float2int_rz(v).to(tl.int64))
    tl.store(ints + 2 * N + i, libdevice.float2int_rd(v).to(tl.int64))
    tl.store(ints + 3 * N + i, libdevice.float2int_ru(v).to(tl.int64))
    tl.store(ints + 4 * N + i, libdevice.llrint(w))
    tl.store(ints + 5 * N + i, libdevice.llround(w))
    tl.store(ints + 6 * N + i, libdevice.double2ll_rd(w))
    tl.store(ints + 7 * N + i, libdevice.float_as_int(v).to(tl.int64))
    tl.store(ints + 8 * N + i, libdevice.double_as_longlong(w))
    tl.store(ints + 9 * N + i, libdevice.double2hiint(w).to(tl.int64))
    tl.store(ints + 10 * N + i, libdevice.double2loint(w).to(tl.int64))
    tl.store(ints + 11 * N + i, libdevice.finitef(v).to(tl.int64))
    tl.store(outs + 0 * N + i, libdevice.int_as_float(libdevice.float_as_int(w.to(tl.float32))).to(tl.float64))
    tl.store(outs + 1 * N + i, libdevice.hiloint2double(libdevice.double2hiint(w), libdevice.double2loint(w)))
    tl.store(outs + 2 * N + i, libdevice.longlong_as_double(libdevice.double_as_longlong(w) ^ -(1 << 63)))


def test_conversions_and_bit_views(backend, dev, rng):
    v = np.concatenate([rng.integers(-40, 40, N // 2) + 0.5, rng.uniform(-1e6, 1e6, N // 2)]).astype(np.float32)
    w = np.concatenate([rng.integers(-40, 40, N // 2) + 0.5, rng.uniform(-1e12, 1e12, N // 2)])
    v[:3] = [np.nan, np.inf, -2.5]
    ints, outs = dev.empty((12, N), np.int64), dev.empty((3, N), np.float64)
    conversions_kernel[(1,)](dev.put(v), dev.put(w), ints, outs, N=N, target=backend)
    got, back = dev.get(ints), dev.get(outs)
    ok = np.isfinite(v)
    for k, fn in enumerate([np.rint, np.trunc, np.floor, np.ceil]):
        np.testing.assert_array_equal(got[k][ok], fn(v[ok]).astype(np.int64), err_msg=str(k))
    np.testing.assert_array_equal(got[4], np.rint(w).astype(np.int64))
    np.testing.assert_array_equal(got[5], np.trunc(w + np.copysign(0.5, w)).astype(np.int64))
    np.testing.assert_array_equal(got[6], np.floor(w).astype(np.int64))
    np.testing.assert_array_equal(got[7], v.view(np.int32))
    np.testing.assert_array_equal(got[8], w.view(np.int64))
    np.testing.assert_array_equal(got[9], (w.view(np.int64) >> 32).astype(np.int32))
    np.testing.assert_array_equal(got[10], w.view(np.int64).astype(np.int32))
    np.testing.assert_array_equal(got[11], np.isfinite(v).astype(np.int64))
    np.testing.assert_array_equal(back[0], w.astype(np.float32).astype(np.float64))
    np.testing.assert_array_equal(back[1], w)
    np.testing.assert_array_equal(back[2], -w)


@tilelab.jit
def integer_kernel(x, y, out, u, N: tl.constexpr):
    i = tl.arange(0, N)
    a, b = tl.load(x + i), tl.load(y + i)
    tl.store(out + 0 * N + i, libdevice.mulhi(a, b))
    tl.store(out + 1 * N + i, libdevice.brev(a))
    tl.store(out + 2 * N + i, libdevice.ffs(a))
    tl.store(out + 3 * N + i, libdevice.hadd(a, b))
    tl.store(out + 4 * N + i, libdevice.rhadd(a, b))
    tl.store(out + 5 * N + i, libdevice.sad(a, b, 7))
    tl.store(out + 6 * N + i, libdevice.mul24(a, b))
    tl.store(u + i, libdevice.mulhi(a.to(tl.uint32, bitcast=True), b.to(tl.uint32, bitcast=True)))


def test_integer_functions(backend, dev, rng):
    a = rng.integers(-(2**31), 2**31, N, dtype=np.int64).astype(np.int32)
    b = rng.integers(-(2**31), 2**31, N, dtype=np.int64).astype(np.int32)
    a[:3] = [0, -1, -(2**31)]
    out, u = dev.empty((7, N), np.int32), dev.empty(N, np.uint32)
    integer_kernel[(1,)](dev.put(a), dev.put(b), out, u, N=N, target=backend)
    got = dev.get(out)
    wa, wb = a.astype(np.int64), b.astype(np.int64)
    np.testing.assert_array_equal(got[0], (wa * wb) >> 32)
    bits = np.unpackbits(a.view(np.uint32).astype(">u4").view(np.uint8)).reshape(N, 32)[:, ::-1]
    np.testing.assert_array_equal(got[1], np.packbits(bits).view(">u4").astype(np.uint32).view(np.int32))
    low = (a.view(np.uint32) & -a.view(np.uint32)).astype(np.float64)
    np.testing.assert_array_equal(got[2], np.where(a == 0, 0, np.log2(np.maximum(low, 1)).astype(np.int32) + 1))
    np.testing.assert_array_equal(got[3], (wa + wb) >> 1)
    np.testing.assert_array_equal(got[4], (wa + wb + 1) >> 1)
    np.testing.assert_array_equal(got[5], (np.abs(wa - wb) + 7).astype(np.int32))
    s24 = ((wa << 40) >> 40) * ((wb << 40) >> 40)
    np.testing.assert_array_equal(got[6], s24.astype(np.int32))
    ua, ub = a.view(np.uint32).astype(np.uint64), b.view(np.uint32).astype(np.uint64)
    np.testing.assert_array_equal(dev.get(u), ((ua * ub) >> np.uint64(32)).astype(np.uint32))


@tilelab.jit
def inverse_erf_kernel(x, y, out, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(out + 0 * N + i, libdevice.erfinv(tl.load(x + i)))
    tl.store(out + 1 * N + i, libdevice.erfcinv(tl.load(y + i)))
    tl.store(out + 2 * N + i, libdevice.normcdfinv(tl.load(y + i) * 0.5))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_inverse_error_functions(backend, dev, rng, dtype):
    import mpmath

    x = np.concatenate([rng.uniform(-1, 1, N - 6), [0.0, 1.0, -1.0, 1e-30, 0.999999, -0.5]]).astype(dtype)
    tiny = np.exp(rng.uniform(np.log(1e-30), 0.0, N // 2))  # erfcinv's tail, where erfinv(1 - y) would lose it
    y = np.concatenate([tiny, 2.0 - tiny[: N // 4], rng.uniform(0.0, 2.0, N // 4)]).astype(dtype)
    y[:2] = [0.0, 1.0]
    out = dev.empty((3, N), dtype)
    inverse_erf_kernel[(1,)](dev.put(x), dev.put(y), out, N=N, target=backend)
    got = dev.get(out).astype(np.float64)

    def exact(fn, v):
        with mpmath.workdps(80):  # 1 - u keeps 50 digits of a u as small as 1e-30
            return np.array([float(fn(mpmath.mpf(float(u)))) for u in v])

    erfinv = exact(lambda u: mpmath.erfinv(u) if abs(u) < 1 else mpmath.inf * mpmath.sign(u), x)
    erfcinv = exact(lambda u: mpmath.erfinv(1 - u) if 0 < u < 2 else mpmath.inf * (1 - u), y)
    ndtri = exact(lambda u: -mpmath.sqrt(2) * (mpmath.erfinv(1 - 2 * u) if 0 < u < 1 else mpmath.inf * (1 - 2 * u)),
                  (y * dtype(0.5)).astype(np.float64))  # fmt: skip
    # Newton steps end where the target's erf / erfc say the residual is zero: within about 1 ulp on interpret and
    # cpu; libdevice's erf and erfc (2.5 and 4.5 ulp, docs/semantics.md) move that root by up to their error over
    # the slope, at most about 10 ulp of t near a = 0.5, where log(erfc(t)) changes slowest relative to t
    ulps = 16.0 if backend == "cuda" else 4.0
    for k, want in enumerate((erfinv, erfcinv, ndtri)):
        fin = np.isfinite(want)
        np.testing.assert_array_equal(got[k][~fin], want[~fin])  # the ends: infinities of the right sign
        spacing = np.spacing(np.abs(want[fin]).astype(dtype)).astype(np.float64)
        assert (np.abs(got[k][fin] - want[fin]) <= ulps * spacing + 1e-300).all(), k


@tilelab.jit
def brev_of_a_short_kernel(x, out):
    tl.store(out, libdevice.brev(tl.load(x)))


def test_bit_reversal_names_the_widths_it_takes():
    x = np.zeros(1, np.int16)
    with pytest.raises(tilelab.CompilationError, match="brev expects a 32- or 64-bit integer, got i16"):
        brev_of_a_short_kernel[(1,)](x, x.copy(), target="interpret")


@tilelab.jit
def exponent_kernel(x, n, y, out, ints, N: tl.constexpr):
    i = tl.arange(0, N)
    v, e, w = tl.load(x + i), tl.load(n + i), tl.load(y + i)
    tl.store(out + 0 * N + i, libdevice.ldexp(v, e))
    tl.store(out + 1 * N + i, libdevice.logb(v))
    tl.store(out + 2 * N + i, libdevice.nextafter(v, w))
    tl.store(ints + 0 * N + i, libdevice.ilogb(v))
    tl.store(ints + 1 * N + i, libdevice.byte_perm(e, libdevice.ilogb(v), 0x7531))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exponent_functions_are_exact(backend, dev, rng, dtype):
    info = np.finfo(dtype)
    lo, hi, reach = (-140, 120, 300) if dtype == np.float32 else (-1070, 1000, 2200)
    x = (rng.standard_normal(N) * np.exp2(rng.uniform(lo, hi, N))).astype(dtype)  # subnormals to huge
    x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, info.smallest_subnormal, -3 * info.smallest_subnormal, 1.0]
    n = rng.integers(-reach, reach, N).astype(np.int32)  # results that overflow, underflow, turn subnormal
    y = np.where(rng.random(N) < 0.5, x, rng.standard_normal(N)).astype(dtype)
    y[8:12] = [np.inf, -np.inf, 0.0, np.nan]
    out, ints = dev.empty((3, N), dtype), dev.empty((2, N), np.int32)
    exponent_kernel[(1,)](dev.put(x), dev.put(n), dev.put(y), out, ints, N=N, target=backend)
    got, got_ints = dev.get(out), dev.get(ints)
    with np.errstate(all="ignore"):
        exponent = np.frexp(x)[1] - 1
        logb = np.where(x == 0, -np.inf, np.where(np.isfinite(x), exponent, np.abs(x))).astype(dtype)
        ilogb = np.where((x == 0) | np.isnan(x), -(2**31), np.where(np.isinf(x), 2**31 - 1, exponent)).astype(np.int32)
        for k, want in enumerate((np.ldexp(x, n), logb, np.nextafter(x, y))):
            np.testing.assert_array_equal(got[k], want)  # NaN where NaN
            assert (np.signbit(got[k]) == np.signbit(want))[~np.isnan(want)].all(), k  # -0.0 kept
    np.testing.assert_array_equal(got_ints[0], ilogb)
    pool = np.stack([n, ilogb]).T.copy().view(np.uint8).reshape(N, 8)  # y:x, x's bytes first
    picked = pool[:, [1, 3, 5, 7]].copy().view("<i4").ravel()
    np.testing.assert_array_equal(got_ints[1], picked)
