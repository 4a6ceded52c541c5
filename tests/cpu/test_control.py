"""Loops, branches, prints and asserts on the CPU backend."""

import numpy as np
import pytest

from tilelab.compiler.interpreter import KernelRuntimeError
from tilelab.compiler.ir import ops as O
from tilelab.compiler.ir.types import SCALARS

from .helpers import KernelBuilder, assert_same, cpu_launcher, poisoned, run_both

F32, I32, I1 = SCALARS["f32"], SCALARS["i32"], SCALARS["i1"]


def loop_kernel():
    """``a, b = x, 0; for i in range(lo, n, step): a, b = b + a * 0.5, a; s += i``; stores a, b, s."""
    k = KernelBuilder("loop", {"x": "*fp32", "out": "*fp32", "s": "*i32", "lo": "i32", "n": "i32", "step": "i32"})
    offs = k.arange(64)
    x = k.load(k.addptr(k.arg("x"), offs))
    zero = k.const(0.0, "f32", (64,))
    loop = k.op(O.ForOp(k.arg("lo"), k.arg("n"), k.arg("step"), [x, zero, k.const(0, "i32")]))
    loop = loop[0].defining_op
    with k.region(loop.body):
        iv, a, b, s = loop.body.args
        half = k.const(0.5, "f32", (64,))
        new_a = k.bin("add", b, k.bin("mul", a, half))
        k.op(O.YieldOp([new_a, a, k.bin("add", s, iv)]))
    a, b, s = loop.results
    k.store(k.addptr(k.arg("out"), offs), a)
    k.store(k.addptr(k.arg("out"), k.bin("add", offs, k.const(64, "i32", (64,)))), b)
    k.store(k.arg("s"), s)
    return k.finish()


@pytest.mark.parametrize("lo,n,step", [(0, 7, 1), (2, 11, 3), (5, 5, 1), (9, -2, -2)])
def test_for_loop_swaps_carried_tiles(rng, lo, n, step):
    x = rng.standard_normal(64).astype(np.float32)
    outs = run_both(loop_kernel(), (1,), [x, poisoned(128, np.float32), poisoned(1, np.int32), lo, n, step], [1, 2])
    for got, want in outs:
        assert_same(got, want)
    assert outs[1][0][0] == sum(range(lo, n, step))


def test_zero_step_is_an_error_not_a_hang(rng):
    x = rng.standard_normal(64).astype(np.float32)
    launch = cpu_launcher(loop_kernel())
    with pytest.raises(KernelRuntimeError, match=r"^kern.py:2: for loop with a step of 0 never ends"):
        launch((1,), [x, poisoned(128, np.float32), poisoned(1, np.int32), 0, 4, 0], False)


def test_if_and_while(rng):
    """``c = x; while c < 100: c = c * 2 + 1``; then ``r = c if pid even else -c``."""
    k = KernelBuilder("branchy", {"x": "*i32", "out": "*i32"})
    c0 = k.load(k.addptr(k.arg("x"), k.pid(0)))
    w = k.op(O.WhileOp([c0])).defining_op
    with k.region(w.before):
        (c,) = w.before.args
        k.op(O.ConditionOp(k.cmp("lt", c, k.const(100, "i32")), [c]))
    with k.region(w.after):
        (c,) = w.after.args
        k.op(O.YieldOp([k.bin("add", k.bin("mul", c, k.const(2, "i32")), k.const(1, "i32"))]))
    even = k.cmp("eq", k.bin("and", k.pid(0), k.const(1, "i32")), k.const(0, "i32"))
    br = k.op(O.IfOp(even, [I32])).defining_op
    with k.region(br.then_block):
        k.op(O.YieldOp([w.result]))
    with k.region(br.else_block):
        k.op(O.YieldOp([k.bin("sub", k.const(0, "i32"), w.result)]))
    k.store(k.addptr(k.arg("out"), k.pid(0)), br.result)
    module = k.finish()
    x = rng.integers(0, 120, 40).astype(np.int32)  # c = -1 would loop forever
    ((got, want),) = run_both(module, (40,), [x, poisoned(40, np.int32)], [1])
    assert_same(got, want)


def test_device_print_matches_interpreter(rng, capfd):
    from tilelab.compiler.interpreter import run_kernel

    k = KernelBuilder("show", {"x": "*i32"})
    v = k.load(k.addptr(k.arg("x"), k.arange(4)))
    k.op(O.PrintOp("x: ", [v]))
    module = k.finish()
    x = rng.integers(0, 1000, 4).astype(np.int32)
    cpu_launcher(module)((2,), [x], False)
    cpu = capfd.readouterr().out
    run_kernel(module, (2,), [x])
    ref = capfd.readouterr().out
    assert cpu == ref and f"pid (1, 0, 0) idx (3) x: {x[3]}" in cpu


def test_device_assert_names_line_program_and_element(rng):
    k = KernelBuilder("check", {"x": "*i32"})
    v = k.load(k.addptr(k.arg("x"), k.arange(16)))
    k.line(7)
    k.op(O.AssertOp(k.cmp("ge", v, k.const(0, "i32", (16,))), "x must be >= 0"))
    module = k.finish()
    x = rng.integers(0, 100, 16).astype(np.int32)
    launch = cpu_launcher(module)
    launch((3,), [x], False)
    x[5] = -1
    with pytest.raises(KernelRuntimeError) as e:
        launch((3,), [x], False)
    assert str(e.value).startswith(
        "kern.py:7: device assertion failed in program (0, 0, 0) at element [5]: x must be >= 0"
    )
