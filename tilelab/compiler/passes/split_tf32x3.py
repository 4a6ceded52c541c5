# ruff: noqa: E501  (the docstring example spells whole types)
"""A dot in ``tf32x3`` becomes three tf32 dots on the tensor cores: near-f32 sums at tensor-core speed.

Why: ``tl.dot(a, b, input_precision="tf32x3")`` asks for f32 accuracy from tf32 tensor cores (3xTF32, as
Triton and cuBLAS do it); without this pass it stayed a loop of f32 FMAs through shared memory (a 128x128x32
tile over 8 warps: 20 scalar shared loads in a loop, no tensor-core instruction; Triton issues tf32 wgmmas).

Each f32 operand ``x`` splits into ``big``, its f32 bits with the 13 low mantissa bits cleared (a tf32 value,
exact), and ``small = x - big`` (exact in f32); ``a @ b`` is then ``big_a @ big_b + (small_a @ big_b +
big_a @ small_b)``, dropping ``small_a @ small_b`` (below f32's last bit for most sums), each product read at
tf32 precision. The two small products are summed first, from zero; a NaN among them (an infinite operand,
whose ``small`` is ``inf - inf``) becomes 0 so that the large product carries the infinity, as Triton's
``F32DotTC`` does; the big product is added to that, and the dot's accumulator last.

before:
    tt.func @k(%x: !ptr<f32>, %y: !ptr<f32>) {
      %0 = tt.splat %x : tensor<64x64x!ptr<f32>>
      %1 = tt.splat %y : tensor<64x64x!ptr<f32>>
      %2 = tt.load %0 : tensor<64x64xf32>
      %3 = tt.load %1 : tensor<64x64xf32>
      %4 = arith.constant {value = 0.0} : tensor<64x64xf32>
      %5 = tt.dot %2, %3, %4 {input_precision = "tf32x3", max_num_imprecise_acc = 0} : tensor<64x64xf32>
      tt.store %0, %5 : tensor<64x64x!ptr<f32>>
      tt.return
    }

after:
    tt.func @k(%x: !ptr<f32>, %y: !ptr<f32>) {
      %0 = tt.splat %x : tensor<64x64x!ptr<f32>>
      %1 = tt.splat %y : tensor<64x64x!ptr<f32>>
      %2 = tt.load %0 : tensor<64x64xf32>
      %3 = tt.load %1 : tensor<64x64xf32>
      %4 = arith.constant {value = 0.0} : tensor<64x64xf32>
      %5 = arith.constant {value = -8192} : tensor<64x64xi32>
      %6 = tt.bitcast %2 : tensor<64x64xi32>
      %7 = arith.and %6, %5 : tensor<64x64xi32>
      %8 = tt.bitcast %7 : tensor<64x64xf32>
      %9 = arith.sub %2, %8 : tensor<64x64xf32>
      %10 = tt.bitcast %3 : tensor<64x64xi32>
      %11 = arith.and %10, %5 : tensor<64x64xi32>
      %12 = tt.bitcast %11 : tensor<64x64xf32>
      %13 = arith.sub %3, %12 : tensor<64x64xf32>
      %14 = tt.dot %9, %12, %4 {input_precision = "tf32", max_num_imprecise_acc = 0} : tensor<64x64xf32>
      %15 = tt.dot %8, %13, %14 {input_precision = "tf32", max_num_imprecise_acc = 0} : tensor<64x64xf32>
      %16 = arith.cmp ne %15, %15 : tensor<64x64xi1>
      %17 = arith.select %16, %4, %15 : tensor<64x64xf32>
      %18 = tt.dot %8, %12, %17 {input_precision = "tf32", max_num_imprecise_acc = 0} : tensor<64x64xf32>
      tt.store %0, %18 : tensor<64x64x!ptr<f32>>
      tt.return
    }

The zero accumulator starts the small products; any other is added after the three dots.
"""

from __future__ import annotations

from tilelab.compiler.ir.core import Module, Op, Value
from tilelab.compiler.ir.ops import BinaryOp, BitcastOp, CmpOp, ConstantOp, DotOp, SelectOp
from tilelab.compiler.ir.rewriter import Rewriter
from tilelab.compiler.ir.types import f32, i32

NAME = "split-tf32x3"

#: an f32's bits with the 13 mantissa bits tf32 lacks cleared (0xFFFFE000 as an i32)
TF32_BITS = -8192


def _is_zero(v: Value) -> bool:
    op = v.defining_op
    return isinstance(op, ConstantOp) and op.value == 0


def _split(rw: Rewriter, x: Value, mask: Value) -> tuple[Value, Value]:
    """``x`` as ``(big, small)``: ``big`` the tf32 value of its high bits, ``small = x - big`` (both exact)."""
    bits = rw.insert(BitcastOp(x, mask.type)).result
    big = rw.insert(BitcastOp(rw.insert(BinaryOp("and", bits, mask)).result, x.type)).result
    return big, rw.insert(BinaryOp("sub", x, big)).result


def split_dot(dot: DotOp) -> None:
    """Replace ``dot`` (tf32x3) by its three tf32 dots (see the module docstring)."""
    a, b, acc = dot.operands
    rw = Rewriter(loc=dot.loc)
    rw.set_insertion_point_before(dot)
    zero = acc if _is_zero(acc) else rw.insert(ConstantOp(0.0, acc.type)).result
    attrs = {**dot.attrs, "input_precision": "tf32"}
    mask = rw.insert(ConstantOp(TF32_BITS, a.type.with_element(i32))).result
    a_big, a_small = _split(rw, a, mask)
    if b.type.shape != a.type.shape:
        mask = rw.insert(ConstantOp(TF32_BITS, b.type.with_element(i32))).result
    b_big, b_small = _split(rw, b, mask)
    smalls = rw.insert(DotOp(a_small, b_big, zero, **attrs)).result
    smalls = rw.insert(DotOp(a_big, b_small, smalls, **attrs)).result
    nan = rw.insert(CmpOp("ne", smalls, smalls)).result
    smalls = rw.insert(SelectOp(nan, zero, smalls)).result
    out: Op = rw.insert(DotOp(a_big, b_big, smalls, **attrs))
    if not _is_zero(acc):
        out = rw.insert(BinaryOp("add", out.result, acc))
    dot.result.replace_all_uses_with(out.result)
    Rewriter.erase(dot)


def run(module: Module) -> bool:
    """Split every f32 dot in tf32x3 into three tf32 dots (see the module docstring)."""
    dots = [
        op
        for op in module.walk()
        if isinstance(op, DotOp) and op.attrs.get("input_precision") == "tf32x3" and op.operands[0].type.element == f32
    ]
    for dot in dots:
        split_dot(dot)
    return bool(dots)
