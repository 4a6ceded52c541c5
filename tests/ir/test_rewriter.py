"""The rewriter: insertion points, replace, erase, clone, move, ancestors; uids and use-lists kept right."""

import pytest

from tilelab.compiler.ir import ops
from tilelab.compiler.ir.core import Loc, Module
from tilelab.compiler.ir.rewriter import Rewriter
from tilelab.compiler.ir.types import f32, i32
from tilelab.compiler.ir.verifier import check_uses, verify

LOC = Loc("k.py", 3, 4)


def _loop_kernel():
    """``k(n, x)``: a loop that adds ``x`` to a carried value, then prints it."""
    func = ops.FuncOp("k", [i32, f32], [], ["n", "x"])
    n, x = func.args
    rw = Rewriter(func.body, LOC)
    zero, one = rw.add(ops.ConstantOp(0, i32)), rw.add(ops.ConstantOp(1, i32))
    loop = rw.insert(ops.ForOp(zero, n, one, [x]))
    with rw.at_end(loop.body):
        acc = loop.body.args[1]
        add = rw.insert(ops.BinaryOp("add", acc, x))
        rw.insert(ops.YieldOp([add.result]))
    rw.insert(ops.PrintOp("", [loop.results[0]]))
    rw.insert(ops.ReturnOp())
    return Module([func], "k"), func, loop, add


def test_insertion_points_keep_order_and_location():
    module, func, loop, add = _loop_kernel()
    rw = Rewriter(loc=Loc("k.py", 9, 0))
    with rw.before(add):
        a = rw.insert(ops.ConstantOp(2.0, f32))
        b = rw.insert(ops.ConstantOp(3.0, f32))
    with rw.after(add):
        c = rw.insert(ops.ConstantOp(4.0, f32))
    with rw.at_start(loop.body):
        d = rw.insert(ops.ConstantOp(5.0, f32))
    assert loop.body.ops[:5] == [d, a, b, add, c]
    assert a.loc == Loc("k.py", 9, 0)
    verify(module)


def test_replace_op_moves_uses_and_erases():
    module, func, loop, add = _loop_kernel()
    sub = Rewriter.insert_before(add, ops.BinaryOp("sub", add.operands[0], add.operands[1]))
    Rewriter.replace_op(add, sub)
    assert add.parent is None and loop.body.terminator.operands == [sub.result]
    assert not any(add in v.users for v in sub.operands)  # the erased op dropped its uses
    verify(module)


def test_erase_refuses_an_op_still_used():
    module, func, loop, add = _loop_kernel()
    with pytest.raises(ValueError, match="used by scf.yield"):
        Rewriter.erase(add)


def test_erasing_a_region_op_drops_the_uses_inside():
    module, func, loop, add = _loop_kernel()
    x = func.args[1]
    printer = func.body.ops[-2]
    Rewriter.erase(printer)
    Rewriter.erase(loop)
    assert x.users == []  # the add inside the loop used x
    verify(module)


def test_clone_gets_new_uids_and_maps_operands():
    module, func, loop, add = _loop_kernel()
    mapping = {}
    copy = Rewriter.clone(loop, mapping)
    assert copy.uid != loop.uid
    inner = copy.body.ops[0]
    assert inner.uid != add.uid and inner.operands[0] is copy.body.args[1]
    assert mapping[loop.results[0]] is copy.results[0]
    Rewriter.insert_after(loop, copy)
    verify(module)


def test_move_keeps_the_uid_and_uses():
    module, func, loop, add = _loop_kernel()
    mul = Rewriter.insert_before(add, ops.BinaryOp("mul", func.args[1], func.args[1]))
    uid = mul.uid
    Rewriter.move_before(mul, loop)
    assert mul.uid == uid and mul.parent is func.body and func.args[1].users.count(mul) == 1
    verify(module)


def test_ancestor_of_type():
    module, func, loop, add = _loop_kernel()
    assert add.ancestor(ops.ForOp) is loop and Rewriter.ancestor(add, ops.FuncOp) is func
    assert loop.ancestor(ops.ForOp) is None and add.parent_op is loop
    assert loop.is_ancestor_of(add) and not add.is_ancestor_of(loop)


def test_inline_block_before():
    module, func, loop, add = _loop_kernel()
    cond = Rewriter.insert_before(loop, ops.ConstantOp(True, ops.i1))
    branch = Rewriter.insert_before(loop, ops.IfOp(cond.result, [f32]))
    then = Rewriter(branch.then_block)
    neg = then.insert(ops.UnaryOp("neg", func.args[1]))
    then.insert(ops.YieldOp([neg.result]))
    Rewriter(branch.else_block).insert(ops.YieldOp([func.args[1]]))
    values = Rewriter.inline_block_before(branch.then_block, branch)
    Rewriter.replace_op(branch, values)
    assert neg.parent is func.body
    check_uses(module)
    verify(module)
