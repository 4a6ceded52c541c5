"""Golden IR tests of remove-layout-conversions: conversions that move nothing, chains, loop-carried values."""

from __future__ import annotations

from tilelab.compiler.passes import remove_layout_conversions

from .support import check_pass, check_unchanged

LAYOUTS = """
#vec4 = #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>
#vec1 = #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>
#vec2 = #blocked<sizePerThread=[2], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>
"""


def test_conversion_to_the_same_layout_goes():
    check_pass(
        remove_layout_conversions,
        LAYOUTS
        + """
        tt.func @k(%x: !ptr<f32>) {
          %0 = tt.splat %x : tensor<128x!ptr<f32>, #vec4>
          %1 = tt.load %0 : tensor<128xf32, #vec4>
          %2 = ttg.convert_layout %1 : tensor<128xf32, #vec4>
          %3 = arith.add %2, %2 : tensor<128xf32, #vec4>
          tt.store %0, %3 : tensor<128x!ptr<f32>, #vec4>
          tt.return
        }
        // CHECK:      %[[V:.*]] = tt.load
        // CHECK-NEXT: arith.add %[[V]], %[[V]] : tensor<128xf32, #vec4>
        // CHECK-NOT:  ttg.convert_layout
        """,
    )


def test_chain_of_conversions_becomes_its_last_one():
    check_pass(
        remove_layout_conversions,
        LAYOUTS
        + """
        tt.func @k(%x: !ptr<f32>) {
          %0 = tt.splat %x : tensor<128x!ptr<f32>, #vec2>
          %1 = tt.splat %x : tensor<128x!ptr<f32>, #vec4>
          %2 = tt.load %1 : tensor<128xf32, #vec4>
          %3 = ttg.convert_layout %2 : tensor<128xf32, #vec1>
          %4 = ttg.convert_layout %3 : tensor<128xf32, #vec2>
          tt.store %0, %4 : tensor<128x!ptr<f32>, #vec2>
          tt.return
        }
        // CHECK:      %[[V:.*]] = tt.load
        // CHECK-NEXT: %[[C:.*]] = ttg.convert_layout %[[V]] : tensor<128xf32, #vec2>
        // CHECK-NEXT: tt.store %{{.*}}, %[[C]]
        """,
    )


def test_loop_carried_value_moves_to_the_layout_its_loop_computes_it_in():
    check_pass(
        remove_layout_conversions,
        LAYOUTS
        + """
        tt.func @k(%x: !ptr<f32>, %n: i32) {
          %0 = tt.splat %x : tensor<128x!ptr<f32>, #vec4>
          %1 = tt.load %0 : tensor<128xf32, #vec4>
          %2 = arith.constant {value = 0.0} : tensor<128xf32, #vec1>
          %3 = scf.for %i = %n to %n step %n iter_args(%acc = %2) -> (tensor<128xf32, #vec1>) {
            %4 = ttg.convert_layout %1 : tensor<128xf32, #vec1>
            %5 = arith.add %acc, %4 : tensor<128xf32, #vec1>
            scf.yield %5 : tensor<128xf32, #vec1>
          }
          %6 = tt.splat %x : tensor<128x!ptr<f32>, #vec1>
          tt.store %6, %3 : tensor<128x!ptr<f32>, #vec1>
          tt.return
        }
        // CHECK:      %[[V:.*]] = tt.load
        // CHECK:      %[[Z:.*]] = arith.constant {value = 0.0} : tensor<128xf32, #vec4>
        // CHECK-NEXT: %[[R:.*]] = scf.for {{.*}} iter_args(%acc = %[[Z]]) -> (tensor<128xf32, #vec4>)
        // CHECK-NEXT:   %[[S:.*]] = arith.add %acc, %[[V]] : tensor<128xf32, #vec4>
        // CHECK-NEXT:   scf.yield %[[S]]
        // CHECK-NEXT: }
        // CHECK-NEXT: %[[OUT:.*]] = ttg.convert_layout %[[R]] : tensor<128xf32, #vec1>
        // CHECK:      tt.store %{{.*}}, %[[OUT]]
        """,
    )


def test_negative_a_needed_conversion_stays():
    check_unchanged(
        remove_layout_conversions,
        LAYOUTS
        + """
        tt.func @k(%x: !ptr<f32>) {
          %0 = tt.splat %x : tensor<128x!ptr<f32>, #vec4>
          %1 = tt.load %0 : tensor<128xf32, #vec4>
          %2 = ttg.convert_layout %1 : tensor<128xf32, #vec1>
          %3 = tt.splat %x : tensor<128x!ptr<f32>, #vec1>
          tt.store %3, %2 : tensor<128x!ptr<f32>, #vec1>
          tt.return
        }
        """,
    )


ROWS = """
#wide = #blocked<sizePerThread=[1, 4], threadsPerWarp=[8, 4], warpsPerCTA=[1, 1], order=[1, 0]>
#tall = #blocked<sizePerThread=[4, 1], threadsPerWarp=[2, 16], warpsPerCTA=[1, 1], order=[0, 1]>
"""


def test_conversion_of_a_broadcast_converts_the_row_then_broadcasts():
    # 16 elements cross threads, not 8 x 16; the wide broadcast is dropped
    check_pass(
        remove_layout_conversions,
        ROWS
        + """
        tt.func @k(%x: !ptr<f32>) {
          %0 = tt.splat %x : tensor<1x16x!ptr<f32>, #wide>
          %1 = tt.load %0 : tensor<1x16xf32, #wide>
          %2 = tt.broadcast %1 : tensor<8x16xf32, #wide>
          %3 = ttg.convert_layout %2 : tensor<8x16xf32, #tall>
          %4 = tt.splat %x : tensor<8x16x!ptr<f32>, #tall>
          tt.store %4, %3 : tensor<8x16x!ptr<f32>, #tall>
          tt.return
        }
        // CHECK:      %[[V:.*]] = tt.load
        // CHECK-NEXT: %[[C:.*]] = ttg.convert_layout %[[V]] : tensor<1x16xf32,
        // CHECK-NEXT: %[[B:.*]] = tt.broadcast %[[C]] : tensor<8x16xf32, #tall>
        // CHECK-NOT:  ttg.convert_layout
        // CHECK:      tt.store %{{.*}}, %[[B]]
        """,
    )
