"""Golden IR tests of dce: unused pure ops, unused loads and dead loop-carried values go."""

from __future__ import annotations

from tilelab.compiler.passes import dce

from .support import check_pass, check_unchanged


def test_unused_pure_ops_and_loads_go():
    check_pass(
        dce,
        """
        tt.func @k(%x: !ptr<f32>, %n: i32) {
          %0 = tt.load %x : f32
          %1 = tt.load %x : f32
          %2 = arith.mul %1, %1 : f32
          %3 = arith.add %n, %n : i32
          tt.store %x, %0 : !ptr<f32>
          tt.return
        }
        // CHECK:      %[[V:.*]] = tt.load %x
        // CHECK-NEXT: tt.store %x, %[[V]]
        // CHECK-NEXT: tt.return
        """,
    )


def test_dead_loop_carried_value_goes_and_the_live_one_stays():
    check_pass(
        dce,
        """
        tt.func @k(%x: !ptr<f32>, %n: i32) {
          %0 = arith.constant {value = 0.0} : f32
          %1 = tt.load %x : f32
          %2, %3 = scf.for %i = %n to %n step %n iter_args(%live = %0, %dead = %0) -> (f32, f32) {
            %4 = arith.add %live, %1 : f32
            %5 = arith.mul %dead, %1 : f32
            scf.yield %4, %5 : f32, f32
          }
          tt.store %x, %2 : !ptr<f32>
          tt.return
        }
        // CHECK:      %[[R:.*]] = scf.for %i = %n to %n step %n iter_args(%live = %{{.*}}) -> (f32)
        // CHECK-NEXT:   %[[A:.*]] = arith.add %live
        // CHECK-NEXT:   scf.yield %[[A]] : f32
        // CHECK:      tt.store %x, %[[R]]
        // CHECK-NOT:  arith.mul
        """,
    )


def test_pure_branch_with_unused_results_goes():
    check_pass(
        dce,
        """
        tt.func @k(%x: !ptr<i32>, %n: i32, %c: i1) {
          %0 = scf.if %c -> (i32) {
            %1 = arith.mul %n, %n : i32
            scf.yield %1 : i32
          } else {
            scf.yield %n : i32
          }
          tt.store %x, %n : !ptr<i32>
          tt.return
        }
        // CHECK-NOT: scf.if
        // CHECK:     tt.store %x, %n
        """,
    )


def test_negative_stores_atomics_and_volatile_loads_stay():
    check_unchanged(
        dce,
        """
        tt.func @k(%x: !ptr<i32>, %n: i32) {
          %0 = tt.load %x {volatile = true} : i32
          %1 = tt.atomic_rmw %x, %n {kind = "add", sem = "acq_rel", scope = "gpu"} : i32
          tt.store %x, %n : !ptr<i32>
          tt.return
        }
        """,
    )
