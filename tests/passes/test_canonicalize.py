"""Golden tests of the canonicalize pass: one rule per case, plus cases where it must not fire."""

from __future__ import annotations

import numpy as np
import pytest

from tilelab.compiler.ir.parser import parse_module
from tilelab.compiler.passes import canonicalize, tracing

from .support import assert_docstring_example, assert_same_values, canonical, func, run_pass


def _fold(body: str, args: str = "%x: !ptr<f32>") -> str:
    out, changed = run_pass(canonicalize, func(body, args))
    assert changed
    return out


def _unchanged(body: str, args: str = "%x: !ptr<f32>") -> None:
    text = func(body, args)
    out, changed = run_pass(canonicalize, text)
    assert not changed
    assert out == canonical(text)


def test_docstring_example():
    assert_docstring_example(canonicalize)


@pytest.mark.parametrize(
    "kind, a, b, type, expected",
    [
        ("add", 127, 1, "i8", "-128"),
        ("mul", 65535, 65535, "u16", "1"),
        ("div", -7, 2, "i32", "-3"),
        ("rem", -7, 2, "i32", "-1"),
        ("shr", -8, 1, "i32", "-4"),
        ("shr", 255, 4, "u8", "15"),
        ("xor", 6, 3, "i32", "5"),
        ("add", 0.1, 0.2, "f32", repr(float(np.float32(0.1) + np.float32(0.2)))),
        ("fdiv", 1.0, 3.0, "f16", repr(float(np.float16(1) / np.float16(3)))),
        ("sub", 3e38, -3e38, "f32", "inf"),
    ],
)
def test_fold_binary(kind, a, b, type, expected):
    out = _fold(
        f"""
        %0 = arith.constant {{value = {a}}} : {type}
        %1 = arith.constant {{value = {b}}} : {type}
        %2 = arith.{kind} %0, %1 : {type}
        tt.store %x, %2 : !ptr<{type}>
        """,
        f"%x: !ptr<{type}>",
    )
    assert f"arith.constant {{value = {expected}}} : {type}" in out
    assert f"arith.{kind}" not in out


@pytest.mark.parametrize(
    "kind, a, b", [("div", 1, 0), ("rem", 5, 0), ("shl", 1, 32), ("shr", 1, -1), ("min", -0.0, 0.0)]
)
def test_negative_fold_binary_undefined_or_target_dependent(kind, a, b):
    type = "f32" if isinstance(a, float) else "i32"
    _unchanged(
        f"""
        %0 = arith.constant {{value = {a}}} : {type}
        %1 = arith.constant {{value = {b}}} : {type}
        %2 = arith.{kind} %0, %1 : {type}
        tt.store %x, %2 : !ptr<{type}>
        """,
        f"%x: !ptr<{type}>",
    )


def test_fold_cmp_of_splat_constants():
    out = _fold(
        """
        %0 = arith.constant {value = 3} : tensor<4xi32>
        %1 = arith.constant {value = 5} : tensor<4xi32>
        %2 = arith.cmp lt %0, %1 : tensor<4xi1>
        %3 = tt.splat %x : tensor<4x!ptr<i1>>
        tt.store %3, %2 : tensor<4x!ptr<i1>>
        """,
        "%x: !ptr<i1>",
    )
    assert "arith.constant {value = true} : tensor<4xi1>" in out and "arith.cmp" not in out


def test_fold_cmp_nan_is_unordered_only_for_ne():
    out = _fold(
        """
        %0 = arith.constant {value = nan} : f32
        %1 = arith.cmp ne %0, %0 : i1
        %2 = arith.cmp eq %0, %0 : i1
        tt.store %x, %1 : !ptr<i1>
        tt.store %x, %2 : !ptr<i1>
        """,
        "%x: !ptr<i1>",
    )
    assert out.index("value = true") < out.index("value = false")


