"""Golden IR tests of inline: each ``tt.call`` becomes a copy of the callee's body."""

from __future__ import annotations

from tilelab.compiler.passes import inline

from .support import check_pass, check_unchanged


def test_call_becomes_the_callee_body_and_the_callee_goes():
    check_pass(
        inline,
        """
        tt.func @k(%x: !ptr<f32>) {
          %0 = tt.load %x : f32
          %1 = tt.call %0 {callee = "square"} : f32
          tt.store %x, %1 : !ptr<f32>
          tt.return
        }
        tt.func @square(%v: f32) -> (f32) {
          %0 = arith.mul %v, %v : f32
          tt.return %0 : f32
        }
        // CHECK:     %[[V:.*]] = tt.load %x
        // CHECK-NOT: tt.call
        // CHECK:     %[[SQ:.*]] = arith.mul %[[V]], %[[V]]
        // CHECK:     tt.store %x, %[[SQ]]
        // CHECK-NOT: @square
        """,
    )


def test_calls_in_an_inlined_body_and_in_loops_are_inlined_too():
    check_pass(
        inline,
        """
        tt.func @k(%x: !ptr<f32>, %n: i32) {
          %0 = tt.load %x : f32
          %1 = tt.call %0, %n {callee = "power"} : f32
          tt.store %x, %1 : !ptr<f32>
          tt.return
        }
        tt.func @power(%v: f32, %n: i32) -> (f32) {
          %0 = scf.for %i = %n to %n step %n iter_args(%acc = %v) -> (f32) {
            %1 = tt.call %acc {callee = "square"} : f32
            scf.yield %1 : f32
          }
          tt.return %0 : f32
        }
        tt.func @square(%v: f32) -> (f32) {
          %0 = arith.mul %v, %v : f32
          tt.return %0 : f32
        }
        // CHECK:      %[[V:.*]] = tt.load %x
        // CHECK:      %[[R:.*]] = scf.for %i = %n to %n step %n iter_args(%acc = %[[V]])
        // CHECK-NEXT:   %[[SQ:.*]] = arith.mul %acc, %acc
        // CHECK-NEXT:   scf.yield %[[SQ]]
        // CHECK:      tt.store %x, %[[R]]
        // CHECK-NOT:  tt.func @
        """,
    )


def test_negative_a_kernel_without_calls_stays():
    check_unchanged(
        inline,
        """
        tt.func @k(%x: !ptr<f32>) {
          %0 = tt.load %x : f32
          %1 = arith.mul %0, %0 : f32
          tt.store %x, %1 : !ptr<f32>
          tt.return
        }
        """,
    )
