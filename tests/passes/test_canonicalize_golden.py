"""Golden IR tests of canonicalize: constants folded, identities dropped, constant branches taken."""

from __future__ import annotations

from tilelab.compiler.passes import canonicalize

from .support import check_pass, check_unchanged


def test_integer_constants_fold():
    check_pass(
        canonicalize,
        """
        tt.func @k(%x: !ptr<i32>) {
          %0 = arith.constant {value = 64} : i32
          %1 = arith.constant {value = 2} : i32
          %2 = arith.mul %0, %1 : i32
          %3 = arith.sub %2, %1 : i32
          tt.store %x, %3 : !ptr<i32>
          tt.return
        }
        // CHECK:     %[[C:.*]] = arith.constant {value = 126} : i32
        // CHECK-NOT: arith.mul
        // CHECK-NOT: arith.sub
        // CHECK:     tt.store %x, %[[C]]
        """,
    )


def test_identities_leave_their_operand():
    check_pass(
        canonicalize,
        """
        tt.func @k(%x: !ptr<i32>, %n: i32) {
          %0 = arith.constant {value = 0} : i32
          %1 = arith.constant {value = 1} : i32
          %2 = arith.add %n, %0 : i32
          %3 = arith.mul %2, %1 : i32
          %4 = tt.addptr %x, %0 : !ptr<i32>
          tt.store %4, %3 : !ptr<i32>
          tt.return
        }
        // CHECK-NOT: arith.
        // CHECK-NOT: tt.addptr
        // CHECK:     tt.store %x, %n
        """,
    )


def test_splat_of_a_constant_becomes_a_tile_constant():
    check_pass(
        canonicalize,
        """
        tt.func @k(%x: !ptr<f32>) {
          %0 = arith.constant {value = 2.0} : f32
          %1 = tt.splat %0 : tensor<16xf32>
          %2 = tt.splat %x : tensor<16x!ptr<f32>>
          tt.store %2, %1 : tensor<16x!ptr<f32>>
          tt.return
        }
        // CHECK:     %[[C:.*]] = arith.constant {value = 2.0} : tensor<16xf32>
        // CHECK:     %[[P:.*]] = tt.splat %x
        // CHECK:     tt.store %[[P]], %[[C]]
        """,
    )


def test_constant_branch_keeps_the_taken_arm():
    check_pass(
        canonicalize,
        """
        tt.func @k(%x: !ptr<i32>, %n: i32) {
          %0 = arith.constant {value = true} : i1
          %1 = scf.if %0 -> (i32) {
            %2 = arith.mul %n, %n : i32
            scf.yield %2 : i32
          } else {
            scf.yield %n : i32
          }
          tt.store %x, %1 : !ptr<i32>
          tt.return
        }
        // CHECK-NOT: scf.if
        // CHECK:     %[[M:.*]] = arith.mul %n, %n
        // CHECK:     tt.store %x, %[[M]]
        """,
    )


def test_accumulation_after_a_dot_moves_into_the_dot():
    check_pass(
        canonicalize,
        """
        tt.func @k(%x: !ptr<f32>, %y: !ptr<f16>) {
          %0 = tt.splat %y : tensor<16x16x!ptr<f16>>
          %1 = tt.load %0 : tensor<16x16xf16>
          %2 = arith.constant {value = 0.0} : tensor<16x16xf32>
          %3 = tt.dot %1, %1, %2 : tensor<16x16xf32>
          %4 = tt.splat %x : tensor<16x16x!ptr<f32>>
          %5 = tt.load %4 : tensor<16x16xf32>
          %6 = arith.add %5, %3 : tensor<16x16xf32>
          tt.store %4, %6 : tensor<16x16x!ptr<f32>>
          tt.return
        }
        // CHECK:      %[[A:.*]] = tt.load %{{.*}} : tensor<16x16xf16>
        // CHECK:      %[[C:.*]] = tt.load %{{.*}} : tensor<16x16xf32>
        // CHECK-NEXT: %[[D:.*]] = tt.dot %[[A]], %[[A]], %[[C]]
        // CHECK-NOT:  arith.add
        // CHECK:      tt.store %{{.*}}, %[[D]]
        """,
    )


def test_loop_that_runs_zero_times_gives_its_initial_values():
    check_pass(
        canonicalize,
        """
        tt.func @k(%x: !ptr<f32>) {
          %0 = tt.load %x : f32
          %1 = arith.constant {value = 4} : i32
          %2 = arith.constant {value = 1} : i32
          %3 = scf.for %i = %1 to %1 step %2 iter_args(%a = %0) -> (f32) {
            %4 = arith.mul %a, %a : f32
            scf.yield %4 : f32
          }
          tt.store %x, %3 : !ptr<f32>
          tt.return
        }
        // CHECK:      %[[V:.*]] = tt.load %x
        // CHECK-NEXT: tt.store %x, %[[V]]
        // CHECK-NOT:  scf.for
        """,
    )


def test_negative_float_rewrites_that_change_signed_zero_or_nan_stay():
    check_unchanged(
        canonicalize,
        """
        tt.func @k(%x: !ptr<f32>) {
          %0 = tt.load %x : f32
          %1 = arith.constant {value = 0.0} : f32
          %2 = arith.add %0, %1 : f32
          %3 = arith.mul %2, %1 : f32
          %4 = arith.sub %3, %3 : f32
          tt.store %x, %4 : !ptr<f32>
          tt.return
        }
        """,
    )
