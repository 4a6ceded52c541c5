"""Shape ops, reductions and scans with combine regions, and dot."""

import ml_dtypes
import numpy as np
import pytest

from tests.support.ir_builders import KernelBuilder, poisoned
from tilelab.compiler.interpreter import run_kernel
from tilelab.compiler.ir import ops as O
from tilelab.compiler.ir.types import f32, i32, parse_type, tensor


def tile_offsets(k, rows, cols, row_stride=None):
    """``r * cols + c`` as a [rows, cols] i32 tile."""
    r = k.op(O.ExpandDimsOp(k.arange(rows), tensor((rows, 1), i32), axis=1))
    c = k.op(O.ExpandDimsOp(k.arange(cols), tensor((1, cols), i32), axis=0))
    r = k.bin("mul", r, k.const(row_stride or cols, "i32", (rows, 1)))
    shape = (rows, cols)
    return k.bin("add", k.op(O.BroadcastOp(r, tensor(shape, i32))), k.op(O.BroadcastOp(c, tensor(shape, i32))))


def load_tile(k, name, rows, cols):
    return k.load(k.addptr(k.arg(name), tile_offsets(k, rows, cols)))


def store_tile(k, name, value):
    shape = value.type.shape
    offs = tile_offsets(k, *shape) if len(shape) == 2 else k.arange(shape[0])
    k.store(k.addptr(k.arg(name), offs), value)


def test_shape_ops(rng):
    k = KernelBuilder("shapes", {"x": "*f32", "t": "*f32", "j": "*f32", "c": "*f32", "f": "*f32", "s": "*f32"})
    x = load_tile(k, "x", 4, 8)
    store_tile(k, "t", k.op(O.TransOp(x, tensor((8, 4), f32), order=(1, 0))))
    lo, hi = k.op(O.SplitOp(k.op(O.ReshapeOp(x, tensor((4, 4, 2), f32))), tensor((4, 4), f32)))
    joined = k.op(O.JoinOp(hi, lo, tensor((4, 4, 2), f32)))
    store_tile(k, "j", k.op(O.ReshapeOp(joined, tensor((4, 8), f32))))
    store_tile(k, "c", k.op(O.CatOp(x, x, tensor((8, 8), f32))))
    store_tile(k, "f", k.op(O.FlipOp(x, tensor((4, 8), f32), dim=1)))
    store_tile(k, "s", k.op(O.SortOp(x, tensor((4, 8), f32), dim=1, descending=True)))
    module = k.finish()
    a = rng.standard_normal((4, 8)).astype(np.float32)
    outs = [poisoned(s, np.float32) for s in [(8, 4), (4, 8), (8, 8), (4, 8), (4, 8)]]
    run_kernel(module, (1,), [a, *outs])
    t, j, c, f, s = outs
    np.testing.assert_array_equal(t, a.T)
    np.testing.assert_array_equal(j, a.reshape(4, 4, 2)[..., ::-1].reshape(4, 8))
    np.testing.assert_array_equal(c, np.concatenate([a, a]))
    np.testing.assert_array_equal(f, a[:, ::-1])
    np.testing.assert_array_equal(s, -np.sort(-a, axis=1))


def reduce_kernel(dtype: str, kind: str, axis: int, rows=8, cols=16):
    k = KernelBuilder("red", {"x": f"*{dtype}", "out": f"*{dtype}"})
    x = load_tile(k, "x", rows, cols)
    elem = parse_type(dtype)
    shape = (cols,) if axis == 0 else (rows,)
    red = k.op(O.ReduceOp([x], axis, [tensor(shape, elem)]))
    k.combine(red, lambda a, b: [k.bin(kind, a, b)])
    store_tile(k, "out", red)
    return k.finish()


@pytest.mark.parametrize("dtype", ["f32", "i32", "f16"])
@pytest.mark.parametrize("kind", ["add", "max", "min"])
@pytest.mark.parametrize("axis", [0, 1])
def test_reduce(rng, dtype, kind, axis):
    ndt = parse_type(dtype).np_dtype
    a = (rng.standard_normal((8, 16)) * 10).astype(ndt)
    out = poisoned(16 if axis == 0 else 8, ndt)
    run_kernel(reduce_kernel(dtype, kind, axis), (1,), [a, out])
    ref = {"add": np.sum, "max": np.max, "min": np.min}[kind](a.astype(np.float64), axis=axis)
    # a sum may cancel: its error is relative to the magnitudes added, not to the result
    eps = np.finfo(ndt).eps if ndt.kind == "f" else 0
    atol = 4 * eps * np.abs(a.astype(np.float64)).sum(axis=axis)
    np.testing.assert_array_less(np.abs(out.astype(np.float64) - ref), atol + 1e-12)


def argmax_combine(k):
    """Combine (value, index) pairs: the larger value, the smaller index on ties."""

    def combine(v1, i1, v2, i2):
        gt = k.cmp("gt", v1, v2)
        tie = k.bin("and", k.cmp("eq", v1, v2), k.cmp("lt", i1, i2))
        take1 = k.bin("or", gt, tie)
        return [k.op(O.SelectOp(take1, v1, v2)), k.op(O.SelectOp(take1, i1, i2))]

    return combine


