"""Golden IR tests of convert-through-shared: conversions across threads become local_alloc/store/load."""

from __future__ import annotations

from tilelab.compiler.passes import convert_through_shared

from .support import check_pass, check_unchanged

#: a 32x32 tile row-major (``#row``) and column-major (``#col``): converting between them transposes
LAYOUTS = """
#row = #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>
#col = #blocked<sizePerThread=[4, 1], threadsPerWarp=[8, 4], warpsPerCTA=[1, 4], order=[0, 1]>
#swizzled = #swizzled_shared<vec=4, perPhase=4, maxPhase=8, order=[1, 0]>
"""


def test_transposing_conversion_goes_through_a_swizzled_buffer():
    check_pass(
        convert_through_shared,
        LAYOUTS
        + """
        tt.func @k(%x: !ptr<f32>) {
          %0 = tt.splat %x : tensor<32x32x!ptr<f32>, #row>
          %1 = tt.load %0 : tensor<32x32xf32, #row>
          %2 = ttg.convert_layout %1 : tensor<32x32xf32, #col>
          %3 = tt.splat %x : tensor<32x32x!ptr<f32>, #col>
          tt.store %3, %2 : tensor<32x32x!ptr<f32>, #col>
          tt.return
        }
        // CHECK:      %[[V:.*]] = tt.load
        // CHECK-NEXT: %[[BUF:.*]] = ttg.local_alloc : tensor<32x32xf32, #swizzled>
        // CHECK-NEXT: ttg.local_store %[[BUF]], %[[V]] : tensor<32x32xf32, #swizzled>
        // CHECK-NEXT: %[[T:.*]] = ttg.local_load %[[BUF]] : tensor<32x32xf32, #col>
        // CHECK-NOT:  ttg.convert_layout
        // CHECK:      tt.store %{{.*}}, %[[T]]
        """,
    )


def test_loop_invariant_conversion_is_stored_before_the_loop_and_read_in_it():
    check_pass(
        convert_through_shared,
        LAYOUTS
        + """
        tt.func @k(%x: !ptr<f32>, %n: i32) {
          %0 = tt.splat %x : tensor<32x32x!ptr<f32>, #row>
          %1 = tt.load %0 : tensor<32x32xf32, #row>
          %2 = tt.splat %x : tensor<32x32x!ptr<f32>, #col>
          scf.for %i = %n to %n step %n {
            %3 = ttg.convert_layout %1 : tensor<32x32xf32, #col>
            tt.store %2, %3 : tensor<32x32x!ptr<f32>, #col>
            scf.yield
          }
          tt.return
        }
        // CHECK:      %[[V:.*]] = tt.load
        // CHECK:      %[[BUF:.*]] = ttg.local_alloc
        // CHECK-NEXT: ttg.local_store %[[BUF]], %[[V]]
        // CHECK-NEXT: scf.for
        // CHECK-NEXT:   %[[T:.*]] = ttg.local_load %[[BUF]] : tensor<32x32xf32, #col>
        // CHECK-NEXT:   tt.store %{{.*}}, %[[T]]
        """,
    )


def test_conversion_of_a_value_made_in_the_loop_stays_in_the_loop():
    check_pass(
        convert_through_shared,
        LAYOUTS
        + """
        tt.func @k(%x: !ptr<f32>, %n: i32) {
          %0 = tt.splat %x : tensor<32x32x!ptr<f32>, #row>
          %1 = tt.splat %x : tensor<32x32x!ptr<f32>, #col>
          scf.for %i = %n to %n step %n {
            %2 = tt.load %0 : tensor<32x32xf32, #row>
            %3 = ttg.convert_layout %2 : tensor<32x32xf32, #col>
            tt.store %1, %3 : tensor<32x32x!ptr<f32>, #col>
            scf.yield
          }
          tt.return
        }
        // CHECK:      scf.for
        // CHECK-NEXT:   %[[V:.*]] = tt.load
        // CHECK-NEXT:   %[[BUF:.*]] = ttg.local_alloc
        // CHECK-NEXT:   ttg.local_store %[[BUF]], %[[V]]
        // CHECK-NEXT:   %[[T:.*]] = ttg.local_load %[[BUF]] : tensor<32x32xf32, #col>
        """,
    )


