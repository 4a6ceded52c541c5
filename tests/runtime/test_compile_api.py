"""``tilelab.compile``: the CompiledKernel's fields, and launching it."""

from __future__ import annotations

import numpy as np
import pytest

import tilelab
from tilelab.compiler.options import CompileOptions
from tilelab.runtime.compiled import CompiledKernel
from tilelab.runtime.errors import LaunchError

from .kernels import add

SIG = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32"}


def test_compiled_kernel_fields():
    ck = tilelab.compile(add, signature=SIG, constants={"BLOCK": 128}, target="interpret", num_warps=8)
    assert isinstance(ck, CompiledKernel)
    assert ck.name == "add" and ck.target == "interpret"
    assert ck.signature == {"x": "*f32", "y": "*f32", "out": "*f32", "n": "i32"}
    assert ck.constants == {"BLOCK": 128}
    assert ck.options == CompileOptions(target="interpret", num_warps=8)
    assert ck.arg_names == ["x", "y", "out", "n"]
    assert "tt.func" in ck.asm["tile"] and "@add" in ck.asm["tile"]
    assert ck.metadata["num_warps"] == 8 and ck.metadata["compile_seconds"] > 0
    assert {"shared", "registers", "spills"} <= set(ck.metadata)
    assert ck.passes and all(hasattr(p, "seconds") and hasattr(p, "changed") for p in ck.passes)
    assert ck.module.kernel.sym_name == "add"
    assert "def add(" in ck.source and isinstance(ck.first_line, int)


def test_triton_style_string_signature_and_plain_function():
    ck = tilelab.compile(add.fn, signature="*fp32, *fp32, *fp32, i32", constants={"BLOCK": 64}, target="interpret")
    assert ck.signature["n"] == "i32" and ck.arg_names == ["x", "y", "out", "n"]


def test_compiled_kernel_launches(rng, poison):
    ck = tilelab.compile(add, signature=SIG, constants={"BLOCK": 128}, target="interpret")
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = poison(np.empty_like(x))
    ck[(tilelab.cdiv(n, 128),)](x, y, out, n)
    np.testing.assert_allclose(out, x + y, rtol=1e-6)
    out2 = poison(np.empty_like(x))
    ck[lambda meta: (tilelab.cdiv(meta["n"], 128),)](x=x, y=y, out=out2, n=n)
    np.testing.assert_allclose(out2, x + y, rtol=1e-6)


def test_warmup_compiles_without_launching(rng, builds, poison):
    kernel = tilelab.jit(add.fn)
    x = rng.standard_normal(64).astype(np.float32)
    out = poison(np.empty_like(x))
    ck = kernel.warmup(x, x, out, 64, BLOCK=64, grid=(1,))
    assert isinstance(ck, CompiledKernel) and len(builds) == 1
    assert np.isnan(out).all()
    kernel[(1,)](x, x, out, 64, BLOCK=64)
    assert len(builds) == 1
    np.testing.assert_allclose(out, 2 * x, rtol=1e-6)


def test_jit_function_surface():
    assert add.__name__ == "add" and add._tilelab_fn is add.fn
    assert add.src.startswith("@tilelab.jit\ndef add(")
    assert repr(add).startswith("JITFunction(")


def test_collector_is_off_during_a_compile_and_restored_after(monkeypatch):
    """The cyclic collector pauses while the compiler runs, and comes back as the caller had it."""
    import gc

    from tilelab.runtime import build, stages

    seen = []
    real_build = stages.build

    def spying_build(*args):
        seen.append(gc.isenabled())
        return real_build(*args)

    monkeypatch.setattr(stages, "build", spying_build)
    was = gc.isenabled()
    try:
        gc.enable()
        tilelab.compile(add, signature=SIG, constants={"BLOCK": 32}, target="interpret", cache=False)
        assert seen == [False] and gc.isenabled()
        gc.disable()  # a caller that turned it off keeps it off
        tilelab.compile(add, signature=SIG, constants={"BLOCK": 64}, target="interpret", cache=False)
        assert seen == [False, False] and not gc.isenabled()
        gc.enable()
        with build.collector_paused():  # nested (another thread's compile): on again at the outer end only
            with build.collector_paused():
                assert not gc.isenabled()
            assert not gc.isenabled()
        assert gc.isenabled()
    finally:
        if was:
            gc.enable()
        else:
            gc.disable()


def test_set_allocator_keeps_a_callable_and_refuses_anything_else():
    from tilelab.runtime.api import allocator

    def alloc(size, alignment, stream):
        return bytearray(size)

    tilelab.set_allocator(alloc)
    assert allocator() is alloc
    with pytest.raises(LaunchError, match="set_allocator: expected a callable"):
        tilelab.set_allocator(64)
    tilelab.set_allocator(None)
    assert allocator() is None


@pytest.mark.parametrize("target", ["cpu", "cuda:sm_90a", "amd:gfx942"])
def test_a_compile_leaves_no_llvm_module_to_the_cyclic_collector(target):
    """Once LLVM has the lowered module's text, the ``llvmlite`` module is cut apart (backends/common/release.py)
    and reference counting frees it: no instruction or block of it waits for the cyclic collector (a few emptied
    shells may, held by the lowering's own objects)."""
    import gc

    from llvmlite import ir

    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        ck = tilelab.compile(add, signature=SIG, constants={"BLOCK": 128}, target=target, cache=False)
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        left = [o for o in gc.garbage if isinstance(o, (ir.Instruction, ir.Block)) and vars(o)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was:
            gc.enable()
    assert ck.asm["llir"] and left == []
