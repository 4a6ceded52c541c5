# ruff: noqa: E501  (the IR spells whole types)
"""Golden IR tests of carry-pointer-bases: a pointer tile a loop moves by one step is carried as its scalar base."""

from __future__ import annotations

from tilelab.compiler.passes import carry_pointer_bases

from .support import check_pass, check_unchanged


def test_tutorial_k_walk_carries_the_base_pointer():
    # a_ptrs = a_ptr + (rows * stride + cols); a_ptrs += BK * stride_k: the base moves, the offsets stay
    check_pass(
        carry_pointer_bases,
        """
        tt.func @k(%a: !ptr<f16>, %n: i32, %sk: i32) {
          %0 = arith.constant {value = 0} : i32
          %1 = arith.constant {value = 1} : i32
          %2 = tt.make_range {start = 0, end = 16} : tensor<16xi32>
          %3 = tt.expand_dims %2 {axis = 1} : tensor<16x1xi32>
          %4 = tt.expand_dims %2 {axis = 0} : tensor<1x16xi32>
          %5 = tt.broadcast %3 : tensor<16x16xi32>
          %6 = tt.broadcast %4 : tensor<16x16xi32>
          %7 = arith.add %5, %6 : tensor<16x16xi32>
          %8 = tt.splat %a : tensor<16x16x!ptr<f16>>
          %9 = tt.addptr %8, %7 : tensor<16x16x!ptr<f16>>
          %10 = arith.mul %sk, %sk : i32
          %11 = tt.splat %10 : tensor<16x16xi32>
          %12 = arith.constant {value = 0.0} : tensor<16x16xf16>
          %13, %14 = scf.for %i = %0 to %n step %1 iter_args(%acc = %12, %ptrs = %9) -> (tensor<16x16xf16>, tensor<16x16x!ptr<f16>>) {
            %15 = tt.load %ptrs : tensor<16x16xf16>
            %16 = arith.add %acc, %15 : tensor<16x16xf16>
            %17 = tt.addptr %ptrs, %11 : tensor<16x16x!ptr<f16>>
            scf.yield %16, %17 : tensor<16x16xf16>, tensor<16x16x!ptr<f16>>
          }
          tt.store %9, %13 : tensor<16x16x!ptr<f16>>
          tt.return
        }
        // CHECK:      %[[OFFS:.*]] = arith.add
        // CHECK:      %[[STEP:.*]] = arith.mul %sk, %sk
        // CHECK-NOT:  tt.splat %[[STEP]]
        // CHECK:      scf.for %i = {{.*}} iter_args(%acc = {{.*}}, %ptrs = %a) -> (tensor<16x16xf16>, !ptr<f16>)
        // CHECK-NEXT:   %[[S:.*]] = tt.splat %ptrs : tensor<16x16x!ptr<f16>>
        // CHECK-NEXT:   %[[P:.*]] = tt.addptr %[[S]], %[[OFFS]] : tensor<16x16x!ptr<f16>>
        // CHECK-NEXT:   tt.load %[[P]]
        // CHECK:        %[[NEXT:.*]] = tt.addptr %ptrs, %[[STEP]] : !ptr<f16>
        // CHECK-NEXT:   scf.yield {{.*}}, %[[NEXT]]
        """,
    )


def test_constant_step_becomes_a_scalar_constant_before_the_loop():
    # stride 1 specialized: ``ptrs += 16`` is a constant tile; its scalar stays loop-invariant (the pipeliner needs it)
    check_pass(
        carry_pointer_bases,
        """
        tt.func @k(%a: !ptr<f32>, %n: i32) {
          %0 = arith.constant {value = 0} : i32
          %1 = arith.constant {value = 1} : i32
          %2 = tt.make_range {start = 0, end = 16} : tensor<16xi32>
          %3 = tt.splat %a : tensor<16x!ptr<f32>>
          %4 = tt.addptr %3, %2 : tensor<16x!ptr<f32>>
          %5 = arith.constant {value = 16} : tensor<16xi32>
          %6 = scf.for %i = %0 to %n step %1 iter_args(%p = %4) -> (tensor<16x!ptr<f32>>) {
            %7 = tt.load %p : tensor<16xf32>
            tt.store %p, %7 : tensor<16x!ptr<f32>>
            %8 = tt.addptr %p, %5 : tensor<16x!ptr<f32>>
            scf.yield %8 : tensor<16x!ptr<f32>>
          }
          tt.return
        }
        // CHECK:      %[[C:.*]] = arith.constant {value = 16} : i32
        // CHECK-NEXT: scf.for %i = {{.*}} iter_args(%p = %a) -> (!ptr<f32>)
        // CHECK:        tt.addptr %p, %[[C]] : !ptr<f32>
        // CHECK-NOT:  tensor<16x!ptr<f32>> {
        """,
    )


