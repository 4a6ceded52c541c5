"""Golden IR tests of rematerialize: index tiles computed again in the layout a user wants, not moved."""

from __future__ import annotations

from tilelab.compiler.passes import rematerialize

from .support import check_pass, check_unchanged

#: two layouts of a 128-element tile that a conversion between moves elements across threads
LAYOUTS = """
#vec4 = #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>
#vec1 = #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>
"""


def test_pointer_tile_is_built_again_in_the_wanted_layout():
    check_pass(
        rematerialize,
        LAYOUTS
        + """
        tt.func @k(%x: !ptr<f32>) {
          %0 = tt.make_range {start = 0, end = 128} : tensor<128xi32, #vec4>
          %1 = tt.splat %x : tensor<128x!ptr<f32>, #vec4>
          %2 = tt.addptr %1, %0 : tensor<128x!ptr<f32>, #vec4>
          %3 = ttg.convert_layout %2 : tensor<128x!ptr<f32>, #vec1>
          %4 = tt.load %3 : tensor<128xf32, #vec1>
          tt.store %3, %4 : tensor<128x!ptr<f32>, #vec1>
          tt.return
        }
        // CHECK-NOT:  ttg.convert_layout
        // CHECK:      %[[R:.*]] = tt.make_range {start = 0, end = 128} : tensor<128xi32, #vec1>
        // CHECK-NEXT: %[[S:.*]] = tt.splat %x : tensor<128x!ptr<f32>, #vec1>
        // CHECK-NEXT: %[[P:.*]] = tt.addptr %[[S]], %[[R]] : tensor<128x!ptr<f32>, #vec1>
        // CHECK-NEXT: %[[V:.*]] = tt.load %[[P]]
        // CHECK-NEXT: tt.store %[[P]], %[[V]]
        """,
    )


def test_constants_and_scalar_splats_are_copied_with_the_chain():
    check_pass(
        rematerialize,
        LAYOUTS
        + """
        tt.func @k(%x: !ptr<i32>, %n: i32) {
          %0 = tt.make_range {start = 0, end = 128} : tensor<128xi32, #vec4>
          %1 = arith.constant {value = 4} : tensor<128xi32, #vec4>
          %2 = arith.mul %0, %1 : tensor<128xi32, #vec4>
          %3 = tt.splat %n : tensor<128xi32, #vec4>
          %4 = arith.add %2, %3 : tensor<128xi32, #vec4>
          %5 = ttg.convert_layout %4 : tensor<128xi32, #vec1>
          %6 = tt.splat %x : tensor<128x!ptr<i32>, #vec1>
          %7 = tt.addptr %6, %5 : tensor<128x!ptr<i32>, #vec1>
          tt.store %7, %5 : tensor<128x!ptr<i32>, #vec1>
          tt.return
        }
        // CHECK:     %[[R:.*]] = tt.make_range {start = 0, end = 128} : tensor<128xi32, #vec1>
        // CHECK:     %[[C:.*]] = arith.constant {value = 4} : tensor<128xi32, #vec1>
        // CHECK:     %[[M:.*]] = arith.mul %[[R]], %[[C]] : tensor<128xi32, #vec1>
        // CHECK:     %[[N:.*]] = tt.splat %n : tensor<128xi32, #vec1>
        // CHECK:     %[[I:.*]] = arith.add %[[M]], %[[N]] : tensor<128xi32, #vec1>
        // CHECK-NOT: ttg.convert_layout
        // CHECK:     %[[P:.*]] = tt.addptr %{{.*}}, %[[I]]
        // CHECK:     tt.store %[[P]], %[[I]]
        """,
    )


def test_loop_invariant_part_of_a_copy_stays_before_the_loop():
    check_pass(
        rematerialize,
        LAYOUTS
        + """
        tt.func @k(%x: !ptr<i32>, %n: i32) {
          %0 = tt.make_range {start = 0, end = 128} : tensor<128xi32, #vec4>
          scf.for %k = %n to %n step %n {
            %1 = tt.splat %k : tensor<128xi32, #vec4>
            %2 = arith.add %1, %0 : tensor<128xi32, #vec4>
            %3 = ttg.convert_layout %2 : tensor<128xi32, #vec1>
            %4 = tt.splat %x : tensor<128x!ptr<i32>, #vec1>
            %5 = tt.addptr %4, %3 : tensor<128x!ptr<i32>, #vec1>
            tt.store %5, %3 : tensor<128x!ptr<i32>, #vec1>
            scf.yield
          }
          tt.return
        }
        // CHECK:     %[[R:.*]] = tt.make_range {start = 0, end = 128} : tensor<128xi32, #vec1>
        // CHECK:     scf.for %k
        // CHECK-NOT: tt.make_range
        // CHECK:     %[[K:.*]] = tt.splat %k : tensor<128xi32, #vec1>
        // CHECK:     %[[I:.*]] = arith.add %[[K]], %[[R]] : tensor<128xi32, #vec1>
        // CHECK-NOT: ttg.convert_layout
        // CHECK:     tt.store %{{.*}}, %[[I]]
        """,
    )


def test_negative_a_loaded_tile_moves_through_its_conversion():
    check_unchanged(
        rematerialize,
        LAYOUTS
        + """
        tt.func @k(%x: !ptr<i32>) {
          %0 = tt.splat %x : tensor<128x!ptr<i32>, #vec4>
          %1 = tt.load %0 : tensor<128xi32, #vec4>
          %2 = ttg.convert_layout %1 : tensor<128xi32, #vec1>
          %3 = tt.splat %x : tensor<128x!ptr<i32>, #vec1>
          tt.store %3, %2 : tensor<128x!ptr<i32>, #vec1>
          tt.return
        }
        """,
    )


