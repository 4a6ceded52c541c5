"""Every BinaryOp / UnaryOp kind and CmpOp predicate, per dtype family, against numpy."""

import math
import operator

import ml_dtypes
import numpy as np
import pytest

from tests.support.ir_builders import KernelBuilder, io_kernel, poisoned
from tilelab.compiler.interpreter import KernelRuntimeError, run_kernel
from tilelab.compiler.ir.ops import FmaOp, SelectOp, UnaryOp
from tilelab.compiler.ir.types import i1, i32, tensor

N = 64
INT_TYPES = {
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "u8": np.uint8,
    "u32": np.uint32,
    "u64": np.uint64,
}
FLOAT_TYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64}


def run_io(module, inputs, out_dtype):
    out = poisoned(N, out_dtype)
    run_kernel(module, (1,), [*inputs, out, N])
    return out


def random_ints(rng, dtype, low=None):
    info = np.iinfo(dtype)
    return rng.integers(info.min if low is None else low, info.max, N, dtype=dtype, endpoint=True)


def _c_quotient(a, b):
    """C's quotient: Python's floor division, moved toward zero when the signs differ."""
    q = a // b
    return q + 1 if q < 0 and q * b != a else q


#: Python-int references, exact at every width; the result is wrapped afterwards.
INT_BINARY = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": _c_quotient,
    "rem": lambda a, b: a - b * _c_quotient(a, b),
    "and": operator.and_,
    "or": operator.or_,
    "xor": operator.xor,
    "shl": operator.lshift,
    "shr": operator.rshift,
    "min": min,
    "max": max,
}


def int_reference(kind, a, b, bits, signed):
    """The C / two's complement result of ``a kind b`` on Python ints, wrapped to ``bits``."""
    if kind == "umulhi":
        r = ((a % 2**bits) * (b % 2**bits)) >> bits
    else:
        r = INT_BINARY[kind](a, b) % 2**bits
    return r - 2**bits if signed and r >= 2 ** (bits - 1) else r


INT_KINDS = ["add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr", "min", "max", "umulhi"]


@pytest.mark.parametrize("tname", INT_TYPES)
@pytest.mark.parametrize("kind", INT_KINDS)
def test_int_binary(rng, tname, kind):
    dtype = np.dtype(INT_TYPES[tname])
    bits = dtype.itemsize * 8
    a = random_ints(rng, dtype)
    b = random_ints(rng, dtype)
    if kind in ("shl", "shr"):
        b = rng.integers(0, bits, N).astype(dtype)
    if kind in ("div", "rem"):
        b[b == 0] = 3
        a[:2], b[:2] = np.iinfo(dtype).min, 7  # negative dividends truncate toward zero
    module = io_kernel([tname, tname], tname, lambda k, x, y: k.bin(kind, x, y))
    out = run_io(module, [a, b], dtype)
    expect = [int_reference(kind, int(x), int(y), bits, dtype.kind == "i") for x, y in zip(a, b)]
    np.testing.assert_array_equal(out, np.array(expect, dtype=dtype))


FLOAT_KINDS = ["add", "sub", "mul", "fdiv", "rem", "min", "max", "pow", "atan2"]


@pytest.mark.parametrize("tname", FLOAT_TYPES)
@pytest.mark.parametrize("kind", FLOAT_KINDS)
def test_float_binary(rng, tname, kind):
    dtype = np.dtype(FLOAT_TYPES[tname])
    a = rng.uniform(-4, 4, N).astype(dtype)
    b = rng.uniform(0.5, 3, N).astype(dtype) * rng.choice([-1, 1], N).astype(dtype)
    if kind == "pow":
        a = np.abs(a)
    if kind in ("min", "max"):
        a[:3] = np.nan  # min / max give the non-NaN operand
    module = io_kernel([tname, tname], tname, lambda k, x, y: k.bin(kind, x, y))
    out = run_io(module, [a, b], dtype).astype(np.float64)
    x, y = a.astype(np.float64), b.astype(np.float64)
    ref = {
        "add": x + y,
        "sub": x - y,
        "mul": x * y,
        "fdiv": x / y,
        "rem": np.fmod(x, y),
        "min": np.fmin(x, y),
        "max": np.fmax(x, y),
        "pow": np.abs(x) ** y,
        "atan2": np.arctan2(x, y),
    }[kind]
    # one rounding of the exact result: bit-exact for + - * / rem min max
    exact = kind not in ("pow", "atan2")
    rounded = ref.astype(dtype).astype(np.float64)
    if exact:
        np.testing.assert_array_equal(out, rounded)
    else:
        np.testing.assert_allclose(out, rounded, rtol=4 * float(np.finfo(dtype).eps) if dtype != np.float64 else 1e-12)


