"""FLOP and byte counts from the IR and the grid."""

import pytest

from tilelab.compiler import ir
from tilelab.compiler.analysis import count_flops_bytes
from tilelab.compiler.ir import types as T

from .ir_kit import Kit


def vector_add_module(block):
    k = Kit("add", x="*fp32", y="*fp32", out="*fp32", n="i32")
    offs = k.bin("add", k.bin("mul", k.pid(), block), k.arange(0, block))
    mask = k.cmp("lt", offs, k.arg["n"])
    x = k.load(k.addptr(k.arg["x"], offs), mask=mask)
    y = k.load(k.addptr(k.arg["y"], offs), mask=mask)
    k.store(k.addptr(k.arg["out"], offs), k.bin("add", x, y), mask=mask)
    return k.done()


def test_vector_add_is_one_flop_per_12_bytes(rng):
    block = int(rng.choice([128, 256, 1024]))
    programs = int(rng.integers(1, 50))
    cost = count_flops_bytes(vector_add_module(block), grid=(programs,))
    n = block * programs
    assert (cost.flops, cost.load_bytes, cost.store_bytes) == (n, 8 * n, 4 * n)
    assert cost.intensity == pytest.approx(1 / 12) and cost.programs == programs


def matmul_module(bm, bn, bk, k_const=None):
    """acc += dot(a, b) in a loop over K; K a constant or the ``K`` argument."""
    k = Kit("mm", a="*fp16", b="*fp16", c="*fp32", K="i32")
    a_ptr = k.splat(k.arg["a"], [bm, bk])
    b_ptr = k.splat(k.arg["b"], [bk, bn])
    acc0 = k.const(0.0, [bm, bn], T.f32)
    upper = k.const(k_const) if k_const is not None else k.arg["K"]
    k.at(7)
    loop = k.b.insert(ir.ForOp(k.const(0), upper, k.const(bk), [acc0]))
    with k.b.at_end(loop.body):
        acc = loop.body.args[1]
        dot = k.one(ir.DotOp(k.load(a_ptr), k.load(b_ptr), acc))
        k.op(ir.YieldOp([dot]))
    k.store(k.splat(k.arg["c"], [bm, bn]), loop.results[0])
    return k.done()


def test_dot_in_a_constant_loop():
    cost = count_flops_bytes(matmul_module(64, 32, 16, k_const=128), grid=(2, 3))
    per_program = 2 * 64 * 32 * 128
    assert cost.flops == 6 * per_program
    assert cost.load_bytes == 6 * 8 * (64 * 16 + 16 * 32) * 2
    assert cost.store_bytes == 6 * 64 * 32 * 4 and not cost.assumptions


def test_loop_bound_from_a_runtime_argument():
    module = matmul_module(32, 32, 32)
    assert count_flops_bytes(module, args={"K": 256}).flops == 2 * 32 * 32 * 256
    guessed = count_flops_bytes(module)
    assert guessed.flops == 2 * 32 * 32 * 32 and guessed.assumptions == [
        "line 7: loop trip count unknown, counted once"
    ]


def test_float_reduction_counts_its_combine():
    k = Kit("rowsum", x="*fp32", out="*fp32")
    x = k.load(k.splat(k.arg["x"], [16, 64]))
    red = k.b.insert(ir.ReduceOp([x], 1, [T.tensor([16], T.f32)]))
    with k.b.at_end(red.combine):
        a, b = red.combine.args
        k.op(ir.ReduceReturnOp([k.one(ir.BinaryOp("add", a, b))]))
    k.store(k.splat(k.arg["out"], [16]), red.results[0])
    cost = count_flops_bytes(k.done(), grid=(3,))
    assert cost.flops == 3 * (16 * 64 - 16) and cost.bytes == 3 * (16 * 64 * 4 + 16 * 4)
