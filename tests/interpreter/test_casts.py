"""CastOp and BitcastOp: truncation, extension by source signedness, rounding."""

import ml_dtypes
import numpy as np
import pytest

from tests.support.ir_builders import io_kernel, poisoned
from tilelab.compiler.interpreter import run_kernel
from tilelab.compiler.ir.ops import BitcastOp, CastOp
from tilelab.compiler.ir.types import parse_type, tensor

N = 64


def cast_kernel(src: str, dst: str, rounding="rtne", op=CastOp):
    def body(k, x):
        t = tensor((N,), parse_type(dst))
        return k.op(op(x, t, rounding) if op is CastOp else op(x, t))

    return io_kernel([src], dst, body)


def run_cast(src, dst, x, out_dtype, **kw):
    out = poisoned(N, out_dtype)
    run_kernel(cast_kernel(src, dst, **kw), (1,), [x, out, N])
    return out


def test_float_to_int_truncates_toward_zero_and_saturates(rng):
    x = rng.uniform(-1000, 1000, N).astype(np.float32)
    x[:6] = [-2.7, 2.7, -0.5, np.nan, 1e20, -1e20]
    out = run_cast("f32", "i32", x, np.int32)
    expect = np.trunc(x[6:]).astype(np.int32)
    np.testing.assert_array_equal(out[6:], expect)
    np.testing.assert_array_equal(out[:6], [-2, 2, 0, 0, 2**31 - 1, -(2**31)])


@pytest.mark.parametrize(
    "src,dst,values,expect",
    [
        ("i8", "i32", [-1, -128, 127], [-1, -128, 127]),  # sign-extends
        ("u8", "i32", [255, 128, 1], [255, 128, 1]),  # zero-extends
        ("i8", "u32", [-1, -2, 5], [2**32 - 1, 2**32 - 2, 5]),  # the source's sign decides
        ("i32", "i8", [257, -129, 127], [1, 127, 127]),  # narrowing keeps the low bits
        ("i32", "i1", [0, 2, -1], [False, True, True]),  # to bool: != 0
        ("i1", "i32", [True, False, True], [1, 0, 1]),
    ],
)
def test_integer_casts(rng, src, dst, values, expect):
    sdt, ddt = parse_type(src).np_dtype, parse_type(dst).np_dtype
    info = np.iinfo(sdt) if sdt.kind != "b" else None
    x = rng.integers(info.min, info.max, N, endpoint=True).astype(sdt) if info else rng.random(N) < 0.5
    x[: len(values)] = np.array(values).astype(sdt)
    out = run_cast(src, dst, x, ddt)
    np.testing.assert_array_equal(out[: len(values)], np.array(expect).astype(ddt))
    rest = [int(v) % 2 ** (ddt.itemsize * 8) for v in x[len(values) :]] if ddt.kind != "b" else None
    if rest is not None:
        wrapped = np.array(rest, dtype=np.uint64).astype(ddt)
        np.testing.assert_array_equal(out[len(values) :], wrapped)


def bf16_rne_reference(x: np.ndarray) -> np.ndarray:
    """Round f32 to bf16 by hand: add 0x7FFF plus the lowest kept bit, drop 16 bits."""
    bits = x.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return rounded.view(ml_dtypes.bfloat16)


def test_f32_to_bf16_rounds_to_nearest_even(rng):
    x = rng.standard_normal(N).astype(np.float32)
    x[:2] = np.array([0x3F808000, 0x3F818000], dtype=np.uint32).view(np.float32)  # ties: to even
    out = run_cast("f32", "bf16", x, ml_dtypes.bfloat16)
    np.testing.assert_array_equal(out.view(np.uint16), bf16_rne_reference(x).view(np.uint16))
    assert out[0] == 1.0 and out[1] == np.float32(1.015625)


def test_f32_to_f16_rounding_modes(rng):
    x = rng.standard_normal(N).astype(np.float32)
    x[:4] = [1 + 2**-11, 1 + 3 * 2**-11, -(1 + 3 * 2**-11), 65519.0]
    rne = run_cast("f32", "f16", x, np.float16)
    assert list(rne[:3]) == [1.0, 1 + 2**-9, -(1 + 2**-9)]  # ties go to the even mantissa
    rtz = run_cast("f32", "f16", x, np.float16, rounding="rtz")
    assert list(rtz[:4]) == [1.0, 1 + 2**-10, -(1 + 2**-10), 65504.0]
    assert (np.abs(rtz.astype(np.float32)) <= np.abs(x)).all()
    with np.errstate(over="ignore"):  # past 65504 comes inf
        away = np.nextafter(rtz, np.copysign(np.float16(np.inf), rtz))  # the next f16 away from zero
    assert (np.abs(away.astype(np.float32)) > np.abs(x)).all()  # rtz is the largest magnitude <= |x|


@pytest.mark.parametrize("dst", ["f16", "bf16", "fp8e4nv", "fp8e5", "f64"])
def test_float_round_trip_widens_exactly(rng, dst):
    ddt = parse_type(dst).np_dtype
    x = rng.uniform(-8, 8, N).astype(ddt)  # representable in dst
    back = poisoned(N, np.float32)
    run_kernel(cast_kernel(dst, "f32"), (1,), [x, back, N])
    np.testing.assert_array_equal(back, x.astype(np.float64).astype(np.float32))


def test_int_to_float_and_bitcast(rng):
    x = rng.integers(-(2**20), 2**20, N, dtype=np.int32)
    np.testing.assert_array_equal(run_cast("i32", "f32", x, np.float32), x.astype(np.float32))
    f = rng.standard_normal(N).astype(np.float32)
    out = run_cast("f32", "i32", f, np.int32, op=BitcastOp)
    np.testing.assert_array_equal(out, f.view(np.int32))