#: Scalar references from Python's ``math`` (f64), independent of the interpreter's numpy ufuncs.
FLOAT_UNARY = {
    "neg": operator.neg,
    "abs": abs,
    "exp": math.exp,
    "exp2": lambda x: 2.0**x,
    "log": math.log,
    "log2": math.log2,
    "log1p": math.log1p,
    "expm1": math.expm1,
    "sqrt": math.sqrt,
    "sqrt_rn": math.sqrt,
    "rsqrt": lambda x: 1 / math.sqrt(x),
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "tanh": math.tanh,
    "sinh": math.sinh,
    "cosh": math.cosh,
    "asin": math.asin,
    "acos": math.acos,
    "atan": math.atan,
    "erf": math.erf,
    "floor": math.floor,
    "ceil": math.ceil,
    "trunc": math.trunc,
    "round": lambda x: math.copysign(math.floor(abs(x) + 0.5), x),
}


@pytest.mark.parametrize("tname", FLOAT_TYPES)
@pytest.mark.parametrize("kind", FLOAT_UNARY)
def test_float_unary(rng, tname, kind):
    dtype = np.dtype(FLOAT_TYPES[tname])
    low = 0.01 if kind in ("log", "log2", "sqrt", "sqrt_rn", "rsqrt") else -0.99
    a = rng.uniform(low, 0.99, N) * (4 if kind in ("floor", "ceil", "trunc", "round") else 1)
    if kind == "round":
        a[:4] = [0.5, -0.5, 2.5, -1.5]  # halves round away from zero
    a = a.astype(dtype)
    module = io_kernel([tname], tname, lambda k, x: k.op(UnaryOp(kind, x)))
    out = run_io(module, [a], dtype).astype(np.float64)
    ref = np.array([FLOAT_UNARY[kind](float(v)) for v in a]).astype(dtype).astype(np.float64)
    # numpy's f32 math is within a few ulp; narrower floats round the f32 result once
    tol = 1e-12 if dtype == np.float64 else 4 * float(np.finfo(dtype).eps)
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("kind", ["isnan", "isinf", "signbit"])
def test_float_predicates(rng, kind):
    a = rng.standard_normal(N).astype(np.float32)
    a[:4] = [np.nan, np.inf, -np.inf, -0.0]
    module = io_kernel(["f32"], "i1", lambda k, x: k.op(UnaryOp(kind, x, tensor((64,), i1))))
    out = run_io(module, [a], np.bool_)
    np.testing.assert_array_equal(out, getattr(np, kind)(a))


def popc(v, bits):
    return bin(v % 2**bits).count("1")


def clz(v, bits):
    return bits - (v % 2**bits).bit_length()


@pytest.mark.parametrize("tname", INT_TYPES)
@pytest.mark.parametrize("kind", ["neg", "not", "abs", "popc", "clz"])
def test_int_unary(rng, tname, kind):
    dtype = np.dtype(INT_TYPES[tname])
    bits = dtype.itemsize * 8
    a = random_ints(rng, dtype)
    a[0] = 0
    out_t, out_dtype = (i32, np.int32) if kind in ("popc", "clz") else (None, dtype)
    otype = "i32" if out_t else tname
    module = io_kernel([tname], otype, lambda k, x: k.op(UnaryOp(kind, x, tensor((64,), out_t) if out_t else None)))
    out = run_io(module, [a], out_dtype)
    fn = {
        "neg": lambda v: -v,
        "not": lambda v: ~v,
        "abs": abs,
        "popc": lambda v: popc(v, bits),
        "clz": lambda v: clz(v, bits),
    }[kind]
    wrap = (lambda r: r) if out_t else (lambda r: np.array(r % 2**bits, dtype=np.uint64).astype(dtype))
    expect = np.array([wrap(fn(int(v))) for v in a], dtype=out_dtype)
    np.testing.assert_array_equal(out, expect)


