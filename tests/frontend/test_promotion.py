"""Triton's promotion table, checked on the pure rules and on built IR."""

import pytest

from tilelab.compiler.frontend.errors import SemanticError
from tilelab.compiler.frontend.promotion import computation_type, python_scalar_type
from tilelab.compiler.ir.types import bf16, f16, f32, f64, fp8e4nv, fp8e5, i1, i8, i16, i32, i64, u8, u32, u64

TABLE = [
    # (a, a_weak, b, b_weak, div_or_mod, expected)
    (f64, False, f32, False, False, f64),
    (f32, False, f16, False, False, f32),
    (f16, False, f16, False, False, f16),
    (f16, False, bf16, False, False, f32),
    (bf16, False, bf16, False, False, bf16),
    (bf16, False, i32, False, False, f32),
    (f16, False, i32, False, False, f16),
    (i32, False, f32, False, False, f32),
    (f16, False, f16, False, True, f32),
    (i8, False, i16, False, False, i16),
    (i32, False, u32, False, False, u32),
    (i64, False, u32, False, False, i64),
    (u8, False, i32, False, False, i32),
    (fp8e4nv, False, fp8e5, False, False, f16),
    # weak Python scalars
    (f16, False, f32, True, False, f16),
    (i32, True, f16, False, False, f16),
    (i8, False, i32, True, False, i8),
    (i32, False, f32, True, False, f32),
    (u32, False, i32, True, False, u32),
    (f16, False, f32, True, True, f32),
    (i1, False, i32, True, False, i32),
]


@pytest.mark.parametrize("a, aw, b, bw, div, expected", TABLE)
def test_computation_type(a, aw, b, bw, div, expected):
    assert computation_type(a, aw, b, bw, div) == expected
    assert computation_type(b, bw, a, aw, div) == expected


def test_division_with_mixed_signedness_is_an_error():
    with pytest.raises(SemanticError, match="different signedness"):
        computation_type(i32, False, u32, False, True)


@pytest.mark.parametrize(
    "value, expected",
    [(True, i1), (3, i32), (-(2**31), i32), (2**31, u32), (2**40, i64), (2**63, u64), (1.5, f32)],
)
def test_python_scalar_types(value, expected):
    assert python_scalar_type(value) == expected
