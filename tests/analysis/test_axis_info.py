"""Axis info on kernels built with the IR builder, checked by hand and on random concrete values."""

import pytest

from tilelab.compiler import ir
from tilelab.compiler.analysis import analyze
from tilelab.compiler.analysis.memory_access import vector_width
from tilelab.compiler.ir import types as T

from .ir_eval import check_facts, evaluate
from .ir_kit import Kit


def vector_add(x_div=16, n_div=16, stride=1):
    k = Kit("add", divisibility={"x": x_div, "n": n_div}, x="*fp32", n="i32")
    offs = k.bin("add", k.bin("mul", k.pid(), 1024), k.arange(0, 1024))
    if stride != 1:
        offs = k.bin("mul", offs, stride)
    mask = k.cmp("lt", offs, k.arg["n"])
    ptr = k.addptr(k.arg["x"], offs)
    k.load(ptr, mask=mask)
    return k.done(), offs, ptr, mask


def random_args(module, rng):
    """Launch values honouring ``arg_divisibility`` (pointers: byte addresses)."""
    divs = module.kernel.attrs["arg_divisibility"]
    return [int(rng.integers(1, 1 << 20)) * d for d in divs]


def check_on_random_values(rng, module, n=5):
    info = analyze(module)
    checked = 0
    for _ in range(n):
        env = evaluate(module, random_args(module, rng), pid=int(rng.integers(0, 1000)))
        for value, concrete in env.items():
            if value in info and value.type.shape:
                elem = value.type.element
                check_facts(info[value], concrete, step=elem.pointee.itemsize if elem.is_pointer else 1)
                checked += 1
    assert checked > 0


def test_vector_add_offsets_are_contiguous_and_aligned(rng):
    module, offs, ptr, mask = vector_add()
    info = analyze(module)
    assert (info[offs].contiguity, info[offs].divisibility) == ((1024,), (1024,))
    assert (info[ptr].contiguity, info[ptr].divisibility, info[ptr].constancy) == ((1024,), (16,), (1,))
    assert vector_width(info[ptr], 4) == 4 and vector_width(info[ptr], 4, mask=info[mask]) == 4
    check_on_random_values(rng, module)


def test_unaligned_pointer_loads_scalars():
    module, _, ptr, _ = vector_add(x_div=1)
    info = analyze(module)
    assert info[ptr].divisibility == (1,) and vector_width(info[ptr], 4) == 1


def test_stride_two_is_not_contiguous(rng):
    module, offs, ptr, _ = vector_add(stride=2)
    info = analyze(module)
    assert info[offs].contiguity == (1,) and info[ptr].contiguity == (1,)
    assert vector_width(info[ptr], 4) == 1
    check_on_random_values(rng, module)


@pytest.mark.parametrize("n_div,mask_runs,width", [(16, 16, 4), (1, 1, 1)])
def test_masked_tail_limits_the_vector(n_div, mask_runs, width, rng):
    module, _, ptr, mask = vector_add(n_div=n_div)
    info = analyze(module)
    assert info[mask].constancy == (mask_runs,)
    assert vector_width(info[ptr], 4, mask=info[mask]) == width
    check_on_random_values(rng, module)


def test_row_major_2d_tile(rng):
    k = Kit("copy", divisibility={"x": 16, "stride": 16}, x="*fp16", stride="i32")
    rows = k.expand(k.bin("mul", k.arange(0, 32), k.arg["stride"]), 1)
    cols = k.expand(k.arange(0, 64), 0)
    offs = k.bin("add", k.broadcast(rows, [32, 64]), k.broadcast(cols, [32, 64]))
    ptr = k.addptr(k.arg["x"], offs)
    module = k.done()
    info = analyze(module)
    assert info[offs].contiguity == (1, 64) and info[offs].divisibility == (1, 16)
    assert info[ptr].contiguity == (1, 64) and info[ptr].divisibility == (2, 16)
    assert vector_width(info[ptr], 2, dim=1) == 8
    check_on_random_values(rng, module)


def test_division_and_remainder_by_constants(rng):
    k = Kit("idx", divisibility={"n": 16}, n="i32")
    offs = k.bin("add", k.bin("mul", k.pid(), 1024), k.arange(0, 1024))
    quotient, rest = k.bin("div", offs, 16), k.bin("rem", offs, 64)
    odd_rest = k.bin("rem", offs, 3)
    shifted, masked = k.bin("shr", offs, 3), k.bin("and", offs, 31)
    scaled = k.bin("shl", offs, 2)
    module = k.done()
    info = analyze(module)
    assert info[quotient].constancy == (16,) and info[quotient].contiguity == (1,)
    assert (info[rest].contiguity, info[rest].divisibility) == ((64,), (64,))
    assert info[odd_rest].contiguity == (1,)
    assert info[shifted].constancy == (8,)
    assert info[masked].contiguity == (32,)
    assert (info[scaled].contiguity, info[scaled].divisibility) == ((1,), (4,))
    check_on_random_values(rng, module)