@pytest.mark.parametrize(
    "src, value, dst, expected",
    [("i32", -1, "u8", "255"), ("i32", 7, "f32", "7.0"), ("f32", -2.75, "i32", "-2"), ("f64", 0.1, "f16", None)],
)
def test_fold_cast(src, value, dst, expected):
    expected = expected or repr(float(np.float16(0.1)))
    out = _fold(
        f"""
        %0 = arith.constant {{value = {value}}} : {src}
        %1 = tt.cast %0 : {dst}
        tt.store %x, %1 : !ptr<{dst}>
        """,
        f"%x: !ptr<{dst}>",
    )
    assert f"arith.constant {{value = {expected}}} : {dst}" in out and "tt.cast" not in out


def test_negative_fold_cast_out_of_range():
    _unchanged(
        """
        %0 = arith.constant {value = 3e9} : f32
        %1 = tt.cast %0 : i32
        tt.store %x, %1 : !ptr<i32>
        """,
        "%x: !ptr<i32>",
    )


def test_fold_unary_neg_keeps_signed_zero():
    out = _fold(
        """
        %0 = arith.constant {value = 0.0} : f32
        %1 = math.neg %0 : f32
        tt.store %x, %1 : !ptr<f32>
        """
    )
    assert "value = -0.0" in out


def test_add_zero_int():
    out = _fold(
        """
        %0 = arith.constant {value = 0} : i32
        %1 = arith.add %n, %0 : i32
        tt.store %x, %1 : !ptr<i32>
        """,
        "%x: !ptr<i32>, %n: i32",
    )
    assert "tt.store %x, %n" in out and "arith.add" not in out


def test_add_negative_zero_float():
    out = _fold(
        """
        %0 = arith.constant {value = -0.0} : f32
        %1 = arith.add %0, %v : f32
        tt.store %x, %1 : !ptr<f32>
        """,
        "%x: !ptr<f32>, %v: f32",
    )
    assert "tt.store %x, %v" in out


def test_negative_add_positive_zero_float():
    """``-0.0 + 0.0`` is ``+0.0``: folding ``x + 0.0`` to ``x`` would change the sign."""
    _unchanged(
        """
        %0 = arith.constant {value = 0.0} : f32
        %1 = arith.add %v, %0 : f32
        tt.store %x, %1 : !ptr<f32>
        """,
        "%x: !ptr<f32>, %v: f32",
    )


def test_mul_one_and_div_one():
    out = _fold(
        """
        %0 = arith.constant {value = 1.0} : f32
        %1 = arith.mul %0, %v : f32
        %2 = arith.fdiv %1, %0 : f32
        tt.store %x, %2 : !ptr<f32>
        """,
        "%x: !ptr<f32>, %v: f32",
    )
    assert "tt.store %x, %v" in out


def test_mul_zero_int():
    out = _fold(
        """
        %0 = arith.constant {value = 0} : i32
        %1 = arith.mul %n, %0 : i32
        tt.store %x, %1 : !ptr<i32>
        """,
        "%x: !ptr<i32>, %n: i32",
    )
    assert "arith.mul" not in out and "arith.constant {value = 0} : i32" in out


def test_negative_mul_zero_float():
    """``NaN * 0`` is NaN and ``-1.0 * 0.0`` is ``-0.0``: float ``x * 0`` stays."""
    _unchanged(
        """
        %0 = arith.constant {value = 0.0} : f32
        %1 = arith.mul %v, %0 : f32
        tt.store %x, %1 : !ptr<f32>
        """,
        "%x: !ptr<f32>, %v: f32",
    )


def test_sub_self_int():
    out = _fold(
        """
        %0 = arith.sub %n, %n : i32
        tt.store %x, %0 : !ptr<i32>
        """,
        "%x: !ptr<i32>, %n: i32",
    )
    assert "arith.sub" not in out and "value = 0" in out


def test_negative_sub_self_float():
    _unchanged(
        """
        %0 = arith.sub %v, %v : f32
        tt.store %x, %0 : !ptr<f32>
        """,
        "%x: !ptr<f32>, %v: f32",
    )


def test_splat_of_constant_becomes_tile_constant():
    out = _fold(
        """
        %0 = arith.constant {value = 2.5} : f32
        %1 = tt.splat %0 : tensor<8xf32>
        %2 = tt.splat %x : tensor<8x!ptr<f32>>
        tt.store %2, %1 : tensor<8x!ptr<f32>>
        """
    )
    assert "%0 = arith.constant {value = 2.5} : tensor<8xf32>" in out and "tt.splat %0" not in out