def test_value_after_the_loop_is_rebuilt_from_the_final_base():
    # the tile's chain through a broadcast (c_ptr + rows[:, None] + cols[None, :]) is built again after the loop
    check_pass(
        carry_pointer_bases,
        """
        tt.func @k(%a: !ptr<f32>, %n: i32, %s: i32) {
          %0 = arith.constant {value = 0} : i32
          %1 = arith.constant {value = 1} : i32
          %2 = tt.make_range {start = 0, end = 8} : tensor<8xi32>
          %3 = tt.expand_dims %2 {axis = 1} : tensor<8x1xi32>
          %4 = tt.splat %a : tensor<8x1x!ptr<f32>>
          %5 = tt.addptr %4, %3 : tensor<8x1x!ptr<f32>>
          %6 = tt.broadcast %5 : tensor<8x8x!ptr<f32>>
          %7 = tt.expand_dims %2 {axis = 0} : tensor<1x8xi32>
          %8 = tt.broadcast %7 : tensor<8x8xi32>
          %9 = tt.addptr %6, %8 : tensor<8x8x!ptr<f32>>
          %10 = tt.splat %s : tensor<8x8xi32>
          %11 = scf.for %i = %0 to %n step %1 iter_args(%p = %9) -> (tensor<8x8x!ptr<f32>>) {
            %12 = tt.addptr %p, %10 : tensor<8x8x!ptr<f32>>
            scf.yield %12 : tensor<8x8x!ptr<f32>>
          }
          %13 = tt.load %11 : tensor<8x8xf32>
          tt.store %9, %13 : tensor<8x8x!ptr<f32>>
          tt.return
        }
        // CHECK:      %[[END:.*]] = scf.for %i = {{.*}} iter_args(%p = %a) -> (!ptr<f32>)
        // CHECK-NEXT:   tt.splat %p
        // CHECK:        %[[NEXT:.*]] = tt.addptr %p, %s : !ptr<f32>
        // CHECK-NEXT:   scf.yield %[[NEXT]]
        // CHECK:      %[[S:.*]] = tt.splat %[[END]] : tensor<8x1x!ptr<f32>>
        // CHECK-NEXT: %[[R:.*]] = tt.addptr %[[S]], {{.*}} : tensor<8x1x!ptr<f32>>
        // CHECK-NEXT: %[[B:.*]] = tt.broadcast %[[R]] : tensor<8x8x!ptr<f32>>
        // CHECK-NEXT: %[[P:.*]] = tt.addptr %[[B]], {{.*}} : tensor<8x8x!ptr<f32>>
        // CHECK-NEXT: tt.load %[[P]]
        """,
    )


def test_negative_step_of_a_tile_of_offsets():
    # ptrs += offs moves each element by its own amount: no scalar base describes the tile
    check_unchanged(
        carry_pointer_bases,
        """
        tt.func @k(%a: !ptr<f32>, %n: i32) {
          %0 = arith.constant {value = 0} : i32
          %1 = arith.constant {value = 1} : i32
          %2 = tt.make_range {start = 0, end = 16} : tensor<16xi32>
          %3 = tt.splat %a : tensor<16x!ptr<f32>>
          %4 = tt.addptr %3, %2 : tensor<16x!ptr<f32>>
          %5 = scf.for %i = %0 to %n step %1 iter_args(%p = %4) -> (tensor<16x!ptr<f32>>) {
            %6 = tt.load %p : tensor<16xf32>
            tt.store %p, %6 : tensor<16x!ptr<f32>>
            %7 = tt.addptr %p, %2 : tensor<16x!ptr<f32>>
            scf.yield %7 : tensor<16x!ptr<f32>>
          }
          tt.return
        }
        """,
    )


def test_negative_tile_not_built_from_one_scalar_pointer():
    # pointers loaded from memory (a gather's table) have no common base
    check_unchanged(
        carry_pointer_bases,
        """
        tt.func @k(%t: !ptr<!ptr<f32>>, %n: i32, %s: i32) {
          %0 = arith.constant {value = 0} : i32
          %1 = arith.constant {value = 1} : i32
          %2 = tt.make_range {start = 0, end = 16} : tensor<16xi32>
          %3 = tt.splat %t : tensor<16x!ptr<!ptr<f32>>>
          %4 = tt.addptr %3, %2 : tensor<16x!ptr<!ptr<f32>>>
          %5 = tt.load %4 : tensor<16x!ptr<f32>>
          %6 = tt.splat %s : tensor<16xi32>
          %7 = scf.for %i = %0 to %n step %1 iter_args(%p = %5) -> (tensor<16x!ptr<f32>>) {
            %8 = tt.load %p : tensor<16xf32>
            tt.store %p, %8 : tensor<16x!ptr<f32>>
            %9 = tt.addptr %p, %6 : tensor<16x!ptr<f32>>
            scf.yield %9 : tensor<16x!ptr<f32>>
          }
          tt.return
        }
        """,
    )


def test_negative_scalar_and_unmoved_carried_values():
    # a carried scalar pointer is already one register pair; a tile yielded unchanged is licm's
    check_unchanged(
        carry_pointer_bases,
        """
        tt.func @k(%a: !ptr<f32>, %n: i32, %s: i32) {
          %0 = arith.constant {value = 0} : i32
          %1 = arith.constant {value = 1} : i32
          %2 = tt.make_range {start = 0, end = 16} : tensor<16xi32>
          %3 = tt.splat %a : tensor<16x!ptr<f32>>
          %4 = tt.addptr %3, %2 : tensor<16x!ptr<f32>>
          %5, %6 = scf.for %i = %0 to %n step %1 iter_args(%q = %a, %p = %4) -> (!ptr<f32>, tensor<16x!ptr<f32>>) {
            %7 = tt.load %p : tensor<16xf32>
            tt.store %p, %7 : tensor<16x!ptr<f32>>
            %8 = tt.addptr %q, %s : !ptr<f32>
            scf.yield %8, %p : !ptr<f32>, tensor<16x!ptr<f32>>
          }
          tt.return
        }
        """,
    )
