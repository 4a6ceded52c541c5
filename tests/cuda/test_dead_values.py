"""Unused values are dropped from the lowered LLVM module before it is printed (no GPU)."""

from __future__ import annotations

import re

from llvmlite import ir

import tilelab
import tilelab.language as tl
from tilelab.compiler.backends.common import dead_values
from tilelab.compiler.backends.common.dead_values import drop_dead_values
from tilelab.compiler.backends.cuda import kernel as cuda_kernel

I32 = ir.IntType(32)


def _function() -> tuple[ir.Function, ir.IRBuilder]:
    module = ir.Module(name="m")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I32, I32, ir.PointerType()]), "f")
    fn.args[0].name, fn.args[1].name, fn.args[2].name = "x", "y", "p"
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


def _lines(fn: ir.Function) -> list[str]:
    return [re.sub(r'"|, align \d+', "", str(i).strip()) for block in fn.blocks for i in block.instructions]


def _docstring_columns() -> tuple[list[str], list[str]]:
    """The example's two columns, split where its ``after`` heading starts, comments dropped."""
    doc = dead_values.__doc__.splitlines()
    head = next(i for i, line in enumerate(doc) if line.split() == ["before", "after"])
    col = doc[head].index("after")
    rows = doc[head + 1 : doc.index("", head)]
    strip = lambda s: re.sub(r"\s*;.*", "", s).strip()  # noqa: E731
    return [strip(r[:col]) for r in rows if strip(r[:col])], [strip(r[col:]) for r in rows if strip(r[col:])]


def test_the_docstring_example():
    fn, b = _function()
    x, _, p = fn.args
    a = b.add(x, ir.Constant(I32, 1), name="a")
    c = b.add(x, ir.Constant(I32, 2), name="b")
    b.mul(c, ir.Constant(I32, 3), name="c")
    b.store(a, p)
    before, after = _docstring_columns()
    assert _lines(fn) == before
    assert drop_dead_values(fn) == 2
    assert _lines(fn) == after


def test_what_has_effects_or_may_trap_stays_unused():
    fn, b = _function()
    x, y, p = fn.args
    b.sdiv(x, y, name="quotient")  # may trap: LLVM keeps it too
    b.load(p, typ=I32, name="loaded")
    callee = ir.Function(fn.module, ir.FunctionType(I32, [I32]), "g")
    b.call(callee, [x], name="called")
    b.ret_void()
    kept = _lines(fn)
    assert drop_dead_values(fn) == 0 and _lines(fn) == kept


def test_a_value_used_by_a_dead_and_a_live_one_stays():
    fn, b = _function()
    x, y, p = fn.args
    shared = b.add(x, y, name="shared")
    b.mul(shared, y, name="dead")
    b.store(b.sub(shared, y, name="live"), p)
    assert drop_dead_values(fn) == 1
    assert [s.split(" =")[0] for s in _lines(fn)] == ["%shared", "%live", "store i32 %live, ptr %p"]


def test_a_phi_keeps_its_incoming_values():
    fn, b = _function()
    x, y, _ = fn.args
    loop, done = fn.append_basic_block("loop"), fn.append_basic_block("done")
    step = b.add(x, y, name="step")
    b.branch(loop)
    b.position_at_end(loop)
    phi = b.phi(I32, name="i")
    nxt = b.add(phi, step, name="next")
    phi.add_incoming(x, fn.blocks[0])
    phi.add_incoming(nxt, loop)
    b.cbranch(b.icmp_signed("<", nxt, y, name="more"), loop, done)
    b.position_at_end(done)
    b.ret_void()
    kept = _lines(fn)
    assert drop_dead_values(fn) == 0 and _lines(fn) == kept


@tilelab.jit
def copy_rows(x_ptr, y_ptr, stride, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    tl.store(y_ptr + rows[:, None] * stride + cols[None, :], tl.load(x_ptr + rows[:, None] * stride + cols[None, :]))


SIG = {"x_ptr": "*i8", "y_ptr": "*i8", "stride": "i32"}


def _compile(**kw):
    return tilelab.compile(
        copy_rows, signature=SIG, constants={"BM": 64, "BN": 64}, target="cuda:sm_90a", cache=False,
        divisibility=dict.fromkeys(SIG, 16), **kw,
    )  # fmt: skip


def test_a_16_byte_int8_copy_hands_llvm_no_unused_address(monkeypatch):
    """Its loads and stores read one element's address in sixteen; the other fifteen are not printed."""
    seen = {}
    build = cuda_kernel.build_llvm_module

    def spy(*args, **kw):
        llmod, lw = build(*args, **kw)
        fn = llmod.get_global("copy_rows")
        seen["left"] = drop_dead_values(fn)
        seen["geps"] = sum(isinstance(i, ir.GEPInstr) for block in fn.blocks for i in block.instructions)
        return llmod, lw

    monkeypatch.setattr(cuda_kernel, "build_llvm_module", spy)
    ck = _compile()
    assert seen["left"] == 0  # nothing unused was left for a second sweep
    assert seen["geps"] <= 2 * 64 * 64 // (128 * 16) + 8  # one address per 16-byte access, a few besides
    assert ck.asm["ptx"].count("ld.global.v4.b32") == 2 and ck.asm["ptx"].count("st.global.v4.b32") == 2


def test_the_optimized_ir_is_the_same_without_the_drop(monkeypatch):
    with_drop = _compile().asm["llir"]
    monkeypatch.setattr(cuda_kernel, "drop_dead_values", lambda fn: 0)
    assert _compile().asm["llir"] == with_drop