def test_broadcast_of_splat_is_one_splat():
    out = _fold(
        """
        %0 = tt.splat %v : tensor<1x8xf32>
        %1 = tt.broadcast %0 : tensor<4x8xf32>
        %2 = tt.splat %x : tensor<4x8x!ptr<f32>>
        tt.store %2, %1 : tensor<4x8x!ptr<f32>>
        """,
        "%x: !ptr<f32>, %v: f32",
    )
    assert "tt.broadcast" not in out and "tt.splat %v : tensor<4x8xf32>" in out


def test_addptr_zero():
    out = _fold(
        """
        %0 = arith.constant {value = 0} : tensor<4xi32>
        %1 = tt.splat %x : tensor<4x!ptr<f32>>
        %2 = tt.addptr %1, %0 : tensor<4x!ptr<f32>>
        %3 = tt.load %2 : tensor<4xf32>
        tt.store %1, %3 : tensor<4x!ptr<f32>>
        """
    )
    assert "tt.addptr" not in out and "tt.load %0" in out


def test_select_constant_cond():
    out = _fold(
        """
        %0 = arith.constant {value = false} : i1
        %1 = arith.select %0, %a, %b : f32
        tt.store %x, %1 : !ptr<f32>
        """,
        "%x: !ptr<f32>, %a: f32, %b: f32",
    )
    assert "tt.store %x, %b" in out


@pytest.mark.parametrize("cond, taken", [("true", "%a"), ("false", "%b")])
def test_if_constant_cond_inlines_taken_branch(cond, taken):
    out = _fold(
        f"""
        %0 = arith.constant {{value = {cond}}} : i1
        %1 = scf.if %0 -> (f32) {{
          %2 = arith.mul %a, %a : f32
          tt.store %x, %a : !ptr<f32>
          scf.yield %2 : f32
        }} else {{
          %3 = arith.mul %b, %b : f32
          scf.yield %3 : f32
        }}
        tt.store %x, %1 : !ptr<f32>
        """,
        "%x: !ptr<f32>, %a: f32, %b: f32",
    )
    assert "scf.if" not in out and f"%0 = arith.mul {taken}, {taken}" in out
    assert ("tt.store %x, %a" in out) == (cond == "true")


def test_negative_if_unknown_cond():
    _unchanged(
        """
        scf.if %c {
          tt.store %x, %a : !ptr<f32>
          scf.yield
        } else {
          scf.yield
        }
        """,
        "%x: !ptr<f32>, %a: f32, %c: i1",
    )


def test_for_with_zero_trips_gives_its_initial_values():
    out = _fold(
        """
        %0 = arith.constant {value = 8} : i32
        %1 = arith.constant {value = 4} : i32
        %2 = arith.constant {value = 1} : i32
        %3 = scf.for %i = %0 to %1 step %2 iter_args(%acc = %a) -> (f32) {
          tt.store %x, %acc : !ptr<f32>
          scf.yield %acc : f32
        }
        tt.store %x, %3 : !ptr<f32>
        """,
        "%x: !ptr<f32>, %a: f32",
    )
    assert "scf.for" not in out and "tt.store %x, %a" in out


def test_negative_for_with_trips():
    _unchanged(
        """
        %0 = arith.constant {value = 0} : i32
        %1 = arith.constant {value = 1} : i32
        scf.for %i = %0 to %n step %1 {
          tt.store %x, %a : !ptr<f32>
          scf.yield
        }
        """,
        "%x: !ptr<f32>, %a: f32, %n: i32",
    )


def test_tracing_records_rule_and_location():
    module = parse_module(
        func(
            """
            %0 = arith.constant {value = 0} : i32
            %1 = arith.add %n, %0 : i32
            tt.store %x, %1 : !ptr<i32>
            """,
            "%x: !ptr<i32>, %n: i32",
        )
    )
    with tracing.tracing() as records:
        canonicalize.run(module)
    add = next(r for r in records if r.rule == "add_zero")
    assert add.where == f"tilelab/compiler/passes/canonicalize.py:{canonicalize.add_zero.__code__.co_firstlineno}"
    assert add.before == "%0 = arith.add %n, %1 : i32" and add.op == "arith.add"
    assert add.after == "block argument n: i32"
    assert not tracing.enabled()