@pytest.mark.parametrize("tname", ["i8", "i32", "u32", "u64", "f16", "bf16", "f32"])
@pytest.mark.parametrize("pred", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_compare(rng, tname, pred):
    dtype = np.dtype({**INT_TYPES, **FLOAT_TYPES}[tname])
    if dtype.kind in "iu":
        a, b = random_ints(rng, dtype), random_ints(rng, dtype)
    else:
        a, b = rng.integers(-3, 3, N).astype(dtype), rng.integers(-3, 3, N).astype(dtype)
        a[:2] = np.nan  # unordered: only ne holds
    b[-8:] = a[-8:]
    module = io_kernel([tname, tname], "i1", lambda k, x, y: k.cmp(pred, x, y))
    out = run_io(module, [a, b], np.bool_)
    xs = a.tolist() if dtype.kind in "iu" else a.astype(np.float64).tolist()
    ys = b.tolist() if dtype.kind in "iu" else b.astype(np.float64).tolist()
    compare = getattr(operator, pred)  # Python ints and IEEE floats: NaN is unordered
    np.testing.assert_array_equal(out, [compare(x, y) for x, y in zip(xs, ys)])


def test_select_and_fma(rng):
    a, b, c = (rng.standard_normal(N).astype(np.float32) for _ in range(3))

    def body(k, x, y, z):
        fused = k.op(FmaOp(x, y, z))
        return k.op(SelectOp(k.cmp("gt", x, y), fused, z))

    out = run_io(io_kernel(["f32", "f32", "f32"], "f32", body), [a, b, c], np.float32)
    fused = (a.astype(np.float64) * b + c).astype(np.float32)
    np.testing.assert_array_equal(out, np.where(a > b, fused, c))


def test_integer_division_by_zero_does_not_crash(rng):
    module = io_kernel(["i32", "i32"], "i32", lambda k, x, y: k.bin("div", x, y))
    a = rng.integers(-100, 100, N, dtype=np.int32)
    b = rng.integers(1, 9, N, dtype=np.int32)
    b[5] = 0
    out = run_io(module, [a, b], np.int32)
    keep = b != 0
    np.testing.assert_array_equal(out[keep], np.trunc(a[keep] / b[keep]).astype(np.int32))


def test_sanitizer_reports_division_by_zero(rng):
    k = KernelBuilder("div0", {"x": "*i32", "n": "i32"})
    offs = k.arange(8)
    x = k.load(k.addptr(k.arg("x"), offs))
    k.line(9)
    k.bin("rem", x, k.splat(k.arg("n"), (8,)))
    module = k.finish()
    with pytest.raises(
        KernelRuntimeError, match=r"kern.py:9: integer division by zero in program \(0, 0, 0\)\n    line 9"
    ):
        run_kernel(module, (1,), [rng.integers(1, 5, 8, dtype=np.int32), 0], sanitize=True)


def test_wrapping_and_nan_make_no_warnings(rng):
    """Overflowing ints, scalar ops and 0/0 floats run silently, as on the device."""
    import warnings

    k = KernelBuilder("quiet", {"x": "*i32", "f": "*f32", "big": "i32"})
    offs = k.arange(8)
    x = k.load(k.addptr(k.arg("x"), offs))
    k.store(k.addptr(k.arg("x"), offs), k.bin("mul", x, k.splat(k.arg("big"), (8,))))
    k.bin("add", k.arg("big"), k.arg("big"))  # scalar overflow
    f = k.load(k.addptr(k.arg("f"), offs))
    k.store(k.addptr(k.arg("f"), offs), k.bin("fdiv", f, f))
    x = rng.integers(2**20, 2**30, 8, dtype=np.int32)
    expect = (x.astype(np.int64) * (2**31 - 1)).astype(np.int32)  # keeps the low 32 bits
    f = np.zeros(8, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_kernel(k.finish(), (1,), [x, f, 2**31 - 1])
    np.testing.assert_array_equal(x, expect)
    assert np.isnan(f).all()
