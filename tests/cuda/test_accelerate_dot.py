"""accelerate-dot: mma dots get explicit conversions of A and B to the fragment layouts."""

from __future__ import annotations

import numpy as np
import pytest

from tilelab.compiler.interpreter import run_kernel
from tilelab.compiler.ir import verify
from tilelab.compiler.ir.ops import ConvertLayoutOp, DotOp
from tilelab.compiler.ir.parser import parse_module
from tilelab.compiler.layouts import blocked, dot_operand
from tilelab.compiler.passes import accelerate_dot, assign_layouts, remove_layout_conversions

DOT = """tt.func @k(%pa: !ptr<{t}>, %pb: !ptr<{t}>, %pc: !ptr<f32>) {{
  %0 = tt.make_range {{start = 0, end = 1024}} : tensor<1024xi32>
  %1 = tt.reshape %0 : tensor<32x32xi32>
  %2 = tt.splat %pa : tensor<32x32x!ptr<{t}>>
  %3 = tt.addptr %2, %1 : tensor<32x32x!ptr<{t}>>
  %4 = tt.load %3 : tensor<32x32x{t}>
  %5 = tt.splat %pb : tensor<32x32x!ptr<{t}>>
  %6 = tt.addptr %5, %1 : tensor<32x32x!ptr<{t}>>
  %7 = tt.load %6 : tensor<32x32x{t}>
  %8 = arith.constant {{value = 0.0}} : tensor<32x32xf32>
  %9 = tt.dot %4, %7, %8 : tensor<32x32xf32>
  %10 = tt.splat %pc : tensor<32x32x!ptr<f32>>
  %11 = tt.addptr %10, %1 : tensor<32x32x!ptr<f32>>
  tt.store %11, %9 : tensor<32x32xf32>
  tt.return
}}
"""


def laid_out(elem: str):
    module = parse_module(DOT.format(t=elem))
    module.kernel.attrs["num_warps"] = 4
    assign_layouts.run(module)
    remove_layout_conversions.run(module)
    return module


def test_mma_dot_operands_are_converted_right_before_the_dot():
    module = laid_out("f16")
    assert accelerate_dot.run(module)
    verify(module)
    ops = module.kernel.body.ops
    dot = next(op for op in ops if isinstance(op, DotOp))
    a, b = (ops[ops.index(dot) - 2 + i] for i in range(2))
    assert isinstance(a, ConvertLayoutOp) and isinstance(b, ConvertLayoutOp)
    acc = dot.operands[2].type.layout
    assert dot.operands[0] is a.result and a.result.type.layout == dot_operand(acc, 0, k=32)
    assert dot.operands[1] is b.result and b.result.type.layout == dot_operand(acc, 1, k=32)
    assert not accelerate_dot.run(module)  # operands already in place: nothing more to do


def test_negative_f32_dot_keeps_its_operands():
    module = laid_out("f32")
    assert not accelerate_dot.run(module)
    assert not any(isinstance(op, ConvertLayoutOp) for op in module.kernel.body.ops)


@pytest.mark.parametrize("elem", ["f16"])
def test_conversions_do_not_change_the_product(elem, rng):
    a = rng.standard_normal((32, 32)).astype(np.float16)
    b = rng.standard_normal((32, 32)).astype(np.float16)
    outs = []
    for transform in (False, True):
        module = laid_out(elem)
        if transform:
            accelerate_dot.run(module)
        c = np.zeros((32, 32), np.float32)
        run_kernel(module, grid=(1, 1, 1), args=[a, b, c])
        outs.append(c)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_allclose(outs[1], a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2, atol=1e-2)


def test_an_operand_already_converted_is_converted_from_its_source(rng):
    """``convert(convert(k))``: one trip through shared memory, the skipped conversion dropped."""
    module = laid_out("f16")
    ops = module.kernel.body.ops
    dot = next(op for op in ops if isinstance(op, DotOp))
    loaded_b = dot.operands[1]
    col = loaded_b.type.layout  # give B a detour: its load's layout -> another blocked layout -> the dot

    other = blocked([32, 32], [4, 1], [8, 4], [1, 4], [0, 1])
    assert other != col
    detour = ConvertLayoutOp(loaded_b, loaded_b.type.with_layout(other))
    module.kernel.body.insert(ops.index(dot), detour)
    dot.operands[1] = detour.result
    assert accelerate_dot.run(module)
    verify(module)
    conversions = [op for op in module.walk() if isinstance(op, ConvertLayoutOp)]
    b = dot.operands[1].defining_op
    assert b.src is loaded_b and detour not in conversions
    a_np, b_np = (rng.standard_normal((32, 32)).astype(np.float16) for _ in range(2))
    c = np.zeros((32, 32), np.float32)
    run_kernel(module, (1,), [a_np, b_np, c])
    np.testing.assert_allclose(c, a_np.astype(np.float32) @ b_np.astype(np.float32), rtol=1e-2, atol=1e-2)