KERNEL = """
tt.func @k(%x: !ptr<f32>, %out: !ptr<f32>, %n: i32) {
  %c0 = tt.get_program_id {axis = 0} : i32
  %0 = arith.constant {value = 16} : i32
  %1 = arith.constant {value = 2} : i32
  %2 = arith.mul %0, %1 : i32
  %3 = arith.mul %c0, %2 : i32
  %4 = tt.make_range {start = 0, end = 32} : tensor<32xi32>
  %5 = tt.splat %3 : tensor<32xi32>
  %6 = arith.add %5, %4 : tensor<32xi32>
  %z = arith.constant {value = 0} : i32
  %7 = tt.splat %z : tensor<32xi32>
  %8 = arith.add %6, %7 : tensor<32xi32>
  %9 = tt.splat %n : tensor<32xi32>
  %10 = arith.cmp lt %8, %9 : tensor<32xi1>
  %11 = tt.splat %x : tensor<32x!ptr<f32>>
  %12 = tt.addptr %11, %8 : tensor<32x!ptr<f32>>
  %13 = tt.load %12, %10 : tensor<32xf32>
  %one = arith.constant {value = 1.0} : f32
  %14 = tt.splat %one : tensor<32xf32>
  %15 = arith.mul %13, %14 : tensor<32xf32>
  %t = arith.constant {value = true} : i1
  %16 = scf.if %t -> (tensor<32xf32>) {
    %17 = arith.add %15, %15 : tensor<32xf32>
    scf.yield %17 : tensor<32xf32>
  } else {
    scf.yield %15 : tensor<32xf32>
  }
  %18 = tt.splat %out : tensor<32x!ptr<f32>>
  %19 = tt.addptr %18, %8 : tensor<32x!ptr<f32>>
  tt.store %19, %16, %10 : tensor<32x!ptr<f32>>
  tt.return
}
"""


def test_values_are_preserved(rng):
    def args():
        x = rng.standard_normal(50).astype(np.float32)
        return [x, np.full(50, np.nan, np.float32), 50]

    assert_same_values(canonicalize, KERNEL, args)


DOT_LOOP = """
        %0 = arith.constant {value = 0.0} : tensor<16x16xf32>
        %1 = arith.constant {value = 0} : i32
        %2 = arith.constant {value = 1} : i32
        %3 = scf.for %i = %1 to %n step %2 iter_args(%acc = %0) -> (tensor<16x16xf32>) {
          %4 = tt.dot %a, %b, %0 {input_precision = "tf32", max_num_imprecise_acc = 0} : tensor<16x16xf32>
          %5 = arith.add %acc, %4 : tensor<16x16xf32>
          scf.yield %5 : tensor<16x16xf32>
        }
        tt.print %3 : tensor<16x16xf32>
"""
DOT_ARGS = "%a: tensor<16x16xf16>, %b: tensor<16x16xf16>, %n: i32"


def test_dot_accumulate_moves_the_add_into_the_dot():
    out = _fold(DOT_LOOP, DOT_ARGS)
    assert "arith.add" not in out
    assert 'tt.dot %a, %b, %acc {input_precision = "tf32"' in out


def test_dot_accumulate_with_the_dot_first():
    out = _fold(DOT_LOOP.replace("arith.add %acc, %4", "arith.add %4, %acc"), DOT_ARGS)
    assert "arith.add" not in out and "tt.dot %a, %b, %acc" in out


def test_negative_dot_accumulate_dot_used_twice():
    _unchanged(DOT_LOOP.replace("scf.yield %5", "tt.print %4 : tensor<16x16xf32>\n          scf.yield %5"), DOT_ARGS)


def test_negative_dot_accumulate_nonzero_accumulator():
    _unchanged(DOT_LOOP.replace("value = 0.0", "value = 1.0"), DOT_ARGS)
