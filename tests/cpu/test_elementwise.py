"""Elementwise ops on the CPU backend against the interpreter, on random inputs."""

import ml_dtypes
import numpy as np
import pytest

from tilelab.compiler.ir.ops import FmaOp, SelectOp, UnaryOp
from tilelab.compiler.ir.types import SCALARS, tensor

from .helpers import assert_same, io_kernel, poisoned, run_both

N = 200  # not a multiple of the block: the tail is masked
INTS = ["i8", "i16", "i32", "i64", "u8", "u32", "u64"]
FLOATS = ["f16", "bf16", "f32", "f64"]


def dtype(name):
    return SCALARS[name].np_dtype


def random(rng, name, n=N, low=None):
    dt = dtype(name)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min if low is None else low, info.max, n, dtype=dt, endpoint=True)
    return (rng.standard_normal(n) * 3).astype(dt)


def check(module, inputs, out_dtype, rtol=None):
    out = poisoned(N, out_dtype)
    ((got, want),) = run_both(module, ((N + 63) // 64,), [*inputs, out, N], [len(inputs)])
    assert_same(got, want, rtol)


@pytest.mark.parametrize("t", INTS)
@pytest.mark.parametrize("kind", ["add", "sub", "mul", "div", "rem", "and", "or", "xor", "min", "max", "umulhi"])
def test_int_binary(rng, t, kind):
    a, b = random(rng, t), random(rng, t)
    b[::7] = 0  # division by zero gives 0 and never traps
    if dtype(t).kind == "i":
        a[1], b[1] = np.iinfo(dtype(t)).min, -1  # INT_MIN / -1 wraps
    check(io_kernel([t, t], t, lambda k, x, y: k.bin(kind, x, y)), [a, b], dtype(t))


@pytest.mark.parametrize("t", ["i8", "i32", "u32", "i64"])
@pytest.mark.parametrize("kind", ["shl", "shr"])
def test_shifts(rng, t, kind):
    a = random(rng, t)
    bits = dtype(t).itemsize * 8
    b = rng.integers(0, bits, N).astype(dtype(t))
    check(io_kernel([t, t], t, lambda k, x, y: k.bin(kind, x, y)), [a, b], dtype(t))


@pytest.mark.parametrize("t", FLOATS)
@pytest.mark.parametrize("kind", ["add", "sub", "mul", "fdiv", "rem", "min", "max", "pow", "atan2"])
def test_float_binary(rng, t, kind):
    a, b = random(rng, t), random(rng, t)
    if kind == "pow":
        a = np.abs(a)
    a[3] = np.nan  # min/max return the non-NaN operand
    check(io_kernel([t, t], t, lambda k, x, y: k.bin(kind, x, y)), [a, b], dtype(t), rtol=2e-2 if t == "bf16" else None)


UNARY = ["neg", "abs", "exp", "exp2", "log", "log2", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan"]
UNARY += ["tanh", "sinh", "cosh", "asin", "acos", "atan", "erf", "floor", "ceil", "trunc", "round"]


@pytest.mark.parametrize("t", ["f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("kind", UNARY)
def test_float_unary(rng, t, kind):
    x = random(rng, t)
    if kind in ("log", "log2", "log1p", "sqrt", "rsqrt"):
        x = np.abs(x)
    if kind in ("asin", "acos"):
        x = (rng.random(N) * 2 - 1).astype(dtype(t))
    module = io_kernel([t], t, lambda k, v: k.op(UnaryOp(kind, v)))
    check(module, [x], dtype(t), rtol={"f16": 4e-3, "bf16": 2e-2, "f32": 4e-6, "f64": 1e-13}[t])


@pytest.mark.parametrize("kind", ["isnan", "isinf", "signbit"])
def test_float_predicates(rng, kind):
    x = random(rng, "f32")
    x[::5], x[1::7], x[2::9] = np.nan, np.inf, -np.inf
    module = io_kernel(["f32"], "i1", lambda k, v: k.op(UnaryOp(kind, v, tensor(v.type.shape, SCALARS["i1"]))))
    check(module, [x], np.bool_)


@pytest.mark.parametrize("t", ["i8", "i32", "u64"])
@pytest.mark.parametrize("kind", ["not", "neg", "abs", "popc", "clz"])
def test_int_unary(rng, t, kind):
    module = io_kernel([t], t, lambda k, v: k.op(UnaryOp(kind, v)))
    check(module, [random(rng, t)], dtype(t))


@pytest.mark.parametrize("t", ["i32", "u8", "f32", "bf16"])
@pytest.mark.parametrize("pred", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_compare_select_fma(rng, t, pred):
    a, b = random(rng, t), random(rng, t)
    b[::3] = a[::3]

    def body(k, x, y):
        return k.op(SelectOp(k.cmp(pred, x, y), x, y))

    check(io_kernel([t, t], t, body), [a, b], dtype(t))
    if t.startswith("f") or t == "bf16":
        c = random(rng, t)
        check(io_kernel([t, t, t], t, lambda k, x, y, z: k.op(FmaOp(x, y, z))), [a, b, c], dtype(t))


CASTS = [
    ("f32", "f16"),
    ("f32", "bf16"),
    ("f64", "f32"),
    ("f64", "bf16"),
    ("bf16", "f32"),
    ("f16", "f64"),
    ("f32", "i32"),
    ("f32", "u8"),
    ("f64", "i64"),
    ("i32", "f32"),
    ("u32", "f64"),
    ("i64", "bf16"),
    ("i8", "i64"),
    ("u8", "i32"),
    ("i64", "i16"),
    ("i32", "u64"),
    ("f32", "i1"),
    ("i32", "i1"),
    ("i1", "f32"),
]


NARROWING = [(s, d, "rtz") for s, d in CASTS if s in ("f32", "f64") and d in ("f16", "bf16", "f32")]


@pytest.mark.parametrize("src,dst,rounding", [(s, d, "rtne") for s, d in CASTS] + NARROWING)
def test_casts(rng, src, dst, rounding):
    from tilelab.compiler.ir.ops import CastOp

    if src == "i1":
        x = rng.random(N) < 0.5
    elif dtype(src).kind == "f" or src == "bf16":
        x = (rng.standard_normal(N) * 1e3).astype(dtype(src))
        x[:4] = [np.nan, np.inf, -np.inf, 1e30] if dtype(src).itemsize >= 4 else [np.nan, np.inf, -np.inf, 0.5]
    else:
        x = random(rng, src)
    module = io_kernel([src], dst, lambda k, v: k.op(CastOp(v, tensor(v.type.shape, SCALARS[dst]), rounding=rounding)))
    check(module, [x], dtype(dst), rtol=0)


def test_bf16_rounds_to_nearest_even(rng):
    """f32 -> bf16 must round exactly like ml_dtypes, ties to even."""
    from tilelab.compiler.ir.ops import CastOp

    bits = rng.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32)
    bits[:8] = [0x3F808000, 0x3F818000, 0x3F80FFFF, 0x7F7FFFFF, 0x7FC00001, 0x80000000, 0x00008000, 0x3F807FFF]
    x = bits.view(np.float32)
    module = io_kernel(["f32"], "bf16", lambda k, v: k.op(CastOp(v, tensor(v.type.shape, SCALARS["bf16"]))))
    out = poisoned(N, ml_dtypes.bfloat16)
    ((got, want),) = run_both(module, (4,), [x, out, N], [1])
    with np.errstate(invalid="ignore"):  # random bits include infinities and NaNs; the NaNs are left out
        reference = x.astype(ml_dtypes.bfloat16).view(np.uint16)
    np.testing.assert_array_equal(got.view(np.uint16)[~np.isnan(x)], reference[~np.isnan(x)])
    assert_same(got, want, rtol=0)


FP8_LARGEST = {"fp8e4nv": 448.0, "fp8e5": 57344.0, "fp8e4b8": 240.0, "fp8e5b16": 57344.0}


@pytest.mark.parametrize("fmt", sorted(FP8_LARGEST))
def test_fp8_decodes_every_code_and_encodes_like_ml_dtypes(rng, fmt):
    """All 256 codes widen exactly; random f32s (and the edges) round exactly like ml_dtypes."""
    from tilelab.compiler.ir.ops import CastOp

    codes = np.arange(256, dtype=np.uint8).view(dtype(fmt))
    widen = io_kernel([fmt], "f32", lambda k, v: k.op(CastOp(v, tensor(v.type.shape, SCALARS["f32"]))), block=256)
    out = poisoned(256, np.float32)
    ((got, want),) = run_both(widen, (1,), [codes, out, 256], [1])
    np.testing.assert_array_equal(got, codes.astype(np.float32))
    assert_same(got, want, rtol=0)
    big = FP8_LARGEST[fmt]
    x = (rng.standard_normal(N) * rng.choice([1e-4, 1e-2, 1.0, big / 4], N)).astype(np.float32)
    x[:12] = [np.nan, np.inf, -np.inf, big, big * 1.04, big * 1.2, -0.0, 2**-10, 2**-17, 3 * 2**-18, -1e-9, -big]
    narrow = io_kernel(["f32"], fmt, lambda k, v: k.op(CastOp(v, tensor(v.type.shape, SCALARS[fmt]))))
    out = poisoned(N, dtype(fmt))
    ((got, want),) = run_both(narrow, (4,), [x, out, N], [1])
    np.testing.assert_array_equal(got.view(np.uint8), x.astype(dtype(fmt)).view(np.uint8))
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("fmt", sorted(FP8_LARGEST))
def test_fp8_arithmetic_rounds_through_f32(rng, fmt):
    a = (rng.standard_normal(N) * 4).astype(dtype(fmt))
    b = (rng.standard_normal(N) * 4).astype(dtype(fmt))
    module = io_kernel([fmt, fmt], fmt, lambda k, x, y: k.bin("mul", k.bin("add", x, y), x))
    out = poisoned(N, dtype(fmt))
    ((got, want),) = run_both(module, (4,), [a, b, out, N], [2])
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
