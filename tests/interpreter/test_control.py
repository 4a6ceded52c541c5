"""for / if / while with region arguments, calls, print and assert."""

import numpy as np
import pytest

from tests.support.ir_builders import KernelBuilder, poisoned
from tilelab.compiler.interpreter import KernelRuntimeError, run_kernel
from tilelab.compiler.ir import ops as O
from tilelab.compiler.ir.types import f32, i32, tensor

B = 32


def test_for_loop_carries_a_tile(rng):
    """``acc = sum over rows j in range(lo, hi, step) of x[j]``, one program per column block."""
    k = KernelBuilder("rowsum", {"x": "*f32", "out": "*f32", "lo": "i32", "hi": "i32", "step": "i32", "n": "i32"})
    cols, _ = k.block_offsets(B, k.arg("n"))
    loop = O.ForOp(k.arg("lo"), k.arg("hi"), k.arg("step"), [k.const(0.0, "f32", (B,))])
    k.op(loop)
    iv, acc = loop.body.args
    with k.region(loop.body):
        row = k.bin("mul", iv, k.arg("n"))
        x = k.load(k.addptr(k.arg("x"), k.bin("add", cols, k.splat(row, (B,)))))
        k.op(O.YieldOp([k.bin("add", acc, x)]))
    k.store(k.addptr(k.arg("out"), cols), loop.results[0])
    module = k.finish()
    x = rng.standard_normal((10, 64)).astype(np.float32)
    for lo, hi, step in [(0, 10, 1), (1, 10, 3), (9, -1, -2), (5, 5, 1)]:
        out = poisoned(64, np.float32)
        run_kernel(module, (2,), [x, out, lo, hi, step, 64])
        expect = np.zeros(64, np.float32)
        for j in range(lo, hi, step):
            expect += x[j]
        np.testing.assert_allclose(out, expect, rtol=1e-6)


def test_for_loop_with_zero_step_is_an_error():
    k = KernelBuilder("zero", {"s": "i32"})
    k.line(4)
    loop = O.ForOp(k.const(0, "i32"), k.const(4, "i32"), k.arg("s"), [])
    k.op(loop)
    with k.region(loop.body):
        k.op(O.YieldOp([]))
    with pytest.raises(KernelRuntimeError, match=r"kern.py:4: for loop with a step of 0 never ends\n    line 4"):
        run_kernel(k.finish(), (1,), [0])


def test_if_picks_a_branch_per_program(rng):
    """Even programs store ``x * 2``, odd ones ``x + 100`` (an scf.if with a tile result)."""
    k = KernelBuilder("branch", {"x": "*i32", "out": "*i32", "n": "i32"})
    offs, mask = k.block_offsets(B, k.arg("n"))
    x = k.load(k.addptr(k.arg("x"), offs), mask)
    even = k.cmp("eq", k.bin("rem", k.pid(0), k.const(2, "i32")), k.const(0, "i32"))
    branch = O.IfOp(even, [x.type])
    k.op(branch)
    with k.region(branch.then_block):
        k.op(O.YieldOp([k.bin("mul", x, k.const(2, "i32", (B,)))]))
    with k.region(branch.else_block):
        k.op(O.YieldOp([k.bin("add", x, k.const(100, "i32", (B,)))]))
    k.store(k.addptr(k.arg("out"), offs), branch.results[0], mask)
    x = rng.integers(-1000, 1000, 4 * B, dtype=np.int32)
    out = poisoned(4 * B, np.int32)
    run_kernel(k.finish(), (4,), [x, out, 4 * B])
    even_block = (np.arange(4 * B) // B) % 2 == 0
    np.testing.assert_array_equal(out, np.where(even_block, x * 2, x + 100))


def test_while_loop_forwards_values(rng):
    """Per program: ``v = x; steps = 0; while v < limit: v *= 3; steps += 1``."""
    k = KernelBuilder("grow", {"x": "*i32", "limit": "i32", "v_out": "*i32", "steps_out": "*i32"})
    pid = k.pid(0)
    x = k.load(k.addptr(k.arg("x"), pid))
    loop = O.WhileOp([x, k.const(0, "i32")])
    k.op(loop)
    with k.region(loop.before):
        v, steps = loop.before.args
        k.op(O.ConditionOp(k.cmp("lt", v, k.arg("limit")), [v, steps]))
    with k.region(loop.after):
        v, steps = loop.after.args
        k.op(O.YieldOp([k.bin("mul", v, k.const(3, "i32")), k.bin("add", steps, k.const(1, "i32"))]))
    k.store(k.addptr(k.arg("v_out"), pid), loop.results[0])
    k.store(k.addptr(k.arg("steps_out"), pid), loop.results[1])
    x = rng.integers(1, 500, 8, dtype=np.int32)
    limit = int(rng.integers(1000, 100000))
    v_out, steps_out = poisoned(8, np.int32), poisoned(8, np.int32)
    run_kernel(k.finish(), (8,), [x, limit, v_out, steps_out])
    for i, v in enumerate(x.tolist()):
        steps = 0
        while v < limit:
            v, steps = v * 3, steps + 1
        assert (v_out[i], steps_out[i]) == (v, steps)


def test_call_runs_the_callee(rng):
    """``out = axpy(a, x, y)`` through a tt.call of a second function."""
    k = KernelBuilder("caller", {"x": "*f32", "y": "*f32", "out": "*f32", "a": "f32"})
    t = tensor((B,), f32)
    callee = O.FuncOp("axpy", [f32, t, t], [t], arg_names=["a", "x", "y"])
    k.funcs.append(callee)
    with k.region(callee.body):
        a, x, y = callee.args
        k.op(O.ReturnOp([k.bin("add", k.bin("mul", k.splat(a, (B,)), x), y)]))
    offs = k.arange(B)
    x, y = (k.load(k.addptr(k.arg(n), offs)) for n in "xy")
    k.store(k.addptr(k.arg("out"), offs), k.op(O.CallOp("axpy", [k.arg("a"), x, y], [t])))
    xs, ys = rng.standard_normal(B).astype(np.float32), rng.standard_normal(B).astype(np.float32)
    out = poisoned(B, np.float32)
    run_kernel(k.finish(), (1,), [xs, ys, out, 1.5])
    np.testing.assert_allclose(out, np.float32(1.5) * xs + ys, rtol=1e-6)


def test_device_print_format(capsys):
    k = KernelBuilder("show", {"n": "i32"})
    r = k.bin("add", k.arange(2), k.splat(k.arg("n"), (2,)))
    k.op(O.PrintOp("r: ", [r]))
    k.op(O.PrintOp("pid", [k.pid(0)], hex=True))
    run_kernel(k.finish(), (2,), [40])
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "pid (0, 0, 0) idx (0) r: 40",
        "pid (0, 0, 0) idx (1) r: 41",
        "pid (0, 0, 0) idx () pid: 0x00000000",
        "pid (1, 0, 0) idx (0) r: 40",
        "pid (1, 0, 0) idx (1) r: 41",
        "pid (1, 0, 0) idx () pid: 0x00000001",
    ]