def test_negative_a_conversion_inside_each_thread_stays():
    check_unchanged(
        rematerialize,
        """
        #vec4 = #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>
        #swapped = #linear<register=[[2],[1]], lane=[[4],[8],[16],[32],[64]], warp=[], shape=[128]>
        tt.func @k(%x: !ptr<i32>) {
          %0 = tt.make_range {start = 0, end = 128} : tensor<128xi32, #vec4>
          %1 = ttg.convert_layout %0 : tensor<128xi32, #swapped>
          %2 = tt.splat %x : tensor<128x!ptr<i32>, #swapped>
          tt.store %2, %1 : tensor<128x!ptr<i32>, #swapped>
          tt.return
        }
        """,
    )


def masked_load(n: int, hint: str = "") -> str:
    """A masked load of an ``n``-element tile (``other`` 0.0) in #vec4 whose value is wanted in #vec1."""
    return (
        LAYOUTS
        + f"""
        tt.func @k(%x: !ptr<f32>, %y: !ptr<f32>, %n: i32) {{
          %0 = tt.make_range {{start = 0, end = {n}}} : tensor<{n}xi32, #vec4>
          %1 = tt.splat %x : tensor<{n}x!ptr<f32>, #vec4>
          %2 = tt.addptr %1, %0 : tensor<{n}x!ptr<f32>, #vec4>
          %3 = tt.splat %n : tensor<{n}xi32, #vec4>
          %4 = arith.cmp lt %0, %3 : tensor<{n}xi1, #vec4>
          %5 = arith.constant {{value = 0.0}} : tensor<{n}xf32, #vec4>
          %6 = tt.load %2, %4, %5{hint} : tensor<{n}xf32, #vec4>
          %7 = ttg.convert_layout %6 : tensor<{n}xf32, #vec1>
          %8 = tt.splat %y : tensor<{n}x!ptr<f32>, #vec1>
          tt.store %8, %7 : tensor<{n}x!ptr<f32>, #vec1>
          tt.return
        }}
        """
    )


def test_a_cheap_load_is_loaded_again_with_its_mask_and_other():
    # 32 elements, 32 threads: no more elements than threads, so loading again is cheaper than moving
    check_pass(
        rematerialize,
        masked_load(32)
        + """
        // CHECK-NOT:  ttg.convert_layout
        // CHECK:      %[[Y:.*]] = tt.splat %y
        // CHECK-NEXT: %[[S:.*]] = tt.splat %x : tensor<32x!ptr<f32>, #vec1>
        // CHECK-NEXT: %[[R:.*]] = tt.make_range {start = 0, end = 32} : tensor<32xi32, #vec1>
        // CHECK-NEXT: %[[P:.*]] = tt.addptr %[[S]], %[[R]] : tensor<32x!ptr<f32>, #vec1>
        // CHECK-NEXT: %[[N:.*]] = tt.splat %n : tensor<32xi32, #vec1>
        // CHECK-NEXT: %[[M:.*]] = arith.cmp lt %[[R]], %[[N]] : tensor<32xi1, #vec1>
        // CHECK-NEXT: %[[O:.*]] = arith.constant {value = 0.0} : tensor<32xf32, #vec1>
        // CHECK-NEXT: %[[V:.*]] = tt.load %[[P]], %[[M]], %[[O]] : tensor<32xf32, #vec1>
        // CHECK-NEXT: tt.store %[[Y]], %[[V]]
        """,
    )


def test_a_copied_load_is_not_moved_past_a_store():
    # the copy goes down to its first user past pure ops only: here a store comes first
    check_pass(
        rematerialize,
        LAYOUTS
        + """
        tt.func @k(%x: !ptr<f32>, %y: !ptr<f32>) {
          %0 = tt.make_range {start = 0, end = 32} : tensor<32xi32, #vec4>
          %1 = tt.splat %x : tensor<32x!ptr<f32>, #vec4>
          %2 = tt.addptr %1, %0 : tensor<32x!ptr<f32>, #vec4>
          %3 = tt.load %2 : tensor<32xf32, #vec4>
          %4 = arith.constant {value = 1.0} : tensor<32xf32, #vec4>
          tt.store %2, %4 : tensor<32x!ptr<f32>, #vec4>
          %5 = ttg.convert_layout %3 : tensor<32xf32, #vec1>
          %6 = tt.splat %y : tensor<32x!ptr<f32>, #vec1>
          tt.store %6, %5 : tensor<32x!ptr<f32>, #vec1>
          tt.return
        }
        // CHECK:      %[[V:.*]] = tt.load %{{.*}} : tensor<32xf32, #vec1>
        // CHECK:      tt.store %{{.*}}, %{{.*}} : tensor<32x!ptr<f32>, #vec4>
        // CHECK-NOT:  ttg.convert_layout
        // CHECK:      tt.store %{{.*}}, %[[V]] : tensor<32x!ptr<f32>, #vec1>
        """,
    )


def test_negative_a_load_of_more_elements_than_threads_moves():
    # 64 elements, 32 threads: each thread would load its elements again from memory
    check_unchanged(rematerialize, masked_load(64))


def test_negative_a_volatile_load_is_not_repeated():
    check_unchanged(rematerialize, masked_load(32, " {volatile = true}"))
