"""Golden tests of the dce pass."""

from __future__ import annotations

import numpy as np

from tilelab.compiler.passes import dce

from .support import assert_docstring_example, assert_same_values, canonical, func, run_pass


def test_docstring_example():
    assert_docstring_example(dce)


def test_dead_chain_and_pure_if_go():
    out, changed = run_pass(
        dce,
        func(
            """
            %0 = arith.mul %n, %n : i32
            %1 = arith.add %0, %n : i32
            %2 = scf.if %c -> (i32) {
              %3 = arith.add %1, %1 : i32
              scf.yield %3 : i32
            } else {
              scf.yield %n : i32
            }
            """,
            "%x: !ptr<i32>, %n: i32, %c: i1",
        ),
    )
    assert changed and out == canonical(func("", "%x: !ptr<i32>, %n: i32, %c: i1"))


def test_dead_ops_inside_regions_go():
    out, changed = run_pass(
        dce,
        func(
            """
            scf.for %i = %n to %n step %n {
              %0 = arith.mul %i, %i : i32
              tt.store %x, %i : !ptr<i32>
              scf.yield
            }
            """,
            "%x: !ptr<i32>, %n: i32",
        ),
    )
    assert changed and "arith.mul" not in out and "tt.store %x, %i" in out


def test_negative_side_effects_stay():
    text = func(
        """
        %0 = tt.load %x {volatile = true} : i32
        %1 = tt.atomic_rmw %x, %n {kind = "add", sem = "acq_rel", scope = "gpu"} : i32
        tt.print %n {prefix = "n"} : i32
        tt.assert %c {message = "c"} : i1
        %2 = scf.if %c -> (i32) {
          tt.store %x, %n : !ptr<i32>
          scf.yield %n : i32
        } else {
          scf.yield %n : i32
        }
        %3 = scf.while (%a = %n) -> (i32) {
          scf.condition %c, %a : i1
        } do { ^bb(%b: i32):
          scf.yield %b : i32
        }
        """,
        "%x: !ptr<i32>, %n: i32, %c: i1",
    )
    out, changed = run_pass(dce, text)
    assert not changed and out == canonical(text)


def test_negative_carried_value_that_feeds_another_stays():
    text = func(
        """
        %0, %1 = scf.for %i = %n to %n step %n iter_args(%a = %n, %b = %n) -> (i32, i32) {
          %2 = arith.add %a, %b : i32
          scf.yield %2, %2 : i32, i32
        }
        tt.store %x, %1 : !ptr<i32>
        """,
        "%x: !ptr<i32>, %n: i32",
    )
    out, changed = run_pass(dce, text)
    assert not changed and out == canonical(text)


def test_dead_carried_value_goes_and_live_one_stays():
    out, changed = run_pass(
        dce,
        func(
            """
            %0, %1 = scf.for %i = %n to %n step %n iter_args(%a = %n, %b = %n) -> (i32, i32) {
              %2 = arith.add %a, %i : i32
              %3 = arith.mul %b, %b : i32
              scf.yield %2, %3 : i32, i32
            }
            tt.store %x, %0 : !ptr<i32>
            """,
            "%x: !ptr<i32>, %n: i32",
        ),
    )
    assert changed
    assert "iter_args(%a = %n) -> (i32)" in out and "arith.mul" not in out and "scf.yield %1 : i32" in out


KERNEL = """
tt.func @k(%x: !ptr<f32>, %out: !ptr<f32>, %n: i32) {
  %0 = arith.constant {value = 0} : i32
  %1 = arith.constant {value = 1} : i32
  %2 = arith.constant {value = 0.0} : f32
  %3 = tt.load %x : f32
  %4, %5 = scf.for %i = %0 to %n step %1 iter_args(%acc = %2, %junk = %2) -> (f32, f32) {
    %6 = tt.addptr %x, %i : !ptr<f32>
    %7 = tt.load %6 : f32
    %8 = arith.add %acc, %7 : f32
    %9 = arith.mul %junk, %7 : f32
    scf.yield %8, %9 : f32, f32
  }
  %10 = math.exp %3 : f32
  tt.store %out, %4 : !ptr<f32>
  tt.return
}
"""


def test_values_are_preserved(rng):
    def args():
        return [rng.standard_normal(8).astype(np.float32), np.full(1, np.nan, np.float32), 8]

    assert_same_values(dce, KERNEL, args, grid=(1,))
