"""Loads, stores, atomics, the sanitizer and launch arguments on the CPU backend."""

import numpy as np
import pytest

from tilelab.compiler.interpreter import KernelRuntimeError
from tilelab.compiler.ir.ops import AtomicCASOp, AtomicRMWOp
from tilelab.compiler.ir.types import i32, tensor

from .helpers import KernelBuilder, assert_same, cpu_launcher, poisoned, run_both


def copy_kernel(block=128, other=None):
    k = KernelBuilder("copy", {"x": "*fp32", "out": "*fp32", "n": "i32"})
    k.line(3)
    offs, mask = k.block_offsets(block, k.arg("n"))
    x = k.load(k.addptr(k.arg("x"), offs), mask, other)
    k.line(4)
    k.store(k.addptr(k.arg("out"), offs), x, mask)
    return k.finish()


def test_masked_copy_leaves_the_tail_alone(rng):
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    out = poisoned(1024, np.float32)
    cpu_launcher(copy_kernel())((8,), [x, out, n], False)
    np.testing.assert_array_equal(out[:n], x)
    assert np.isnan(out[n:]).all()


def test_masked_load_other(rng):
    k = KernelBuilder("other", {"x": "*fp32", "out": "*fp32", "n": "i32"})
    offs = k.arange(64)
    mask = k.cmp("lt", offs, k.splat(k.arg("n"), (64,)))
    x = k.load(k.addptr(k.arg("x"), offs), mask, k.const(-7.5, "f32", (64,)))
    k.store(k.addptr(k.arg("out"), offs), x)
    module = k.finish()
    x = rng.standard_normal(64).astype(np.float32)
    ((got, want),) = run_both(module, (1,), [x, poisoned(64, np.float32), 37], [1])
    assert_same(got, want)
    assert (got[37:] == -7.5).all()


@pytest.mark.parametrize("kind,t", [("add", "i32"), ("fadd", "fp32"), ("max", "i32"), ("min", "fp32"), ("xchg", "i32")])
def test_atomic_rmw_from_many_programs(rng, kind, t):
    """Every program adds into the same 16 counters: real atomics on parallel threads."""
    k = KernelBuilder("atomic", {"x": "*" + t, "acc": "*" + t})
    offs = k.bin("add", k.splat(k.bin("mul", k.pid(0), k.const(16, "i32")), (16,)), k.arange(16))
    v = k.load(k.addptr(k.arg("x"), offs))
    k.op(AtomicRMWOp(kind, k.addptr(k.arg("acc"), k.arange(16)), v))
    module = k.finish()
    dt = np.int32 if t == "i32" else np.float32
    x = rng.integers(-100, 100, 64 * 16).astype(dt)
    acc = rng.integers(-100, 100, 16).astype(dt)
    args = [x, acc.copy()]
    cpu_launcher(module)((64,), args, False)
    rows = x.reshape(64, 16)
    want = {"add": acc + rows.sum(0), "fadd": acc + rows.sum(0), "max": np.maximum(acc, rows.max(0))}
    want["min"] = np.minimum(acc, rows.min(0))
    if kind == "xchg":
        assert all(args[1][j] in rows[:, j] for j in range(16))
    else:
        np.testing.assert_allclose(args[1], want[kind], rtol=1e-5)


def test_atomic_cas_takes_a_lock_once(rng):
    """Each program tries cas(flag, 0, pid + 1); exactly one wins and the others see its id."""
    k = KernelBuilder("cas", {"flag": "*i32", "seen": "*i32"})
    pid1 = k.bin("add", k.pid(0), k.const(1, "i32"))
    old = k.op(AtomicCASOp(k.arg("flag"), k.const(0, "i32"), pid1))
    k.store(k.addptr(k.arg("seen"), k.pid(0)), old)
    module = k.finish()
    flag = np.zeros(1, np.int32)
    seen = poisoned(100, np.int32)
    cpu_launcher(module)((100,), [flag, seen], False)
    assert (seen == 0).sum() == 1
    winner = int(np.flatnonzero(seen == 0)[0]) + 1
    assert flag[0] == winner and (seen[seen != 0] == winner).all()


def test_sanitizer_names_line_program_element_and_arrays(rng):
    x = rng.standard_normal(100).astype(np.float32)
    out = poisoned(100, np.float32)
    launch = cpu_launcher(copy_kernel(block=64))
    launch((2,), [x, out, 100], True)  # in bounds: fine
    np.testing.assert_array_equal(out, x)
    with pytest.raises(KernelRuntimeError) as e:
        launch((3,), [x, out, 160], True)  # program 1 reads x[100:128]
    msg = str(e.value)
    assert msg.startswith("kern.py:3: out-of-bounds load in program (1, 0, 0) at element [36]")
    assert "line 3" in msg and "x: [0x" in msg and "out: [0x" in msg


def test_sanitizer_matches_interpreter_message(rng):
    from tilelab.compiler.interpreter import run_kernel

    module = copy_kernel(block=64)
    x = rng.standard_normal(100).astype(np.float32)
    out = poisoned(100, np.float32)
    messages = []
    for run in (
        lambda: cpu_launcher(module)((2,), [x, out, 128], True),
        lambda: run_kernel(module, (2,), [x, out, 128]),
    ):
        with pytest.raises(KernelRuntimeError) as e:
            run()
        messages.append(str(e.value).splitlines()[0])
    assert messages[0] == messages[1]


def test_bad_launch_arguments():
    launch = cpu_launcher(copy_kernel())
    with pytest.raises(KernelRuntimeError, match=r"takes 3 arguments \(x, out, n\), got 2"):
        launch((1,), [np.zeros(4, np.float32), 4], False)
    with pytest.raises(KernelRuntimeError, match="argument 'out': a pointer parameter needs a numpy array"):
        launch((1,), [np.zeros(4, np.float32), 5, 4], False)
    with pytest.raises(KernelRuntimeError, match="launch grid"):
        launch((1, 2, 3, 4), [np.zeros(4, np.float32), np.zeros(4, np.float32), 4], False)


def test_scalar_load_store_and_bool_pointers(rng):
    k = KernelBuilder("flags", {"x": "*i1", "out": "*i1", "s": "*i32"})
    offs = k.arange(32)
    v = k.load(k.addptr(k.arg("x"), offs))
    k.store(k.addptr(k.arg("out"), offs), k.cmp("eq", v, k.const(False, "i1", (32,))))
    s = k.load(k.arg("s"))
    k.store(k.arg("s"), k.bin("mul", s, k.const(3, "i32")))
    module = k.finish()
    x = rng.random(32) < 0.5
    outs = run_both(module, (1,), [x, poisoned(32, np.bool_), np.array([rng.integers(1, 99)], np.int32)], [1, 2])
    for got, want in outs:
        assert_same(got, want)
    assert tensor((32,), i32) is not None
