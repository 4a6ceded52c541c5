"""Op traits: what each op class declares, and the queries the passes make."""

import pytest

from tilelab.compiler.ir import ops
from tilelab.compiler.ir.core import Op, Value
from tilelab.compiler.ir.traits import (
    Commutative,
    Elementwise,
    LayoutFree,
    Loop,
    MemoryRead,
    MemoryWrite,
    Pure,
    SameLayout,
    ShapeOnly,
    Terminator,
    Uniform,
)
from tilelab.compiler.ir.types import PointerType, f32, i32, tensor

ALL_OPS = [getattr(ops, n) for n in ops.__all__ if isinstance(getattr(ops, n), type)]


def test_every_op_class_declares_its_traits():
    for cls in ALL_OPS:
        assert "traits" in vars(cls) or any("traits" in vars(b) for b in cls.__mro__[1:-1] if b is not Op), cls


def test_pure_and_terminator_follow_the_traits():
    for cls in ALL_OPS:
        assert cls.pure == (Pure in cls.traits), cls
        assert cls.is_terminator == (Terminator in cls.traits), cls
    assert {c.__name__ for c in ALL_OPS if Terminator in c.traits} == {
        "YieldOp",
        "ConditionOp",
        "ReturnOp",
        "ReduceReturnOp",
    }


def test_elementwise_ops():
    names = {c.__name__ for c in ALL_OPS if Elementwise in c.traits}
    assert names == {
        "AddPtrOp",
        "BinaryOp",
        "BitcastOp",
        "CastOp",
        "CmpOp",
        "FmaOp",
        "HintOp",
        "SelectOp",
        "UnaryOp",
    }
    # every elementwise op is pure and lets a layout through; loads and stores let one through too
    for c in ALL_OPS:
        if Elementwise in c.traits:
            assert Pure in c.traits and SameLayout in c.traits, c
    assert SameLayout in ops.LoadOp.traits and SameLayout in ops.StoreOp.traits
    assert SameLayout not in ops.DotOp.traits and SameLayout not in ops.ConvertLayoutOp.traits


def test_memory_effects():
    assert MemoryRead in ops.LoadOp.traits and MemoryWrite not in ops.LoadOp.traits
    assert MemoryWrite in ops.StoreOp.traits and MemoryRead not in ops.StoreOp.traits
    assert {MemoryRead, MemoryWrite} <= ops.AtomicRMWOp.traits
    for c in ALL_OPS:
        if MemoryWrite in c.traits:
            assert Pure not in c.traits, c


def test_views_uniforms_and_loops():
    assert ShapeOnly in ops.TransOp.traits and ShapeOnly not in ops.SortOp.traits
    assert {Uniform, LayoutFree} <= ops.SplatOp.traits and Uniform not in ops.MakeRangeOp.traits
    assert Loop in ops.ForOp.traits and Loop in ops.WhileOp.traits and Loop not in ops.IfOp.traits


@pytest.mark.parametrize(
    "kind, commutative", [("add", True), ("mul", True), ("max", True), ("sub", False), ("div", False)]
)
def test_commutative_depends_on_the_kind(kind, commutative):
    a, b = Value(f32), Value(f32)
    op = ops.BinaryOp(kind, a, b)
    assert op.has_trait(Commutative) is commutative
    assert op.has_trait(Elementwise)


def test_commutative_compare():
    a, b = Value(i32), Value(i32)
    assert ops.CmpOp("eq", a, b).has_trait(Commutative)
    assert not ops.CmpOp("lt", a, b).has_trait(Commutative)


def test_defined_by():
    p = Value(PointerType(f32))
    splat = ops.SplatOp(p, tensor([16], PointerType(f32)))
    assert splat.result.defined_by(Uniform)
    assert not p.defined_by(Uniform)  # a block argument
