"""Per-op verification: every op class states its rules, and a bad op is rejected with a clear message."""

import re

import pytest

from tilelab.compiler.ir import ops
from tilelab.compiler.ir.core import Block, Module, Op, Value, VerificationError
from tilelab.compiler.ir.types import PointerType, f16, f32, i1, i32, i64, tensor
from tilelab.compiler.ir.verifier import verify

ALL_OPS = [c for c in (getattr(ops, n) for n in ops.__all__) if isinstance(c, type) and issubclass(c, Op)]


def test_every_op_class_states_its_rules():
    for cls in ALL_OPS:
        owner = next(c for c in cls.__mro__ if "_verify" in vars(c))
        assert owner is not Op, f"{cls.__name__} has no _verify"


def v(t):
    return Value(t)


T16 = tensor([16], f32)
I16 = tensor([16], i32)
P16 = tensor([16], PointerType(f32))
B16 = tensor([16], i1)


def _bad_cases():
    """(op, expected message fragment): one broken op per rule."""
    yield ops.BinaryOp("add", v(T16), v(tensor([16], f16))), "operand and result types differ"
    yield ops.BinaryOp("frobnicate", v(f32), v(f32)), "unknown binary kind"
    yield ops.CmpOp("lt", v(T16), v(tensor([32], f32))), "shapes differ"
    yield ops.CmpOp("around", v(f32), v(f32)), "unknown predicate"
    yield ops.UnaryOp("nope", v(f32)), "unknown unary kind"
    yield ops.SelectOp(v(T16), v(T16), v(T16)), "is not i1"
    yield ops.SelectOp(v(B16), v(T16), v(I16)), "arms differ"
    yield ops.FmaOp(v(i32), v(i32), v(i32)), "floats"
    yield ops.BitcastOp(v(f32), i64), "differ in width"
    yield ops.HintOp(v(I16), "guess", (16,)), "unknown hint"
    yield ops.AddPtrOp(v(I16), v(I16)), "not a pointer"
    yield ops.AddPtrOp(v(P16), v(T16)), "is not an integer"
    yield ops.LoadOp(v(I16), T16), "not a pointer"
    yield ops.LoadOp(v(P16), T16, mask=v(I16)), "is not i1"
    yield ops.StoreOp(v(P16), v(tensor([32], f32))), "shapes differ"
    yield ops.AtomicRMWOp("fizz", v(P16), v(T16)), "unknown atomic kind"
    yield ops.ConstantOp(0, f32).__class__.create([v(f32)], [f32], {"value": 0}), "expects 0 operands"
    yield ops.ProgramIdOp(3), "axis 3"
    yield ops.MakeRangeOp(0, 12, tensor([12], i32)), "not a power of two"
    yield ops.SplatOp(v(T16), tensor([16, 16], f32)), "splats a scalar"
    yield ops.SplatOp(v(i32), T16), "is not the scalar's type"
    yield ops.BroadcastOp(v(tensor([2, 1], f32)), tensor([4, 8], f32)), "does not broadcast"
    yield ops.ExpandDimsOp(v(T16), tensor([16, 2], f32), axis=1), "with a new axis"
    yield ops.ReshapeOp(v(T16), tensor([4, 8], f32)), "different numbers of elements"
    yield ops.TransOp(v(tensor([4, 8], f32)), tensor([4, 8], f32), order=(1, 0)), "permuted"
    yield ops.TransOp(v(tensor([4, 8], f32)), tensor([8, 4], f32), order=(1, 1)), "not a permutation"
    yield ops.MemDescTransOp(v(tensor([4, 8], f32)), tensor([4, 8], f32)), "permuted"
    yield ops.MemDescTransOp(v(tensor([4, 8], f32)), tensor([8, 4], f16)), "permuted"
    yield ops.FlipOp(v(T16), I16, dim=0), "operand and result types differ"
    yield ops.JoinOp(v(T16), v(I16), tensor([16, 2], f32)), "joined tiles differ"
    yield ops.SplitOp(v(tensor([16, 4], f32)), T16), "last dimension must be 2"
    yield ops.CatOp(v(T16), v(T16), T16), "do not concatenate"
    yield ops.DotOp(v(tensor([16, 8], f16)), v(tensor([16, 8], f16)), v(tensor([16, 8], f32))), "do not multiply"
    yield ops.ConvertLayoutOp(v(T16), I16), "element types differ"
    yield ops.AsyncWaitOp(0).__class__.create([], [], {"num": -1}), "non-negative"
    yield ops.ConditionOp(v(i32), []), "i1 scalar"
    yield ops.IfOp(v(i32), []), "i1 scalar"
    yield ops.AssertOp(v(P16), "x").__class__.create([], [], {"message": "x"}), "expects 1 operands"
    yield ops.BarrierOp().__class__.create([v(i32)], [], {}), "expects 0 operands"


@pytest.mark.parametrize("op, message", list(_bad_cases()), ids=lambda x: x.name if isinstance(x, Op) else None)
def test_a_bad_op_is_rejected(op, message):
    with pytest.raises(VerificationError, match=re.escape(message)) as err:
        op.verify()
    assert str(err.value).startswith(f"{op.name} at ")  # names the op and its location


def test_good_ops_pass():
    for op in [
        ops.BinaryOp("add", v(T16), v(T16)),
        ops.CmpOp("lt", v(I16), v(I16)),
        ops.SelectOp(v(B16), v(T16), v(T16)),
        ops.AddPtrOp(v(P16), v(I16)),
        ops.LoadOp(v(P16), T16, mask=v(B16), other=v(T16)),
        ops.MakeRangeOp(0, 16, I16),
        ops.SplatOp(v(f32), T16),
        ops.BroadcastOp(v(tensor([1, 8], f32)), tensor([4, 8], f32)),
        ops.ExpandDimsOp(v(T16), tensor([16, 1], f32), axis=1),
        ops.TransOp(v(tensor([4, 8], f32)), tensor([8, 4], f32), order=(1, 0)),
        ops.DotOp(v(tensor([16, 8], f16)), v(tensor([8, 32], f16)), v(tensor([16, 32], f32))),
    ]:
        op.verify()


def _loop_module(yielded: int) -> Module:
    func = ops.FuncOp("k", [i32, f32], [], ["n", "x"])
    n, x = func.args
    body = func.body
    zero = body.append(ops.ConstantOp(0, i32)).result
    one = body.append(ops.ConstantOp(1, i32)).result
    loop = body.append(ops.ForOp(zero, n, one, [x]))
    loop.body.append(ops.YieldOp([x] * yielded))
    body.append(ops.ReturnOp())
    return Module([func], "k")


def test_regions_are_checked():
    verify(_loop_module(1))
    with pytest.raises(VerificationError, match="scf.yield gives 2 values, 1 expected"):
        verify(_loop_module(2))


def test_a_function_must_return():
    func = ops.FuncOp("k", [], [])
    with pytest.raises(VerificationError, match="does not end with tt.return"):
        verify(Module([func], "k"))


def test_combine_region():
    red = ops.ReduceOp([v(T16)], 0, [f32])
    a, b = red.combine.args
    red.combine.append(ops.ReduceReturnOp([a, b]))
    with pytest.raises(VerificationError, match="tt.reduce.return gives 2 values, 1 expected"):
        red.verify()
    assert isinstance(red.combine, Block)
