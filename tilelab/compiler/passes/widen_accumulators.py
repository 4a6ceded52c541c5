# ruff: noqa: E501  (the docstring example spells whole types)
"""Dots that accumulate in f16 accumulate in f32, on the tensor cores; a loop carries the f32 value.

Why: ``tl.dot(a, b, acc, out_dtype=tl.float16)`` (f16 or fp8 operands, an f16 accumulator:
inference kernels that keep half the accumulator registers) has no ``mma.sync`` or ``wgmma``
form among those the layouts and the lowering know, so it stayed a loop of FMAs over K
through shared memory: a 128x128x64 f16 tile compiled to 86 scalar shared loads and no
tensor-core instruction, where Triton issues ``wgmma ... .f16.f16.f16``. On Hopper and Ampere
the tensor cores multiply into f32 at the rate they multiply into f16.

Each such dot takes its accumulator widened to f32 (``tt.cast``; a constant is made again in
f32) and its result is rounded back to f16, which is the reference semantics of an f16 dot
(``interpreter.tiles.dot``: products summed in f32, the sum rounded once). A ``scf.for`` that
carries the accumulator from one such dot to the next (``acc = tl.dot(a, b, acc,
out_dtype=tl.float16)``, or ``acc += tl.dot(...)`` once canonicalize has fused the add) then
carries the f32 value instead, rounded once after the loop rather than once per iteration:
the loop keeps the tensor cores' f32 sum, as the hardware's own f16 accumulation keeps more
than f16 within an instruction, and the dot stays asynchronous (a rounding in the loop would
wait for every dot). The result differs from rounding after every iteration by at most the
roundings it skips: it is the more exact one.

before:
    tt.func @k(%a: !ptr<f16>, %n: i32) {
      %0 = arith.constant {value = 0} : i32
      %1 = arith.constant {value = 1} : i32
      %2 = tt.splat %a : tensor<64x64x!ptr<f16>>
      %3 = arith.constant {value = 0.0} : tensor<64x64xf16>
      %4 = scf.for %i = %0 to %n step %1 iter_args(%acc = %3) -> (tensor<64x64xf16>) {
        %5 = tt.load %2 : tensor<64x64xf16>
        %6 = tt.dot %5, %5, %acc {input_precision = "tf32", max_num_imprecise_acc = 0} : tensor<64x64xf16>
        scf.yield %6
      }
      tt.store %2, %4 : tensor<64x64x!ptr<f16>>
      tt.return
    }

after:
    tt.func @k(%a: !ptr<f16>, %n: i32) {
      %0 = arith.constant {value = 0} : i32
      %1 = arith.constant {value = 1} : i32
      %2 = tt.splat %a : tensor<64x64x!ptr<f16>>
      %3 = arith.constant {value = 0.0} : tensor<64x64xf32>
      %4 = scf.for %i = %0 to %n step %1 iter_args(%acc = %3) -> (tensor<64x64xf32>) {
        %5 = tt.load %2 : tensor<64x64xf16>
        %6 = tt.dot %5, %5, %acc {input_precision = "tf32", max_num_imprecise_acc = 0} : tensor<64x64xf32>
        scf.yield %6
      }
      %7 = tt.cast %4 {rounding = "rtne"} : tensor<64x64xf16>
      tt.store %2, %7 : tensor<64x64x!ptr<f16>>
      tt.return
    }
"""

from __future__ import annotations

from tilelab.compiler.ir.core import Module, Value
from tilelab.compiler.ir.ops import CastOp, ConstantOp, DotOp, ForOp, YieldOp
from tilelab.compiler.ir.rewriter import Rewriter
from tilelab.compiler.ir.types import f16, f32

from .assign_layouts import FP8

NAME = "widen-accumulators"

#: operand types whose products the tensor cores sum in f32 (and whose dot may ask for an f16 result)
NARROW_INPUTS = ("f16", *FP8)


def _narrow(dot: DotOp) -> bool:
    a, b, c = (v.type for v in dot.operands)
    return c.element.name == "f16" and a.element == b.element and a.element.name in NARROW_INPUTS


def _widened(value: Value, before) -> Value:
    """``value`` (an f16 tile) in f32, made just before the op ``before``: a constant is made again in f32."""
    wide = value.type.with_element(f32)
    src = value.defining_op
    if isinstance(src, ConstantOp):
        return Rewriter.insert_before(before, ConstantOp(src.value, wide, loc=src.loc)).result
    return Rewriter.insert_before(before, CastOp(value, wide, loc=before.loc)).result


def widen_dot(dot: DotOp) -> None:
    """``dot`` accumulates in f32: its accumulator widened before it, its result rounded to f16 after it."""
    a, b, acc = dot.operands
    wide = DotOp(a, b, _widened(acc, dot), loc=dot.loc, **dot.attrs)
    Rewriter.insert_before(dot, wide)
    rounded = Rewriter.insert_after(wide, CastOp(wide.result, dot.result.type, loc=dot.loc))
    dot.result.replace_all_uses_with(rounded.result)
    Rewriter.erase(dot)


def _carried_dot(loop: ForOp, i: int) -> tuple[Value, list[CastOp], CastOp] | None:
    """For carried value ``i`` of ``loop`` read only by widenings into one widened dot's accumulator, and
    yielded as that dot's rounded result: the body argument, its widenings and the rounding; else None."""
    arg = loop.body.args[1 + i]
    if not arg.type.is_tensor or arg.type.element != f16 or not arg.has_uses():
        return None
    widenings = arg.users
    if not all(isinstance(op, CastOp) and op.result.type.element == f32 for op in widenings):
        return None
    rounding = loop.body.terminator.operands[i].defining_op
    if not isinstance(rounding, CastOp) or rounding.parent is not loop.body:
        return None
    dot = rounding.operands[0].defining_op
    if not isinstance(dot, DotOp) or dot.operands[2].defining_op not in widenings:
        return None
    return arg, widenings, rounding


def widen_carried(loop: ForOp, i: int) -> bool:
    """Carry value ``i`` of ``loop`` in f32 when it is a widened dot's accumulator (``_carried_dot``)."""
    found = _carried_dot(loop, i)
    if found is None:
        return False
    arg, widenings, rounding = found
    loop.operands[3 + i] = _widened(loop.init_args[i], loop)
    wide = loop.init_args[i].type
    arg.type = wide
    for cast in widenings:
        cast.result.replace_all_uses_with(arg)
        Rewriter.erase(cast)
    yield_op: YieldOp = loop.body.terminator
    yield_op.operands[i] = rounding.operands[0]
    if not rounding.result.has_uses():
        Rewriter.erase(rounding)
    result = loop.results[i]
    narrow = result.type
    result.type = wide
    after = Rewriter.insert_after(loop, CastOp(result, narrow, loc=loop.loc))
    result.replace_uses_if(after.result, lambda op: op is not after)
    return True


def run(module: Module) -> bool:
    """Widen every f16 dot accumulator, then the loop-carried ones (see the module docstring)."""
    changed = False
    for func in module.funcs:
        dots = [op for op in func.walk() if isinstance(op, DotOp) and _narrow(op)]
        constants = {op.operands[2].defining_op for op in dots}
        for dot in dots:
            widen_dot(dot)
        loops = [op for op in func.walk() if isinstance(op, ForOp)] if dots else []
        for loop in loops:
            constants.update(v.defining_op for v in loop.init_args)
            for i in range(len(loop.init_args)):
                widen_carried(loop, i)
        for op in constants:  # the f16 constants made again in f32
            if isinstance(op, ConstantOp) and not op.result.has_uses():
                Rewriter.erase(op)
        changed |= bool(dots)
    return changed
