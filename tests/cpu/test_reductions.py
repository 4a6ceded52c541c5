"""Reductions, scans, sorts, dots and shape ops on the CPU backend against the interpreter."""

import numpy as np
import pytest

from tilelab.compiler.ir import ops as O
from tilelab.compiler.ir.types import SCALARS, tensor

from .helpers import KernelBuilder, assert_same, poisoned, run_both


def tile_io(name, in_types, shape, out_type, out_shape, body):
    """A kernel loading ``[*shape]`` tiles (row-major) and storing ``body(...)`` of ``out_shape``."""
    params = {f"x{i}": "*" + t for i, t in enumerate(in_types)}
    params["out"] = "*" + out_type
    k = KernelBuilder(name, params)
    xs = [k.load(k.addptr(k.arg(f"x{i}"), offsets(k, shape))) for i in range(len(in_types))]
    result = body(k, *xs)
    k.store(k.addptr(k.arg("out"), offsets(k, out_shape)), result)
    return k.finish()


def offsets(k, shape):
    """Row-major offsets of a tile of ``shape`` (1-d or 2-d)."""
    if len(shape) == 1:
        return k.arange(shape[0])
    m, n = shape
    rows = k.bin("mul", k.arange(m), k.const(n, "i32", (m,)))
    rows = k.op(O.ExpandDimsOp(rows, tensor((m, 1), SCALARS["i32"]), axis=1))
    cols = k.op(O.ExpandDimsOp(k.arange(n), tensor((1, n), SCALARS["i32"]), axis=0))
    i32 = SCALARS["i32"]
    rows = k.op(O.BroadcastOp(rows, tensor((m, n), i32)))
    cols = k.op(O.BroadcastOp(cols, tensor((m, n), i32)))
    return k.bin("add", rows, cols)


def reduce(k, x, axis, kind):
    shape = list(x.type.shape)
    del shape[axis]
    op = k.op(O.ReduceOp([x], axis, [tensor(shape, x.type.element)]))
    op = op.defining_op
    k.combine(op, lambda a, b: [k.bin(kind, a, b)])
    return op.result


def data(rng, t, shape):
    dt = SCALARS[t].np_dtype
    if dt.kind in "iu":
        return rng.integers(-50 if dt.kind == "i" else 0, 50, shape).astype(dt)
    return rng.standard_normal(shape).astype(dt)


@pytest.mark.parametrize("t", ["f32", "i32", "bf16"])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("kind", ["add", "max"])
def test_reduce_2d(rng, t, axis, kind):
    shape, out_shape = (16, 32), ((32,) if axis == 0 else (16,))
    module = tile_io("red", [t], shape, t, out_shape, lambda k, x: reduce(k, x, axis, kind))
    x = data(rng, t, shape)
    ((got, want),) = run_both(module, (1,), [x, poisoned(out_shape, x.dtype)], [1])
    assert_same(got, want, rtol=2e-2 if t == "bf16" else 1e-5)


def test_reduce_to_scalar_and_argmax(rng):
    """A two-operand reduce (value, index) keeping the first maximum, stored as scalars."""
    k = KernelBuilder("argmax", {"x": "*fp32", "out": "*fp32", "idx": "*i32"})
    x = k.load(k.addptr(k.arg("x"), k.arange(128)))
    op = k.op(O.ReduceOp([x, k.arange(128)], 0, [SCALARS["f32"], SCALARS["i32"]]))[0].defining_op

    def combine(v, i, w, j):
        take = k.cmp("gt", w, v)
        return [k.op(O.SelectOp(take, w, v)), k.op(O.SelectOp(take, j, i))]

    k.combine(op, combine)
    k.store(k.arg("out"), op.results[0])
    k.store(k.arg("idx"), op.results[1])
    module = k.finish()
    x = rng.standard_normal(128).astype(np.float32)
    outs = run_both(module, (1,), [x, poisoned(1, np.float32), poisoned(1, np.int32)], [1, 2])
    for got, want in outs:
        assert_same(got, want)
    assert outs[1][0][0] == np.argmax(x)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum(rng, axis, reverse):
    def body(k, x):
        op = k.op(O.ScanOp([x], axis, reverse)).defining_op
        k.combine(op, lambda a, b: [k.bin("add", a, b)])
        return op.result

    module = tile_io("scan", ["i32"], (8, 64), "i32", (8, 64), body)
    x = data(rng, "i32", (8, 64))
    ((got, want),) = run_both(module, (1,), [x, poisoned((8, 64), np.int32)], [1])
    assert_same(got, want)
    ref = np.flip(np.cumsum(np.flip(x, axis), axis), axis) if reverse else np.cumsum(x, axis)
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("t", ["f32", "i32", "u8"])
def test_sort_rows(rng, t, descending):
    def body(k, x):
        return k.op(O.SortOp(x, x.type, dim=1, descending=descending))

    module = tile_io("sort", [t], (4, 64), t, (4, 64), body)
    x = data(rng, t, (4, 64))
    ((got, want),) = run_both(module, (1,), [x, poisoned((4, 64), x.dtype)], [1])
    assert_same(got, want)


@pytest.mark.parametrize(
    "t,acc,precision",
    [
        ("f32", "f32", "ieee"),
        ("f16", "f32", "ieee"),
        ("bf16", "f32", "ieee"),
        ("f32", "f32", "tf32"),
        ("i8", "i32", "ieee"),
        ("f16", "f16", "ieee"),
    ],
)
def test_dot(rng, t, acc, precision):
    m, kk, n = 32, 16, 64

    def body(k, a, b, c):
        return k.op(O.DotOp(a, b, c, input_precision=precision))

    params = {"a": "*" + t, "b": "*" + t, "c": "*" + acc, "out": "*" + acc}
    k = KernelBuilder("dot", params)
    loaded = [k.load(k.addptr(k.arg(p), offsets(k, s))) for p, s in (("a", (m, kk)), ("b", (kk, n)), ("c", (m, n)))]
    k.store(k.addptr(k.arg("out"), offsets(k, (m, n))), body(k, *loaded))
    module = k.finish()
    a, b, c = data(rng, t, (m, kk)), data(rng, t, (kk, n)), data(rng, acc, (m, n))
    ((got, want),) = run_both(module, (1,), [a, b, c, poisoned((m, n), c.dtype)], [3])
    assert_same(got, want, rtol={"f32": 1e-5, "i32": None, "f16": 4e-3}[acc])


@pytest.mark.parametrize("which", ["trans", "flip", "join_split", "cat", "reshape"])
def test_shape_ops(rng, which):
    i32 = SCALARS["f32"]

    def body(k, x):
        if which == "trans":
            return k.op(O.TransOp(x, tensor((32, 8), i32), order=(1, 0)))
        if which == "flip":
            return k.op(O.FlipOp(x, x.type, dim=1))
        if which == "join_split":
            j = k.op(O.JoinOp(x, k.bin("mul", x, x), tensor((8, 32, 2), i32)))
            a, b = k.op(O.SplitOp(j, x.type))
            return k.bin("sub", b, a)
        if which == "cat":
            return k.op(O.CatOp(x, k.bin("add", x, x), tensor((16, 32), i32)))
        return k.op(O.ReshapeOp(x, tensor((32, 8), i32)))

    out_shape = {"trans": (32, 8), "cat": (16, 32), "reshape": (32, 8)}.get(which, (8, 32))
    module = tile_io("shape", ["f32"], (8, 32), "f32", out_shape, body)
    x = data(rng, "f32", (8, 32))
    ((got, want),) = run_both(module, (1,), [x, poisoned(out_shape, np.float32)], [1])
    assert_same(got, want)
