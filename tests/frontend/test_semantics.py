"""Result types of operators in built kernels: division, remainders, pointers, casts, dot."""

import numpy as np
import pytest

import tilelab.language as tl
from tilelab.compiler.frontend import build_module
from tilelab.compiler.interpreter import run_kernel
from tilelab.compiler.ir import print_module, verify
from tilelab.compiler.ir.ops import DotOp
from tilelab.compiler.ir.types import PointerType, f16, f32, i32

from . import snippets


def ir_of(fn, sig=None):
    sig = sig or {"x_ptr": PointerType(f16), "i_ptr": PointerType(i32), "n": i32}
    m = build_module(fn, sig, {"B": 16})
    verify(m)
    return print_module(m, locs=False)


@pytest.mark.parametrize(
    "fn, expected",
    [
        (snippets.int_truediv, ("arith.fdiv", "tensor<16xf32>")),
        (snippets.int_floordiv, "arith.div"),
        (snippets.int_mod, "arith.rem"),
        (snippets.half_times_float_literal, ("arith.mul", "tensor<16xf16>")),
        (snippets.int_times_float_literal, ("arith.mul", "tensor<16xf32>")),
        (snippets.pointer_minus_int, "math.neg"),
        (snippets.bitcast, "tt.bitcast"),
        (snippets.dot_f16, "tt.dot"),
        (snippets.where_weak, "arith.select"),
        (snippets.argmin_keep, "tensor<16x1xi32>"),
        (snippets.shapes, "tt.trans"),
        (snippets.atomics, "tt.atomic_rmw"),
        (snippets.histogram, ("tt.histogram %5, %7", "tensor<16xi32>")),
    ],
)
def test_semantics(fn, expected):
    text = ir_of(fn)
    if isinstance(expected, tuple):
        op, rtype = expected
        assert any(op in line and line.endswith(rtype) for line in text.splitlines()), text
    else:
        assert expected in text


def test_builtin_outside_kernel_raises():
    with pytest.raises(RuntimeError, match="inside a @jit kernel"):
        tl.program_id(0)


def test_dtype_surface():
    assert tl.float16.is_floating() and tl.float16.primitive_bitwidth == 16
    assert tl.pointer_type(tl.float32).element_ty == tl.float32
    assert tl.uint8.is_int_unsigned() and not tl.int8.is_int_unsigned()
    assert tl.cdiv(10, 4) == 3
    block = tl.block_type(tl.float16, [16, 32])
    assert block.is_block() and block.scalar == tl.float16 and block.shape == (16, 32) and block.numel == 512
    assert block == tl.block_type(tl.float16, [16, 32]) and block != tl.block_type(tl.float16, [32, 16])
    assert block != tl.float16


def test_loop_scalars_widen_to_float(rng):
    """An int literal that a loop body adds floats to is carried as f32 (the loop is built again)."""
    sig = {"x_ptr": PointerType(f32), "i_ptr": PointerType(i32), "n": i32}
    m = build_module(snippets.widened_loop_scalars, sig, {"B": 16})
    verify(m)
    text = print_module(m, locs=False)
    assert "scf.for" in text and "scf.while" in text
    n = int(rng.integers(3, 20))
    out = np.full(2, np.nan, np.float32)
    run_kernel(m, (1,), [out, np.zeros(1, np.int32), n])
    np.testing.assert_array_equal(out, [0.5 * n, 1.5 * -(-n // 1.5)])


def test_tl_math_shares_the_core_builtins():
    """``tl.math.fma`` and ``tl.fma`` are one function (Triton exposes both names)."""
    for name in ("fma", "umulhi", "fdiv", "div_rn"):
        assert getattr(tl.math, name) is getattr(tl, name)


@pytest.mark.parametrize(
    "operand, out_dtype, result",
    [("fp16", "float16", "f16"), ("fp8e4nv", "float16", "f16"), ("fp8e5", "float32", "f32"), ("fp32", "float16", "f32"),
     ("bf16", "float16", "f32"), ("fp16", None, "f32")],
)  # fmt: skip
def test_dot_result_types_follow_triton(operand, out_dtype, result):
    """f16 and fp8 operands sum into ``out_dtype`` (f32 or f16); f32 and bf16 operands into f32 whatever it says."""

    def kernel(a_ptr, c_ptr, OUT: tl.constexpr):
        r = tl.arange(0, 16)
        a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
        c = tl.dot(a, a) if OUT is None else tl.dot(a, a, out_dtype=getattr(tl, OUT))
        tl.store(c_ptr + r[:, None] * 16 + r[None, :], c.to(tl.float32))

    module = build_module(kernel, {"a_ptr": f"*{operand}", "c_ptr": "*fp32"}, {"OUT": out_dtype})
    (dot,) = [op for op in module.walk() if isinstance(op, DotOp)]
    assert dot.result.type.element.name == result