def test_argmax_two_operand_reduce(rng):
    k = KernelBuilder("argmax", {"x": "*i32", "vals": "*i32", "idx": "*i32"})
    x = load_tile(k, "x", 4, 32)
    cols = k.op(O.BroadcastOp(k.op(O.ExpandDimsOp(k.arange(32), tensor((1, 32), i32), axis=0)), tensor((4, 32), i32)))
    red = k.op(O.ReduceOp([x, cols], 1, [tensor((4,), i32), tensor((4,), i32)]))
    k.combine(red, argmax_combine(k))
    store_tile(k, "vals", red[0])
    store_tile(k, "idx", red[1])
    module = k.finish()
    a = rng.integers(0, 6, (4, 32), dtype=np.int32)  # many ties
    vals, idx = poisoned(4, np.int32), poisoned(4, np.int32)
    run_kernel(module, (1,), [a, vals, idx])
    np.testing.assert_array_equal(vals, a.max(axis=1))
    np.testing.assert_array_equal(idx, a.argmax(axis=1))  # numpy also picks the first maximum


def scan_kernel(axis, reverse, kind="add"):
    k = KernelBuilder("scan", {"x": "*i32", "out": "*i32"})
    x = load_tile(k, "x", 4, 16)
    scan = k.op(O.ScanOp([x], axis, reverse=reverse))
    k.combine(scan, lambda a, b: [k.bin(kind, a, b)])
    store_tile(k, "out", scan)
    return k.finish()


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum_scan(rng, axis, reverse):
    a = rng.integers(-50, 50, (4, 16), dtype=np.int32)
    out = poisoned((4, 16), np.int32)
    run_kernel(scan_kernel(axis, reverse), (1,), [a, out])
    ref = np.flip(np.cumsum(np.flip(a, axis), axis), axis) if reverse else np.cumsum(a, axis)
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("keep", ["first", "last"])
def test_non_commutative_scan_keeps_order(rng, keep):
    """``combine(acc, x) = x`` is associative but not commutative: the scan gives the input
    back; ``combine(acc, x) = acc`` gives the first element everywhere."""
    k = KernelBuilder("order", {"x": "*i32", "out": "*i32"})
    x = load_tile(k, "x", 1, 32)
    scan = k.op(O.ScanOp([x], 1))
    k.combine(scan, lambda acc, new: [acc if keep == "first" else new])
    store_tile(k, "out", scan)
    a = rng.integers(-50, 50, (1, 32), dtype=np.int32)
    out = poisoned((1, 32), np.int32)
    run_kernel(k.finish(), (1,), [a, out])
    np.testing.assert_array_equal(out, np.full_like(a, a[0, 0]) if keep == "first" else a)


def dot_kernel(in_t: str, acc_t: str, m=16, n=32, kk=16, precision="ieee"):
    k = KernelBuilder("dot", {"a": f"*{in_t}", "b": f"*{in_t}", "c": f"*{acc_t}"})
    a = load_tile(k, "a", m, kk)
    b = load_tile(k, "b", kk, n)
    acc = load_tile(k, "c", m, n)
    store_tile(k, "c", k.op(O.DotOp(a, b, acc, input_precision=precision)))
    return k.finish()


@pytest.mark.parametrize("in_t,acc_t", [("f32", "f32"), ("f16", "f32"), ("bf16", "f32"), ("i8", "i32"), ("f64", "f64")])
def test_dot(rng, in_t, acc_t):
    idt, adt = parse_type(in_t).np_dtype, parse_type(acc_t).np_dtype
    if idt.kind == "i":
        a, b = (rng.integers(-128, 128, s, dtype=np.int8) for s in [(16, 16), (16, 32)])
        c = rng.integers(-1000, 1000, (16, 32), dtype=np.int32)
    else:
        a, b = (rng.standard_normal(s).astype(idt) for s in [(16, 16), (16, 32)])
        c = rng.standard_normal((16, 32)).astype(adt)
    ref = a.astype(np.float64) @ b.astype(np.float64) + c.astype(np.float64)
    run_kernel(dot_kernel(in_t, acc_t), (1,), [a, b, c])
    if idt.kind == "i":
        np.testing.assert_array_equal(c, ref.astype(np.int32))
    else:
        np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-4)


def test_dot_tf32_rounds_inputs(rng):
    a = (1 + rng.integers(1, 2**12, (16, 16)) * 2.0**-23).astype(np.float32)  # low mantissa bits only
    b = np.eye(16, 32, dtype=np.float32)
    c = np.zeros((16, 32), np.float32)  # the accumulator's input
    run_kernel(dot_kernel("f32", "f32", precision="tf32"), (1,), [a, b, c])
    assert (c[:, :16] == 1.0).all()  # tf32 keeps 10 mantissa bits: the low ones are gone
    c[...] = 0
    run_kernel(dot_kernel("f32", "f32"), (1,), [a, b, c])
    np.testing.assert_array_equal(c[:, :16], a)


def test_dot_f16_accumulates_in_f32(rng):
    """Products of f16 summed in f16 would lose the small terms; f32 keeps them."""
    a = np.full((16, 16), 1.0, np.float16)
    a[:, 1:] = 2.0**-11
    b = np.ones((16, 32), np.float16)
    c = np.zeros((16, 32), np.float32)  # the accumulator's input
    run_kernel(dot_kernel("f16", "f32"), (1,), [a, b, c])
    np.testing.assert_array_equal(c, np.float32(1 + 15 * 2.0**-11))


def test_bf16_dot_output(rng):
    a = rng.standard_normal((16, 16)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((16, 32)).astype(ml_dtypes.bfloat16)
    c = rng.standard_normal((16, 32)).astype(ml_dtypes.bfloat16)
    ref = (a.astype(np.float32) @ b.astype(np.float32) + c.astype(np.float32)).astype(ml_dtypes.bfloat16)
    run_kernel(dot_kernel("bf16", "bf16"), (1,), [a, b, c])
    np.testing.assert_allclose(c.astype(np.float32), ref.astype(np.float32), rtol=1e-2, atol=1e-2)
