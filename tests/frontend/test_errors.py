"""The error catalogue: each bad kernel gives one short message naming its line."""

import inspect

import pytest

from tilelab.compiler.frontend import CompilationError, build_module
from tilelab.compiler.ir.types import PointerType, f16, i32

from . import snippets

CASES = [
    ("err_shapes", 3, "incompatible shapes for +: [16] and [32]"),
    ("err_undefined", 1, "name 'undefined_name' is not defined"),
    ("err_try", 1, "unsupported construct: try"),
    ("err_with", 1, "unsupported construct: with"),
    ("err_lambda", 1, "unsupported construct: lambda"),
    ("err_break", 2, "unsupported construct: break"),
    ("err_arange_runtime", 1, "arange's end must be a compile-time integer"),
    ("err_arange_pow2", 1, "arange's length must be a power of 2, got 12"),
    ("err_reshape_runtime", 1, "shape entries must be a compile-time integer"),
    ("err_static_range", 1, "tl.static_range bounds must be compile-time integers"),
    ("err_float_bitwise", 2, "invalid operands of type f16 and i32: & needs integer operands"),
    ("err_dot_shapes", 5, "dot: incompatible shapes [16, 16] and [32, 16]"),
    ("err_dot_bf16_out", 3, "dot: out_dtype=bfloat16 is unsupported; use float32 or float16"),
    ("err_gather_shapes", 4, "gather: src [16, 16] and index [16, 32] differ in dim 1"),
    ("err_gather_float_index", 2, "gather needs src and an integer index of one rank"),
    ("err_histogram_bins", 2, "histogram's num_bins must be a power of two, got 12"),
    ("err_histogram_float", 2, "histogram needs a 1-d integer tensor, got tensor<16xf16>"),
    ("err_histogram_mask", 2, "histogram's mask must be a boolean (i1) tensor, got i32"),
    ("err_atomic_max_f16", 2, "atomic_max does not support f16"),
    ("err_mask_dtype", 1, "load's mask must be a boolean (i1) tensor, got i32"),
    ("err_load_not_pointer", 1, "load expects a pointer, got i32"),
    ("err_builtin_args", 1, "wrong arguments for tl.program_id"),
    ("err_if_types", 1, "variable 'y' has type tensor<16xf32> in the then branch but tensor<16xi32>"),
    ("err_loop_type", 2, "loop-carried variable 'acc' has type tensor<16xi32> before the loop"),
    ("err_return_in_loop", 2, "return inside a run-time for/while"),
    ("err_static_assert", 1, "static_assert failed: B too small"),
    ("err_other_without_mask", 1, "load's `other` needs a `mask`"),
    ("err_fstring", 1, "f-strings can only format compile-time values"),
    ("err_subscript", 1, "unsupported tensor index"),
    ("err_float_floordiv", 2, "// needs integer operands, got f32"),
    ("err_continue", 2, "unsupported construct: continue"),
    ("err_unsigned_negative_literal", 2, "the constant -1 is out of range for u32"),
    ("err_literal_too_wide", 2, "the constant 300 is out of range for i8 (range -128 to 127)"),
]


@pytest.mark.parametrize("name, offset, message", CASES)
def test_error_names_line(name, offset, message):
    fn = getattr(snippets, name)
    sig = {"x_ptr": PointerType(f16), "i_ptr": PointerType(i32), "n": i32}
    with pytest.raises(CompilationError) as info:
        build_module(fn, sig, {"B": 16})
    err = info.value
    first = inspect.getsourcelines(fn)[1]
    assert message in err.message
    assert err.line == first + offset
    assert str(err).startswith(f"{err.filename}:{err.line}: ")
    assert err.filename.endswith("snippets.py")
    assert "^" in str(err).splitlines()[-1]


def test_missing_argument_is_reported():
    with pytest.raises(CompilationError, match="argument 'n' has neither a type"):
        build_module(snippets.int_mod, {"x_ptr": PointerType(f16), "i_ptr": PointerType(i32)}, {"B": 16})


def test_internal_errors_are_wrapped():
    with pytest.raises(CompilationError) as info:
        build_module(snippets.err_shapes, {"x_ptr": PointerType(f16), "i_ptr": PointerType(i32), "n": i32}, {"B": 16})
    assert "Traceback" not in str(info.value)


def test_recursion_is_rejected_at_the_recursive_call():
    sig = {"x_ptr": PointerType(f16), "i_ptr": PointerType(i32), "n": i32}
    with pytest.raises(CompilationError, match="recursive call of recursive is not supported") as info:
        build_module(snippets.err_recursion, sig, {"B": 16})
    assert info.value.line == inspect.getsourcelines(snippets.recursive)[1] + 1