def test_trans_that_moves_data_splits_into_a_free_trans_and_a_round_trip():
    check_pass(
        convert_through_shared,
        """
        #row = #blocked<sizePerThread=[1, 4], threadsPerWarp=[2, 16], warpsPerCTA=[4, 1], order=[1, 0]>
        tt.func @k(%x: !ptr<i32>) {
          %0 = tt.splat %x : tensor<32x32x!ptr<i32>, #row>
          %1 = tt.load %0 : tensor<32x32xi32, #row>
          %2 = tt.trans %1 {order = [1, 0]} : tensor<32x32xi32, #row>
          tt.store %0, %2 : tensor<32x32x!ptr<i32>, #row>
          tt.return
        }
        // CHECK:      %[[V:.*]] = tt.load
        // CHECK-NEXT: %[[T:.*]] = tt.trans %[[V]] {order = [1, 0]} : tensor<32x32xi32, #linear<
        // CHECK-NEXT: %[[BUF:.*]] = ttg.local_alloc : tensor<32x32xi32, #swizzled_shared<vec=4, perPhase=4, maxPhase=8,
        // CHECK-NEXT: ttg.local_store %[[BUF]], %[[T]]
        // CHECK-NEXT: %[[R:.*]] = ttg.local_load %[[BUF]] : tensor<32x32xi32, #row>
        // CHECK-NEXT: tt.store %{{.*}}, %[[R]]
        """,
    )


def test_conversion_of_a_trans_converts_the_free_trans_once():
    """``tl.dot(q, tl.trans(k))`` on the mma.sync path: the trans's own layout is a blocked one, its user a
    conversion to the dot operand; the operand is read from the free transpose's buffer, one trip, not two."""
    check_pass(
        convert_through_shared,
        """
        #row = #blocked<sizePerThread=[1, 8], threadsPerWarp=[2, 16], warpsPerCTA=[4, 1], order=[1, 0]>
        #other = #blocked<sizePerThread=[1, 4], threadsPerWarp=[2, 16], warpsPerCTA=[4, 1], order=[1, 0]>
        #b = #dot_op<opIdx=1, parent=#mma<m16n8k16, warpsPerCTA=[1, 4]>, kWidth=2>
        tt.func @k(%x: !ptr<f16>) {
          %0 = tt.splat %x : tensor<64x128x!ptr<f16>, #row>
          %1 = tt.load %0 : tensor<64x128xf16, #row>
          %2 = tt.trans %1 {order = [1, 0]} : tensor<128x64xf16, #other>
          %3 = ttg.convert_layout %2 : tensor<128x64xf16, #b>
          tt.return
        }
        // CHECK:      %[[V:.*]] = tt.load
        // CHECK-NEXT: %[[T:.*]] = tt.trans %[[V]] {order = [1, 0]} : tensor<128x64xf16, #linear<
        // CHECK-NEXT: %[[BUF:.*]] = ttg.local_alloc
        // CHECK-NEXT: ttg.local_store %[[BUF]], %[[T]]
        // CHECK-NEXT: ttg.local_load %[[BUF]] : tensor<128x64xf16, #dot_op<
        // CHECK-NOT:  ttg.local_
        """,
    )


def test_negative_a_register_permutation_stays_a_conversion():
    check_unchanged(
        convert_through_shared,
        """
        #vec4 = #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>
        #swapped = #linear<register=[[2],[1]], lane=[[4],[8],[16],[32],[64]], warp=[], shape=[128]>
        tt.func @k(%x: !ptr<f32>) {
          %0 = tt.splat %x : tensor<128x!ptr<f32>, #vec4>
          %1 = tt.load %0 : tensor<128xf32, #vec4>
          %2 = ttg.convert_layout %1 : tensor<128xf32, #swapped>
          %3 = tt.splat %x : tensor<128x!ptr<f32>, #swapped>
          tt.store %3, %2 : tensor<128x!ptr<f32>, #swapped>
          tt.return
        }
        """,
    )
