"""Out-of-bounds errors (with and without sanitize) and per-program address traces."""

import re

import numpy as np
import pytest

from tests.support.ir_builders import KernelBuilder, io_kernel, poisoned
from tilelab.compiler.interpreter import AccessRecord, KernelRuntimeError, run_kernel
from tilelab.compiler.ir import ops as O


def unmasked_copy(block=32):
    """``out[offs] = x[offs]`` without a mask: the last program reads past ``x``."""
    k = KernelBuilder("copy", {"x": "*f32", "out": "*f32"})
    start = k.bin("mul", k.pid(0), k.const(block, "i32"))
    offs = k.bin("add", k.splat(start, (block,)), k.arange(block))
    k.line(5)
    x = k.load(k.addptr(k.arg("x"), offs))
    k.line(6)
    k.store(k.addptr(k.arg("out"), offs), x)
    return k.finish()


@pytest.mark.parametrize("sanitize", [False, True])
def test_out_of_bounds_load_names_everything(rng, sanitize):
    x = rng.standard_normal(40).astype(np.float32)
    out = poisoned(64, np.float32)
    with pytest.raises(KernelRuntimeError) as info:
        run_kernel(unmasked_copy(), (2,), [x, out], sanitize=sanitize)
    msg = str(info.value)
    bad = x.ctypes.data + 40 * 4
    head = f"kern.py:5: out-of-bounds load in program (1, 0, 0) at element [8]: address 0x{bad:x} (4 bytes)"
    assert msg.startswith(head), msg
    assert "\n    line 5\n" in msg
    x_lo = x.ctypes.data
    assert f"x: [0x{x_lo:x}, 0x{x_lo + 160:x}) 160 bytes" in msg
    assert f"out: [0x{out.ctypes.data:x}, 0x{out.ctypes.data + 256:x}) 256 bytes" in msg
    np.testing.assert_array_equal(out[:32], x[:32])  # program 0 ran; program 1 stopped at the load


def test_out_of_bounds_store_reports_first_bad_masked_lane(rng):
    """Only active lanes count: the first bad one is reported by its tile index."""
    module = io_kernel(["i32"], "i32", lambda k, x: x, block=16)
    x = rng.integers(0, 9, 16, dtype=np.int32)
    out = np.full(10, -1, np.int32)  # poisoned: x holds 0..8
    with pytest.raises(KernelRuntimeError, match=r"out-of-bounds store in program \(0, 0, 0\) at element \[10\]"):
        run_kernel(module, (1,), [x, out, 16], sanitize=True)
    run_kernel(module, (1,), [x, out, 10])  # masked to 10 lanes: fine
    np.testing.assert_array_equal(out, x[:10])


def test_masked_off_lanes_never_touch_memory(rng):
    """Addresses far outside every array are fine on lanes whose mask is false."""
    k = KernelBuilder("wild", {"x": "*i64", "out": "*i64"})
    offs = k.bin("mul", k.arange(8), k.const(1 << 40, "i32", (8,)))  # wraps in i32: arbitrary offsets
    first = k.cmp("eq", k.arange(8), k.const(0, "i32", (8,)))
    x = k.load(k.addptr(k.arg("x"), offs), first, k.const(-1, "i64", (8,)))
    k.store(k.addptr(k.arg("out"), k.arange(8)), x)
    x = rng.integers(1, 100, 1, dtype=np.int64)
    out = poisoned(8, np.int64)
    run_kernel(k.finish(), (1,), [x, out], sanitize=True)
    np.testing.assert_array_equal(out, [x[0]] + [-1] * 7)


def test_kernel_without_arrays_reports_it():
    k = KernelBuilder("nothing", {"addr": "i64"})
    k.line(3)
    ptr = k.op(
        O.CastOp(
            k.arg("addr"),
            __import__("tilelab").compiler.ir.types.PointerType(__import__("tilelab").compiler.ir.types.f32),
        )
    )
    k.load(ptr)
    with pytest.raises(
        KernelRuntimeError, match=r"kern.py:3: out-of-bounds load .*address 0x10 .*\n.*\n  \(the kernel"
    ):
        run_kernel(k.finish(), (1,), [16])


def test_trace_records_one_program(rng):
    module = io_kernel(["f32", "f32"], "f32", lambda k, x, y: k.bin("add", x, y), block=64)
    n = 100
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = poisoned(n, np.float32)
    result = run_kernel(module, (2,), [x, y, out, n], trace_program=(1, 0, 0))
    assert result.num_programs == 2
    assert [r.kind for r in result.trace] == ["load", "load", "store"]
    assert [r.arg_name for r in result.trace] == ["x0", "x1", "out"]
    walk = list(module.walk())
    for record in result.trace:
        assert isinstance(record, AccessRecord) and record.itemsize == 4
        assert isinstance(walk[record.op_index], O.StoreOp if record.kind == "store" else O.LoadOp)
        assert record.loc == walk[record.op_index].loc
    offs = 64 + np.arange(64)
    np.testing.assert_array_equal(result.trace[0].addresses, x.ctypes.data + 4 * offs)
    np.testing.assert_array_equal(result.trace[2].addresses, out.ctypes.data + 4 * offs)
    np.testing.assert_array_equal(result.trace[1].mask, offs < n)
    np.testing.assert_array_equal(out, x + y)


def test_trace_of_atomics_and_untraced_run(rng):
    k = KernelBuilder("t", {"c": "*i32"})
    k.op(O.AtomicRMWOp("add", k.splat(k.arg("c"), (4,)), k.const(1, "i32", (4,))))
    module = k.finish()
    c = np.zeros(1, np.int32)
    assert run_kernel(module, (3,), [c]).trace == []
    (record,) = run_kernel(module, (3,), [c], trace_program=(2,)).trace
    assert record.kind == "atomic" and record.arg_name == "c" and record.addresses.shape == (4,)
    assert c[0] == 24


def test_error_message_is_short_without_source(rng):
    module = unmasked_copy()
    module.kernel.attrs.pop("source")
    with pytest.raises(KernelRuntimeError) as info:
        run_kernel(module, (2,), [np.ones(40, np.float32), np.ones(64, np.float32)])
    assert re.match(r"kern.py:5: out-of-bounds load in program \(1, 0, 0\)", str(info.value))
    assert "line 5" not in str(info.value)


def test_negative_address_and_all_masked_load(rng):
    """``x - 1`` is reported as the unsigned address; a fully masked load touches nothing."""
    k = KernelBuilder("before", {"x": "*i32", "out": "*i32", "flag": "i1"})
    offs = k.bin("sub", k.arange(4), k.const(1, "i32", (4,)))
    k.store(k.addptr(k.arg("out"), k.arange(4)), k.load(k.addptr(k.arg("x"), offs), k.splat(k.arg("flag"), (4,))))
    module = k.finish()
    x = rng.integers(1, 9, 4, dtype=np.int32)
    out = poisoned(4, np.int32)
    run_kernel(module, (1,), [x, out, False])
    np.testing.assert_array_equal(out, 0)
    bad = (x.ctypes.data - 4) & (2**64 - 1)
    with pytest.raises(KernelRuntimeError, match=f"at element \\[0\\]: address 0x{bad:x} "):
        run_kernel(module, (1,), [x, out, True])
