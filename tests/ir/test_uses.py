"""Use-lists: every operand change updates them, and the checker catches one that went stale."""

import pytest

from tilelab.compiler.ir import ops
from tilelab.compiler.ir.core import Module, Value, VerificationError
from tilelab.compiler.ir.rewriter import Rewriter
from tilelab.compiler.ir.types import f32, i32
from tilelab.compiler.ir.uses import Use
from tilelab.compiler.ir.verifier import check_uses, verify


def test_construction_records_uses():
    x, y = Value(f32), Value(f32)
    add = ops.BinaryOp("add", x, x)
    assert x.users == [add] and x.num_uses == 2 and not y.has_uses()
    assert x.uses == [Use(add, 0), Use(add, 1)]
    assert not x.has_one_use()


def test_every_operand_edit_updates_the_uses():
    x, y, z = Value(f32), Value(f32), Value(f32)
    op = ops.PrintOp("", [x, y])
    op.operands[1] = z  # set
    assert not y.has_uses() and z.users == [op]
    op.operands.append(y)  # append
    op.operands.insert(0, y)  # insert
    assert y.num_uses == 2
    assert op.operands.pop() is y  # pop
    op.operands.remove(x)  # remove
    assert not x.has_uses()
    op.operands += [x, x]  # in-place extend
    assert x.num_uses == 2
    del op.operands[-1]  # delete
    op.operands[0:2] = [x]  # slice assignment
    assert op.operands == [x, x] and x.num_uses == 2 and not y.has_uses() and not z.has_uses()
    op.operands = [z]  # wholesale
    assert not x.has_uses() and z.has_one_use()


def test_replace_all_uses_with():
    x, y = Value(f32), Value(f32)
    a, b = ops.BinaryOp("add", x, x), ops.UnaryOp("neg", x)
    x.replace_all_uses_with(y)
    assert not x.has_uses() and a.operands == [y, y] and b.operands == [y] and y.num_uses == 3
    y.replace_uses_if(x, lambda op: op is b)
    assert b.operands == [x] and a.operands == [y, y]


def _kernel():
    func = ops.FuncOp("k", [f32], [], ["x"])
    rw = Rewriter(func.body)
    (x,) = func.args
    neg = rw.insert(ops.UnaryOp("neg", x))
    add = rw.insert(ops.BinaryOp("add", neg.result, x))
    rw.insert(ops.PrintOp("", [add.result]))
    rw.insert(ops.ReturnOp())
    return Module([func], "k"), neg, add


def test_check_uses_accepts_consistent_ir():
    module, _, _ = _kernel()
    verify(module)  # the verifier runs check_uses too
    check_uses(module)


def test_check_uses_catches_an_op_dropped_without_its_references():
    module, neg, add = _kernel()
    add.parent.remove(add)  # detached, not erased: it still holds its uses
    add.results[0].replace_all_uses_with(neg.result)
    with pytest.raises(VerificationError, match="not in the IR"):
        check_uses(module)


def test_check_uses_catches_operands_edited_behind_the_list():
    module, neg, add = _kernel()
    list.__setitem__(add.operands, 0, module.kernel.args[0])  # bypasses the use-list
    with pytest.raises(VerificationError, match="use-list of"):
        check_uses(module)


def test_an_unused_constant_has_no_uses():
    c = ops.ConstantOp(1, i32)
    assert not c.result.has_uses() and c.result.users == []
