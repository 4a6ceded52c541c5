"""Golden tests of the licm pass."""

from __future__ import annotations

import numpy as np

from tilelab.compiler.passes import licm

from .support import assert_docstring_example, assert_same_values, canonical, func, run_pass


def test_docstring_example():
    assert_docstring_example(licm)


def test_hoists_out_of_nested_loops():
    out, changed = run_pass(
        licm,
        func(
            """
            scf.for %i = %n to %n step %n {
              scf.for %j = %n to %n step %n {
                %0 = arith.mul %n, %n : i32
                %1 = arith.add %0, %i : i32
                tt.store %x, %1 : !ptr<i32>
                scf.yield
              }
              scf.yield
            }
            """,
            "%x: !ptr<i32>, %n: i32",
        ),
    )
    assert changed
    lines = [line.strip() for line in out.splitlines()]
    assert lines[1] == "%0 = arith.mul %n, %n : i32"
    assert lines[2].startswith("scf.for %i") and lines[3] == "%1 = arith.add %0, %i : i32"
    assert lines[4].startswith("scf.for %j")


def test_hoists_from_while_regions():
    out, changed = run_pass(
        licm,
        func(
            """
            %0 = scf.while (%a = %n) -> (i32) {
              %1 = arith.add %n, %n : i32
              %2 = arith.cmp lt %a, %1 : i1
              scf.condition %2, %a : i1
            } do { ^bb(%b: i32):
              %3 = arith.mul %n, %n : i32
              %4 = arith.add %b, %3 : i32
              scf.yield %4 : i32
            }
            tt.store %x, %0 : !ptr<i32>
            """,
            "%x: !ptr<i32>, %n: i32",
        ),
    )
    assert changed
    head = out[: out.index("scf.while")]
    assert "arith.add %n, %n" in head and "arith.mul %n, %n" in head


def test_negative_loads_division_and_dependent_ops_stay():
    text = func(
        """
        scf.for %i = %n to %n step %n {
          %0 = tt.load %x : i32
          %1 = arith.div %n, %n : i32
          %2 = arith.add %i, %n : i32
          %3 = arith.add %0, %1 : i32
          %4 = arith.add %3, %2 : i32
          tt.store %x, %4 : !ptr<i32>
          scf.yield
        }
        """,
        "%x: !ptr<i32>, %n: i32",
    )
    out, changed = run_pass(licm, text)
    assert not changed and out == canonical(text)


KERNEL = """
tt.func @k(%x: !ptr<f32>, %out: !ptr<f32>, %n: i32) {
  %0 = arith.constant {value = 0} : i32
  %1 = arith.constant {value = 1} : i32
  %2 = arith.constant {value = 0.0} : tensor<16xf32>
  %3 = scf.for %i = %0 to %n step %1 iter_args(%acc = %2) -> (tensor<16xf32>) {
    %4 = tt.make_range {start = 0, end = 16} : tensor<16xi32>
    %5 = arith.constant {value = 16} : i32
    %6 = arith.mul %i, %5 : i32
    %7 = tt.splat %6 : tensor<16xi32>
    %8 = arith.add %7, %4 : tensor<16xi32>
    %9 = tt.splat %x : tensor<16x!ptr<f32>>
    %10 = tt.addptr %9, %8 : tensor<16x!ptr<f32>>
    %11 = tt.load %10 : tensor<16xf32>
    %12 = arith.add %acc, %11 : tensor<16xf32>
    scf.yield %12 : tensor<16xf32>
  }
  %13 = tt.make_range {start = 0, end = 16} : tensor<16xi32>
  %14 = tt.splat %out : tensor<16x!ptr<f32>>
  %15 = tt.addptr %14, %13 : tensor<16x!ptr<f32>>
  tt.store %15, %3 : tensor<16x!ptr<f32>>
  tt.return
}
"""


def test_values_are_preserved(rng):
    def args():
        return [rng.standard_normal(64).astype(np.float32), np.full(16, np.nan, np.float32), 4]

    assert_same_values(licm, KERNEL, args, grid=(1,))