def test_hints_override_the_facts():
    k = Kit("hinted", divisibility={"x": 16}, x="*fp32", start="i32")
    start = k.hint(k.arg["start"], "multiple_of", 8)
    offs = k.hint(k.bin("add", k.splat(start, [128]), k.arange(0, 128)), "max_contiguous", 128)
    ptr = k.addptr(k.arg["x"], offs)
    module = k.done()
    info = analyze(module)
    assert info[start].divisibility == (8,)
    assert info[offs].contiguity == (128,) and info[ptr].divisibility == (16,)
    assert vector_width(info[ptr], 4) == 4


def test_select_and_constants_fold(rng):
    k = Kit("sel", n="i32")
    offs = k.arange(0, 256)
    half = k.cmp("lt", offs, 128)
    picked = k.one(ir.SelectOp(half, offs, k.bin("add", offs, 512)))
    three = k.bin("add", k.const(1), k.const(2))
    module = k.done()
    info = analyze(module)
    assert info[half].constancy == (128,)
    assert info[picked].contiguity == (128,) and info[picked].divisibility == (128,)
    assert info[three].constant == 3
    check_on_random_values(rng, module)


def test_loop_carried_pointer_keeps_its_alignment():
    k = Kit("walk", divisibility={"x": 16, "n": 16}, x="*fp32", n="i32")
    ptr0 = k.addptr(k.arg["x"], k.arange(0, 128))
    zero, step = k.const(0), k.const(128)
    loop = k.b.insert(ir.ForOp(zero, k.arg["n"], step, [ptr0, zero]))
    with k.b.at_end(loop.body):
        p, count = loop.body.args[1:]
        k.load(p)
        nxt = k.addptr(p, k.const(128, [128]))
        k.op(ir.YieldOp([nxt, k.bin("add", count, 1)]))
    module = k.done()
    info = analyze(module)
    carried, counter = loop.body.args[1:]
    assert info[carried].contiguity == (128,) and info[carried].divisibility == (16,)
    assert info[loop.results[0]].divisibility == (16,)
    assert info[counter].constant is None and info[counter].divisibility == (1,)
    assert info[loop.induction_var].divisibility == (128,)


def test_loop_that_breaks_alignment_reaches_a_fixpoint():
    k = Kit("drift", divisibility={"x": 16}, x="*fp32", n="i32")
    ptr0 = k.addptr(k.arg["x"], k.arange(0, 64))
    loop = k.b.insert(ir.ForOp(k.const(0), k.arg["n"], k.const(1), [ptr0]))
    with k.b.at_end(loop.body):
        (p,) = loop.body.args[1:]
        k.op(ir.YieldOp([k.addptr(p, k.const(1, [64]))]))  # one element further each time
    module = k.done()
    info = analyze(module)
    assert info[loop.body.args[1]].divisibility == (4,) and info[loop.body.args[1]].contiguity == (64,)


def test_loads_and_unknown_ops_are_pessimistic():
    k = Kit("ld", divisibility={"x": 16}, x="*i32")
    loaded = k.load(k.addptr(k.arg["x"], k.arange(0, 64)))
    module = k.done()
    info = analyze(module)
    assert (info[loaded].contiguity, info[loaded].divisibility, info[loaded].constancy) == ((1,), (1,), (1,))


def test_if_results_meet_both_branches():
    k = Kit("branch", divisibility={"x": 16}, x="*fp32", flag="i1")
    offs = k.arange(0, 64)
    op = k.b.insert(ir.IfOp(k.arg["flag"], [offs.type]))
    with k.b.at_end(op.then_block):
        k.op(ir.YieldOp([k.bin("add", offs, 64)]))
    with k.b.at_end(op.else_block):
        k.op(ir.YieldOp([k.bin("add", offs, 8)]))
    module = k.done()
    info = analyze(module)
    assert info[op.results[0]].contiguity == (64,) and info[op.results[0]].divisibility == (8,)


def test_while_carried_value_meets_the_body():
    k = Kit("spin", n="i32")
    start = k.bin("mul", k.arange(0, 32), 4)
    loop = k.b.insert(ir.WhileOp([start]))
    with k.b.at_end(loop.before):
        (v,) = loop.before.args
        reduced = k.b.insert(ir.ReduceOp([v], 0, [T.i32]))
        with k.b.at_end(reduced.combine):
            k.op(ir.ReduceReturnOp([k.bin("max", *reduced.combine.args)]))
        k.op(ir.ConditionOp(k.cmp("lt", reduced.result, k.arg["n"]), [v]))
    with k.b.at_end(loop.after):
        k.op(ir.YieldOp([k.bin("add", loop.after.args[0], 2)]))
    module = k.done()
    info = analyze(module)
    assert info[loop.before.args[0]].divisibility == (2,) and info[loop.results[0]].divisibility == (2,)
