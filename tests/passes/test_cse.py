"""Golden tests of the cse pass."""

from __future__ import annotations

import numpy as np

from tilelab.compiler.passes import cse

from .support import assert_docstring_example, assert_same_values, canonical, func, run_pass


def test_docstring_example():
    assert_docstring_example(cse)


def test_equal_splats_merge():
    out, changed = run_pass(
        cse,
        func(
            """
            %0 = tt.splat %x : tensor<8x!ptr<f32>>
            %1 = tt.splat %x : tensor<8x!ptr<f32>>
            %2 = tt.load %0 : tensor<8xf32>
            tt.store %1, %2 : tensor<8x!ptr<f32>>
            """
        ),
    )
    assert changed and out.count("tt.splat") == 1 and "tt.store %0, %1" in out


def test_commutative_operands_merge_in_any_order():
    out, changed = run_pass(
        cse,
        func(
            """
            %0 = arith.add %a, %b : i32
            %1 = arith.add %b, %a : i32
            %2 = arith.sub %a, %b : i32
            %3 = arith.sub %b, %a : i32
            tt.store %x, %0 : !ptr<i32>
            tt.store %x, %1 : !ptr<i32>
            tt.store %x, %2 : !ptr<i32>
            tt.store %x, %3 : !ptr<i32>
            """,
            "%x: !ptr<i32>, %a: i32, %b: i32",
        ),
    )
    assert changed and out.count("arith.add") == 1 and out.count("arith.sub") == 2


def test_value_from_outer_scope_is_reused_in_loop_body():
    out, changed = run_pass(
        cse,
        func(
            """
            %0 = arith.mul %n, %n : i32
            scf.for %i = %n to %n step %n {
              %1 = arith.mul %n, %n : i32
              tt.store %x, %1 : !ptr<i32>
              scf.yield
            }
            """,
            "%x: !ptr<i32>, %n: i32",
        ),
    )
    assert changed and out.count("arith.mul") == 1 and "tt.store %x, %0" in out


def test_negative_sibling_branches_do_not_share():
    text = func(
        """
        scf.if %c {
          %0 = arith.mul %n, %n : i32
          tt.store %x, %0 : !ptr<i32>
          scf.yield
        } else {
          %1 = arith.mul %n, %n : i32
          tt.store %x, %1 : !ptr<i32>
          scf.yield
        }
        """,
        "%x: !ptr<i32>, %n: i32, %c: i1",
    )
    out, changed = run_pass(cse, text)
    assert not changed and out == canonical(text)


def test_negative_different_attrs_types_and_effects():
    text = func(
        """
        %0 = arith.constant {value = 0.0} : f32
        %1 = arith.constant {value = -0.0} : f32
        %2 = arith.constant {value = 0} : i32
        %3 = tt.get_program_id {axis = 0} : i32
        %4 = tt.get_program_id {axis = 1} : i32
        %5 = tt.load %x : f32
        %6 = tt.load %x : f32
        %7 = arith.add %0, %1 : f32
        %8 = arith.add %5, %6 : f32
        %9 = arith.add %3, %4 : i32
        %10 = arith.add %9, %2 : i32
        %11 = tt.cast %10 : f32
        %12 = arith.add %7, %8 : f32
        %13 = arith.add %12, %11 : f32
        tt.store %x, %13 : !ptr<f32>
        """
    )
    out, changed = run_pass(cse, text)
    assert not changed and out == canonical(text)


KERNEL = """
tt.func @k(%x: !ptr<f32>, %out: !ptr<f32>) {
  %0 = tt.get_program_id {axis = 0} : i32
  %1 = arith.constant {value = 16} : i32
  %2 = arith.mul %0, %1 : i32
  %3 = tt.make_range {start = 0, end = 16} : tensor<16xi32>
  %4 = tt.splat %2 : tensor<16xi32>
  %5 = arith.add %4, %3 : tensor<16xi32>
  %6 = tt.splat %x : tensor<16x!ptr<f32>>
  %7 = tt.addptr %6, %5 : tensor<16x!ptr<f32>>
  %8 = tt.load %7 : tensor<16xf32>
  %9 = tt.get_program_id {axis = 0} : i32
  %10 = arith.mul %9, %1 : i32
  %11 = tt.splat %10 : tensor<16xi32>
  %12 = tt.make_range {start = 0, end = 16} : tensor<16xi32>
  %13 = arith.add %11, %12 : tensor<16xi32>
  %14 = tt.splat %out : tensor<16x!ptr<f32>>
  %15 = tt.addptr %14, %13 : tensor<16x!ptr<f32>>
  %16 = math.exp %8 : tensor<16xf32>
  %17 = math.exp %8 : tensor<16xf32>
  %18 = arith.sub %16, %17 : tensor<16xf32>
  %19 = arith.add %18, %8 : tensor<16xf32>
  tt.store %15, %19 : tensor<16x!ptr<f32>>
  tt.return
}
"""


def test_values_are_preserved(rng):
    def args():
        return [rng.standard_normal(32).astype(np.float32), np.full(32, np.nan, np.float32)]

    assert_same_values(cse, KERNEL, args)