def test_device_assert_names_line_program_and_element(rng):
    k = KernelBuilder("check", {"x": "*i32"})
    x = k.load(k.addptr(k.arg("x"), k.arange(16)))
    k.line(12)
    k.op(O.AssertOp(k.cmp("ge", x, k.const(0, "i32", (16,))), "x must be non-negative"))
    module = k.finish()
    x = rng.integers(0, 100, 16, dtype=np.int32)
    run_kernel(module, (3,), [x])  # holds: no error
    x[9] = -int(rng.integers(1, 100))
    msg = r"kern.py:12: device assertion failed in program \(0, 0, 0\) at element \[9\]: x must be non-negative"
    msg += r"\n    line 12"
    with pytest.raises(KernelRuntimeError, match=msg):
        run_kernel(module, (3,), [x])


def test_barrier_and_hint_change_nothing(rng):
    k = KernelBuilder("noop", {"x": "*i32", "out": "*i32"})
    offs = k.op(O.HintOp(k.arange(B), "multiple_of", (16,)))
    k.op(O.BarrierOp())
    k.store(k.addptr(k.arg("out"), offs), k.load(k.addptr(k.arg("x"), offs)))
    x = rng.integers(-5, 5, B, dtype=np.int32)
    out = poisoned(B, np.int32)
    run_kernel(k.finish(), (1,), [x, out])
    np.testing.assert_array_equal(out, x)


def test_program_ids_and_counts_on_a_3d_grid():
    k = KernelBuilder("ids", {"out": "*i32"})
    pid = [k.pid(a) for a in range(3)]
    num = [k.op(O.NumProgramsOp(a)) for a in range(3)]
    linear = k.bin("add", k.bin("mul", k.bin("add", k.bin("mul", pid[2], num[1]), pid[1]), num[0]), pid[0])
    value = k.bin("add", k.bin("mul", linear, k.const(10, "i32")), k.bin("add", num[0], num[2]))
    k.store(k.addptr(k.arg("out"), linear), value)
    out = poisoned(2 * 3 * 4, np.int32)
    run_kernel(k.finish(), (2, 3, 4), [out])
    np.testing.assert_array_equal(out, np.arange(24) * 10 + 6)


def test_every_op_has_a_handler():
    """Each op of ``ir.ops`` (terminators aside, their parents read them) is executable."""
    from tilelab.compiler.interpreter.executor import HANDLERS

    op_classes = [getattr(O, name) for name in O.__all__ if isinstance(getattr(O, name), type)]
    missing = [c.__name__ for c in op_classes if not c.is_terminator and c is not O.FuncOp and c not in HANDLERS]
    assert missing == []


def test_unknown_op_is_a_clear_error():
    class MysteryOp(O.Op):
        name = "test.mystery"

    k = KernelBuilder("mystery", {"n": "i32"})
    k.line(8)
    k.op(MysteryOp([], []))
    with pytest.raises(KernelRuntimeError, match=r"kern.py:8: the interpreter cannot execute test.mystery"):
        run_kernel(k.finish(), (1,), [1])


def test_malformed_ir_names_the_op():
    """A reshape to a wrong element count (made after the verifier ran, which rejects it) fails at its line."""
    k = KernelBuilder("bad", {"n": "i32"})
    k.line(6)
    reshaped = k.op(O.ReshapeOp(k.arange(4), tensor((4,), i32)))
    module = k.finish()
    reshaped.type = tensor((3,), f32)
    with pytest.raises(KernelRuntimeError, match=r"kern.py:6: cannot execute tt.reshape in program \(0, 0, 0\)"):
        run_kernel(module, (1,), [1])
