"""Loads, stores, masks, pointer arithmetic and argument binding."""

import numpy as np
import pytest

from tests.support.ir_builders import KernelBuilder, io_kernel, poisoned
from tilelab.compiler.interpreter import KernelRuntimeError, run_kernel
from tilelab.compiler.ir.ops import BitcastOp, SelectOp
from tilelab.compiler.ir.types import PointerType, i32


def test_vector_add_masked_tail(rng):
    module = io_kernel(["f32", "f32"], "f32", lambda k, x, y: k.bin("add", x, y), block=128)
    n = 1000
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = poisoned(n + 24, np.float32)
    run_kernel(module, (8,), [x, y, out, n])
    np.testing.assert_array_equal(out[:n], x + y)
    assert np.isnan(out[n:]).all()  # masked-off lanes wrote nothing


def test_masked_load_gives_other_then_zero(rng):
    k = KernelBuilder("other", {"x": "*i32", "out": "*i32", "out0": "*i32", "n": "i32"})
    offs, mask = k.block_offsets(64, k.arg("n"))
    filler = k.const(-7, "i32", (64,))
    k.store(k.addptr(k.arg("out"), offs), k.load(k.addptr(k.arg("x"), offs), mask, filler))
    k.store(k.addptr(k.arg("out0"), offs), k.load(k.addptr(k.arg("x"), offs), mask))
    module = k.finish()
    n = 100
    x = rng.integers(1, 1000, n, dtype=np.int32)
    out, out0 = poisoned(128, np.int32), poisoned(128, np.int32)
    run_kernel(module, (2,), [x, out, out0, n])
    np.testing.assert_array_equal(out, np.concatenate([x, np.full(28, -7, np.int32)]))
    np.testing.assert_array_equal(out0, np.concatenate([x, np.zeros(28, np.int32)]))


def test_strided_and_transposed_arrays(rng):
    """A column of a C array and a transposed view are addressed through their strides."""
    k = KernelBuilder("col", {"x": "*f64", "out": "*f64", "stride": "i32"})
    offs = k.bin("mul", k.arange(16), k.splat(k.arg("stride"), (16,)))
    k.store(k.addptr(k.arg("out"), k.arange(16)), k.load(k.addptr(k.arg("x"), offs)))
    module = k.finish()
    a = rng.standard_normal((16, 5))
    out = poisoned(16, np.float64)
    run_kernel(module, (1,), [a[:, 3], out, 5])
    np.testing.assert_array_equal(out, a[:, 3])
    t = rng.standard_normal((7, 16)).T  # shape (16, 7), row stride 1 element, col stride 16
    run_kernel(module, (1,), [t[::-1, 2], out, -1])  # negative stride: reversed column
    np.testing.assert_array_equal(out, t[::-1, 2])


def test_bool_and_bf16_round_trip(rng):
    import ml_dtypes

    module = io_kernel(["bf16"], "bf16", lambda k, x: k.bin("mul", x, x))
    x = rng.standard_normal(50).astype(ml_dtypes.bfloat16)
    out = poisoned(50, ml_dtypes.bfloat16)
    run_kernel(module, (1,), [x, out, 50])
    np.testing.assert_array_equal(out.astype(np.float32), (x * x).astype(np.float32))


def misaligned_kernel():
    """``out[0:4] = ((int32 *)(raw + 1))[0:4]``: an int32 load at an odd byte address."""
    k = KernelBuilder("unaligned", {"raw": "*u8", "out": "*i32"})
    shifted = k.addptr(k.arg("raw"), k.const(1, "i32"))
    as_i32 = k.op(BitcastOp(shifted, PointerType(i32)))
    k.line(7)
    k.store(k.addptr(k.arg("out"), k.arange(4)), k.load(k.addptr(as_i32, k.arange(4))))
    return k.finish()


def test_misaligned_access_reads_the_right_bytes(rng):
    raw = rng.integers(0, 255, 17, dtype=np.uint8)
    out = poisoned(4, np.int32)
    run_kernel(misaligned_kernel(), (1,), [raw, out])
    np.testing.assert_array_equal(out, raw[1:].view(np.int32))


def test_sanitizer_reports_misaligned_access(rng):
    raw = rng.integers(0, 255, 17, dtype=np.uint8)
    with pytest.raises(KernelRuntimeError, match=r"kern.py:7: misaligned load in program \(0, 0, 0\) at element \[0\]"):
        run_kernel(misaligned_kernel(), (1,), [raw, np.zeros(4, np.int32)], sanitize=True)


def test_argument_errors():
    module = io_kernel(["f32"], "f32", lambda k, x: x)
    x = np.ones(4, np.float32)
    with pytest.raises(KernelRuntimeError, match=r"takes 3 arguments \(x0, out, n\), got 2"):
        run_kernel(module, (1,), [x, x])
    with pytest.raises(KernelRuntimeError, match="argument 'out': a pointer parameter needs a numpy array, got int"):
        run_kernel(module, (1,), [x, 5, 4])
    with pytest.raises(KernelRuntimeError, match="argument 'n': a scalar parameter"):
        run_kernel(module, (1,), [x, x, x])
    with pytest.raises(KernelRuntimeError, match="launch grid"):
        run_kernel(module, (1, 2, 3, 4), [x, x, 4])


def test_scalar_arguments_wrap_to_their_width(rng):
    module = io_kernel(["u32"], "u32", lambda k, x: x)
    x = rng.integers(0, 2**32, 8, dtype=np.uint32)
    out = poisoned(8, np.uint32)
    run_kernel(module, (1,), [x, out, 2**32 + 8])  # n wraps to 8 as an i32
    np.testing.assert_array_equal(out, x)


def test_one_tile_across_two_arrays_and_overlapping_views(rng):
    """Even lanes read ``a``, odd lanes ``b``; ``out`` may be a view overlapping ``a``."""
    k = KernelBuilder("mix", {"a": "*f32", "b": "*f32", "out": "*f32"})
    offs = k.arange(16)
    odd = k.cmp("eq", k.bin("and", offs, k.const(1, "i32", (16,))), k.const(1, "i32", (16,)))
    ptrs = k.op(SelectOp(odd, k.addptr(k.arg("b"), offs), k.addptr(k.arg("a"), offs)))
    k.store(k.addptr(k.arg("out"), offs), k.load(ptrs))
    module = k.finish()
    a, b = rng.standard_normal(16).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    out = poisoned(16, np.float32)
    run_kernel(module, (1,), [a, b, out])
    np.testing.assert_array_equal(out, np.where(np.arange(16) % 2 == 1, b, a))
    buf = rng.standard_normal(40).astype(np.float32)
    expect = np.where(np.arange(16) % 2 == 1, b, buf[:16])
    run_kernel(module, (1,), [buf[:16], b, buf[10:26]])  # overlapping views of one buffer
    np.testing.assert_array_equal(buf[10:26], expect)
