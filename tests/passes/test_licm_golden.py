"""Golden IR tests of licm: loop-invariant pure ops move before their loop."""

from __future__ import annotations

from tilelab.compiler.passes import licm

from .support import check_pass, check_unchanged


def test_invariant_op_moves_before_the_loop():
    check_pass(
        licm,
        """
        tt.func @k(%x: !ptr<i32>, %n: i32) {
          scf.for %i = %n to %n step %n {
            %0 = arith.mul %n, %n : i32
            %1 = arith.add %0, %i : i32
            tt.store %x, %1 : !ptr<i32>
            scf.yield
          }
          tt.return
        }
        // CHECK:      %[[M:.*]] = arith.mul %n, %n
        // CHECK-NEXT: scf.for %i
        // CHECK-NEXT:   %[[A:.*]] = arith.add %[[M]], %i
        // CHECK-NEXT:   tt.store %x, %[[A]]
        """,
    )


def test_invariant_op_climbs_out_of_nested_loops():
    check_pass(
        licm,
        """
        tt.func @k(%x: !ptr<i32>, %n: i32) {
          scf.for %i = %n to %n step %n {
            scf.for %j = %n to %n step %n {
              %0 = arith.mul %n, %n : i32
              %1 = arith.add %0, %i : i32
              %2 = arith.add %1, %j : i32
              tt.store %x, %2 : !ptr<i32>
              scf.yield
            }
            scf.yield
          }
          tt.return
        }
        // CHECK:      %[[M:.*]] = arith.mul %n, %n
        // CHECK-NEXT: scf.for %i
        // CHECK-NEXT:   %[[I:.*]] = arith.add %[[M]], %i
        // CHECK-NEXT:   scf.for %j
        // CHECK-NEXT:     arith.add %[[I]], %j
        """,
    )


def test_while_condition_region_is_a_loop_too():
    check_pass(
        licm,
        """
        tt.func @k(%x: !ptr<i32>, %n: i32) {
          %0 = scf.while (%a = %n) -> (i32) {
            %1 = arith.add %n, %n : i32
            %2 = arith.cmp lt %a, %1 : i1
            scf.condition %2, %a : i1
          } do { ^bb(%b: i32):
            scf.yield %b : i32
          }
          tt.store %x, %0 : !ptr<i32>
          tt.return
        }
        // CHECK:      %[[L:.*]] = arith.add %n, %n
        // CHECK-NEXT: scf.while
        // CHECK-NEXT:   arith.cmp lt %a, %[[L]]
        """,
    )


def test_negative_loads_divisions_and_variant_ops_stay():
    check_unchanged(
        licm,
        """
        tt.func @k(%x: !ptr<i32>, %n: i32) {
          scf.for %i = %n to %n step %n {
            %0 = tt.load %x : i32
            %1 = arith.div %n, %n : i32
            %2 = arith.add %i, %n : i32
            %3 = arith.add %0, %1 : i32
            %4 = arith.add %3, %2 : i32
            tt.store %x, %4 : !ptr<i32>
            scf.yield
          }
          tt.return
        }
        """,
    )


def test_value_carried_unchanged_is_invariant():
    """A carried value yielded back as is (a block pointer's stride): what uses it moves out."""
    check_pass(
        licm,
        """
        tt.func @k(%x: !ptr<i32>, %n: i32) {
          %0, %1 = scf.for %i = %n to %n step %n iter_args(%s = %n, %o = %n) -> (i32, i32) {
            %2 = arith.mul %s, %s : i32
            %3 = arith.add %o, %2 : i32
            tt.store %x, %3 : !ptr<i32>
            scf.yield %s, %3 : i32, i32
          }
          tt.store %x, %0 : !ptr<i32>
          tt.return
        }
        // CHECK:      %[[M:.*]] = arith.mul %n, %n
        // CHECK-NEXT: scf.for %i = %n to %n step %n iter_args(%s = %n, %o = %n)
        // CHECK-NEXT:   %[[A:.*]] = arith.add %o, %[[M]]
        // CHECK:        scf.yield %n, %[[A]]
        // CHECK:      tt.store %x, %n
        """,
    )


def test_negative_value_carried_and_changed_stays_carried():
    check_unchanged(
        licm,
        """
        tt.func @k(%x: !ptr<i32>, %n: i32) {
          %0 = scf.for %i = %n to %n step %n iter_args(%s = %n) -> (i32) {
            %1 = arith.add %s, %i : i32
            scf.yield %1 : i32
          }
          tt.store %x, %0 : !ptr<i32>
          tt.return
        }
        """,
    )
