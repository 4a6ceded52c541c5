"""Golden IR tests of assign-layouts: every tile gets a layout; conversions only where layouts disagree."""

from __future__ import annotations

from tilelab.compiler.passes import assign_layouts

from .support import check_pass, check_unchanged


def test_default_layout_spreads_a_range_over_num_warps():
    check_pass(
        assign_layouts,
        """
        #spread = #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[2], order=[0]>
        tt.func @k(%x: !ptr<i32>) {
          %0 = tt.make_range {start = 0, end = 256} : tensor<256xi32>
          %1 = tt.splat %x : tensor<256x!ptr<i32>>
          %2 = tt.addptr %1, %0 : tensor<256x!ptr<i32>>
          tt.store %2, %0 : tensor<256x!ptr<i32>>
          tt.return
        }
        // CHECK: tt.make_range {start = 0, end = 256} : tensor<256xi32, #spread>
        // CHECK: tt.splat %x : tensor<256x!ptr<i32>, #spread>
        // CHECK: tt.store %{{.*}}, %{{.*}} : tensor<256x!ptr<i32>, #spread>
        // CHECK-NOT: ttg.convert_layout
        """,
        attrs={"num_warps": 2},
    )


def test_reduction_gives_a_slice_and_broadcast_gives_back_the_parent():
    check_pass(
        assign_layouts,
        """
        tt.func @k(%x: !ptr<f32>) {
          %0 = tt.make_range {start = 0, end = 512} : tensor<512xi32>
          %1 = tt.reshape %0 : tensor<16x32xi32>
          %2 = tt.splat %x : tensor<16x32x!ptr<f32>>
          %3 = tt.addptr %2, %1 : tensor<16x32x!ptr<f32>>
          %4 = tt.load %3 : tensor<16x32xf32>
          %5 = tt.reduce %4 {axis = 1} : tensor<16xf32> {
          ^bb(%a: f32, %b: f32):
            %6 = arith.max %a, %b : f32
            tt.reduce.return %6 : f32
          }
          %7 = tt.expand_dims %5 {axis = 1} : tensor<16x1xf32>
          %8 = tt.broadcast %7 : tensor<16x32xf32>
          %9 = arith.sub %4, %8 : tensor<16x32xf32>
          tt.store %3, %9 : tensor<16x32x!ptr<f32>>
          tt.return
        }
        // CHECK:     %[[X:.*]] = tt.load %{{.*}} : tensor<16x32xf32, #[[P:blocked<.*>]]>
        // CHECK:     %[[M:.*]] = tt.reduce %[[X]] {axis = 1} : tensor<16xf32, #slice<dim=1, parent=#[[P]]>>
        // CHECK:     %[[E:.*]] = tt.expand_dims %[[M]] {axis = 1}
        // CHECK:     %[[B:.*]] = tt.broadcast %[[E]] : tensor<16x32xf32, #[[P]]>
        // CHECK:     arith.sub %[[X]], %[[B]] : tensor<16x32xf32, #[[P]]>
        // CHECK-NOT: ttg.convert_layout
        """,
        attrs={"num_warps": 1},
    )


def test_operands_of_different_layouts_meet_through_a_conversion():
    check_pass(
        assign_layouts,
        """
        tt.func @k(%x: !ptr<f32>) {
          %0 = tt.make_range {start = 0, end = 512} : tensor<512xi32>
          %1 = tt.reshape %0 : tensor<32x16xi32>
          %2 = tt.reshape %0 : tensor<16x32xi32>
          %3 = tt.splat %x : tensor<32x16x!ptr<f32>>
          %4 = tt.addptr %3, %1 : tensor<32x16x!ptr<f32>>
          %5 = tt.load %4 : tensor<32x16xf32>
          %6 = tt.splat %x : tensor<16x32x!ptr<f32>>
          %7 = tt.addptr %6, %2 : tensor<16x32x!ptr<f32>>
          %8 = tt.load %7 : tensor<16x32xf32>
          %9 = tt.reduce %5 {axis = 1} : tensor<32xf32> {
          ^bb(%a: f32, %b: f32):
            %10 = arith.add %a, %b : f32
            tt.reduce.return %10 : f32
          }
          %11 = tt.reduce %8 {axis = 0} : tensor<32xf32> {
          ^bb(%c: f32, %d: f32):
            %12 = arith.add %c, %d : f32
            tt.reduce.return %12 : f32
          }
          %13 = arith.add %9, %11 : tensor<32xf32>
          %14 = tt.splat %x : tensor<32x!ptr<f32>>
          tt.store %14, %13 : tensor<32x!ptr<f32>>
          tt.return
        }
        // CHECK:      %[[ROWS:.*]] = tt.reduce %{{.*}} {axis = 1} : tensor<32xf32, #[[S:slice<dim=1, .*>]]>
        // CHECK:      %[[COLS:.*]] = tt.reduce %{{.*}} {axis = 0} : tensor<32xf32, #slice<dim=0,
        // CHECK:      %[[C:.*]] = ttg.convert_layout %[[COLS]] : tensor<32xf32, #[[S]]>
        // CHECK-NEXT: arith.add %[[ROWS]], %[[C]] : tensor<32xf32, #[[S]]>
        """,
    )


def test_dot_accumulator_takes_an_mma_layout():
    check_pass(
        assign_layouts,
        """
        #mma_acc = #mma<m16n8k16, warpsPerCTA=[2, 2]>
        tt.func @k(%pa: !ptr<f16>, %pc: !ptr<f32>) {
          %0 = tt.make_range {start = 0, end = 512} : tensor<512xi32>
          %1 = tt.reshape %0 : tensor<32x16xi32>
          %2 = tt.splat %pa : tensor<32x16x!ptr<f16>>
          %3 = tt.addptr %2, %1 : tensor<32x16x!ptr<f16>>
          %4 = tt.load %3 : tensor<32x16xf16>
          %5 = tt.trans %4 {order = [1, 0]} : tensor<16x32xf16>
          %6 = arith.constant {value = 0.0} : tensor<32x32xf32>
          %7 = tt.dot %4, %5, %6 : tensor<32x32xf32>
          %8 = tt.splat %pc : tensor<32x32x!ptr<f32>>
          tt.store %8, %7 : tensor<32x32x!ptr<f32>>
          tt.return
        }
        // CHECK:      %[[Z:.*]] = arith.constant {value = 0.0} : tensor<32x32xf32, #mma_acc>
        // CHECK-NEXT: %[[D:.*]] = tt.dot %{{.*}}, %{{.*}}, %[[Z]] : tensor<32x32xf32, #mma_acc>
        // CHECK:      tt.store %{{.*}}, %[[D]] : tensor<32x32x!ptr<f32>, #mma_acc>
        """,
    )


def test_a_loop_adding_a_dot_to_its_accumulator_carries_it_in_the_mma_layout():
    """``acc = acc + tl.dot(a, b)`` (the dot starts from zero: a split dot's sums, a rescaled accumulator): the
    loop carries ``acc`` in the dot's layout, from its zeros before the loop; nothing converts in the loop."""
    check_pass(
        assign_layouts,
        """
        #mma_acc = #mma<m16n8k16, warpsPerCTA=[2, 2]>
        tt.func @k(%pa: !ptr<f16>, %pc: !ptr<f32>, %n: i32) {
          %0 = tt.make_range {start = 0, end = 512} : tensor<512xi32>
          %1 = tt.reshape %0 : tensor<32x16xi32>
          %2 = tt.splat %pa : tensor<32x16x!ptr<f16>>
          %3 = tt.addptr %2, %1 : tensor<32x16x!ptr<f16>>
          %4 = arith.constant {value = 0.0} : tensor<32x32xf32>
          %c0 = arith.constant {value = 0} : i32
          %c1 = arith.constant {value = 1} : i32
          %5 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %4) -> (tensor<32x32xf32>) {
            %6 = tt.load %3 : tensor<32x16xf16>
            %7 = tt.trans %6 {order = [1, 0]} : tensor<16x32xf16>
            %8 = arith.constant {value = 0.0} : tensor<32x32xf32>
            %9 = tt.dot %6, %7, %8 : tensor<32x32xf32>
            %10 = arith.add %acc, %9 : tensor<32x32xf32>
            scf.yield %10
          }
          %11 = tt.splat %pc : tensor<32x32x!ptr<f32>>
          tt.store %11, %5 : tensor<32x32x!ptr<f32>>
          tt.return
        }
        // CHECK:     arith.constant {value = 0.0} : tensor<32x32xf32, #mma_acc>
        // CHECK:     scf.for {{.*}} -> (tensor<32x32xf32, #mma_acc>)
        // CHECK-NOT: ttg.convert_layout
        // CHECK:     %[[D:.*]] = tt.dot {{.*}} : tensor<32x32xf32, #mma_acc>
        // CHECK-NOT: ttg.convert_layout
        // CHECK:     arith.add %acc, %[[D]] : tensor<32x32xf32, #mma_acc>
        // CHECK-NOT: ttg.convert_layout
        // CHECK:     scf.yield
        """,
    )


def test_negative_a_kernel_of_scalars_has_no_tile_to_lay_out():
    check_unchanged(
        assign_layouts,
        """
        tt.func @k(%x: !ptr<f32>) {
          %0 = tt.load %x : f32
          %1 = arith.add %0, %0 : f32
          tt.store %x, %1 : !ptr<f32>
          tt.return
        }
        """,
    )


def test_wavefronts_of_64_lanes_when_the_options_say_so():
    """AMD gfx942 (``CompileOptions.warp_size=64``): the same tile over half as many registers per lane."""
    check_pass(
        assign_layouts,
        """
        #wave = #blocked<sizePerThread=[2], threadsPerWarp=[64], warpsPerCTA=[2], order=[0]>
        tt.func @k(%x: !ptr<i32>) {
          %0 = tt.make_range {start = 0, end = 256} : tensor<256xi32>
          %1 = tt.splat %x : tensor<256x!ptr<i32>>
          %2 = tt.addptr %1, %0 : tensor<256x!ptr<i32>>
          tt.store %2, %0 : tensor<256x!ptr<i32>>
          tt.return
        }
        // CHECK: tt.make_range {start = 0, end = 256} : tensor<256xi32, #wave>
        // CHECK: tt.store %{{.*}}, %{{.*}} : tensor<256x!ptr<i32>, #wave>
        """,
        attrs={"num_warps": 2, "warp_size": 64},
    )


def test_negative_no_mma_layout_for_a_dot_on_64_lane_wavefronts():
    """``mma.sync`` fragments are NVIDIA's 32-lane ones: with 64 lanes a dot keeps a blocked layout."""
    check_pass(
        assign_layouts,
        """
        tt.func @k(%pa: !ptr<f16>, %pc: !ptr<f32>) {
          %0 = tt.make_range {start = 0, end = 512} : tensor<512xi32>
          %1 = tt.reshape %0 : tensor<32x16xi32>
          %2 = tt.splat %pa : tensor<32x16x!ptr<f16>>
          %3 = tt.addptr %2, %1 : tensor<32x16x!ptr<f16>>
          %4 = tt.load %3 : tensor<32x16xf16>
          %5 = tt.trans %4 {order = [1, 0]} : tensor<16x32xf16>
          %6 = arith.constant {value = 0.0} : tensor<32x32xf32>
          %7 = tt.dot %4, %5, %6 : tensor<32x32xf32>
          %8 = tt.splat %pc : tensor<32x32x!ptr<f32>>
          tt.store %8, %7 : tensor<32x32x!ptr<f32>>
          tt.return
        }
        // CHECK:     tt.dot {{.*}} : tensor<32x32xf32, #blocked<{{.*}}threadsPerWarp=[8, 8], warpsPerCTA=[4, 1]
        // CHECK-NOT: mma
        """,
        attrs={"warp_size": 64},
    )


ONE = "#one = #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[4], order=[0]>\n"
FOUR = "#four = #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[4], order=[0]>\n"
ROWS = """
tt.func @k(%x: !ptr<f32>, %y: !ptr<f32>, %stride: i32) {
  %0 = tt.get_program_id {axis = 0} : i32
  %1 = arith.mul %0, %stride : i32
  %2 = tt.addptr %x, %1 : !ptr<f32>
  %3 = tt.make_range {start = 0, end = 1024} : tensor<1024xi32>
  %4 = tt.splat %2 : tensor<1024x!ptr<f32>>
  %5 = tt.addptr %4, %3 : tensor<1024x!ptr<f32>>
  %6 = tt.load %5 : tensor<1024xf32>
  %7 = tt.splat %y : tensor<1024x!ptr<f32>>
  %8 = tt.addptr %7, %3 : tensor<1024x!ptr<f32>>
  tt.store %8, %6 : tensor<1024x!ptr<f32>>
  tt.return
}
"""


def test_rows_of_unaligned_stride_take_one_element_per_thread():
    # x + pid * stride is 4-byte aligned only: every load is one f32, so lanes take consecutive
    # elements (a warp instruction reads 128 contiguous bytes); the aligned store of the same
    # shape goes along, without a conversion
    check_pass(
        assign_layouts,
        ONE
        + ROWS
        + """
        // CHECK: tt.load %{{.*}} : tensor<1024xf32, #one>
        // CHECK-NOT: ttg.convert_layout
        // CHECK: tt.store %{{.*}}, %{{.*}} : tensor<1024x!ptr<f32>, #one>
        """,
        attrs={"num_warps": 4},
    )


def test_rows_of_aligned_stride_keep_16_byte_vectors():
    check_pass(
        assign_layouts,
        FOUR
        + ROWS
        + """
        // CHECK: tt.load %{{.*}} : tensor<1024xf32, #four>
        // CHECK: tt.store %{{.*}}, %{{.*}} : tensor<1024x!ptr<f32>, #four>
        """,
        attrs={"num_warps": 4, "arg_divisibility": {"stride": 16}},
    )


def test_a_mask_that_splits_vectors_narrows_the_layout():
    # cols < n with n of unknown divisibility: each element has its own predicate
    check_pass(
        assign_layouts,
        """
        #one = #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[8], order=[0]>
        tt.func @k(%x: !ptr<f16>, %n: i32) {
          %0 = tt.make_range {start = 0, end = 2048} : tensor<2048xi32>
          %1 = tt.splat %n : tensor<2048xi32>
          %2 = arith.cmp lt %0, %1 : tensor<2048xi1>
          %3 = tt.splat %x : tensor<2048x!ptr<f16>>
          %4 = tt.addptr %3, %0 : tensor<2048x!ptr<f16>>
          %5 = tt.load %4, %2 : tensor<2048xf16>
          tt.store %4, %5, %2 : tensor<2048x!ptr<f16>>
          tt.return
        }
        // CHECK: tt.load %{{.*}} : tensor<2048xf16, #one>
        """,
        attrs={"num_warps": 8},
    )


def test_negative_a_wider_type_moving_its_own_16_bytes_does_not_narrow():
    # halves in, floats out, both aligned: 8 halves per thread (one 16-byte load), the floats
    # go out as two 16-byte stores; only an access short of its 16 bytes narrows the layout
    check_pass(
        assign_layouts,
        """
        #eight = #blocked<sizePerThread=[8], threadsPerWarp=[32], warpsPerCTA=[4], order=[0]>
        tt.func @k(%x: !ptr<f16>, %y: !ptr<f32>) {
          %0 = tt.make_range {start = 0, end = 1024} : tensor<1024xi32>
          %1 = tt.splat %x : tensor<1024x!ptr<f16>>
          %2 = tt.addptr %1, %0 : tensor<1024x!ptr<f16>>
          %3 = tt.load %2 : tensor<1024xf16>
          %4 = tt.cast %3 : tensor<1024xf32>
          %5 = tt.splat %y : tensor<1024x!ptr<f32>>
          %6 = tt.addptr %5, %0 : tensor<1024x!ptr<f32>>
          tt.store %6, %4 : tensor<1024x!ptr<f32>>
          tt.return
        }
        // CHECK: tt.load %{{.*}} : tensor<1024xf16, #eight>
        // CHECK: tt.store %{{.*}}, %{{.*}} : tensor<1024x!ptr<f32>, #eight>
        """,
        attrs={"num_warps": 4},
    )


def test_join_and_reshape_keep_each_element_in_its_thread():
    """Joined tiles pair up in each thread's registers; a reshape of them keeps every element where it is
    (as Triton's layouts for join and reshape): neither moves data, so no conversion appears. A reshape of
    a range is a fresh tile: the range is made again in whatever layout its shape takes."""
    check_pass(
        assign_layouts,
        """
        tt.func @k(%x: !ptr<f32>) {
          %0 = tt.make_range {start = 0, end = 256} : tensor<256xi32>
          %1 = tt.splat %x : tensor<256x!ptr<f32>>
          %2 = tt.addptr %1, %0 : tensor<256x!ptr<f32>>
          %3 = tt.load %2 : tensor<256xf32>
          %4 = arith.mul %3, %3 : tensor<256xf32>
          %5 = tt.join %3, %4 : tensor<256x2xf32>
          %6 = tt.reshape %5 : tensor<512xf32>
          %7 = tt.reshape %0 : tensor<16x16xi32>
          tt.return
        }
        // CHECK:      %[[X:.*]] = tt.load %{{.*}} : tensor<256xf32, #[[L:blocked<.*>]]>
        // CHECK:      tt.join %[[X]], %{{.*}} : tensor<256x2xf32, #linear<register={{\\[\\[0,1\\],\\[1,0\\].*}}
        // CHECK-NEXT: tt.reshape %{{.*}} : tensor<512xf32, #linear<register={{\\[\\[1\\],\\[2\\],\\[4\\]\\]}},
        // CHECK-NEXT: tt.reshape %{{.*}} : tensor<16x16xi32, #blocked<
        // CHECK-NOT:  ttg.convert_layout
        """,
        attrs={"num_warps": 2},
    )


def test_gather_result_takes_its_index_layout_and_the_source_keeps_its_own():
    check_pass(
        assign_layouts,
        """
        tt.func @k(%x: !ptr<f32>, %y: !ptr<i32>) {
          %0 = tt.make_range {start = 0, end = 512} : tensor<512xi32>
          %1 = tt.reshape %0 : tensor<16x32xi32>
          %2 = tt.splat %x : tensor<16x32x!ptr<f32>>
          %3 = tt.addptr %2, %1 : tensor<16x32x!ptr<f32>>
          %4 = tt.load %3 : tensor<16x32xf32>
          %5 = tt.make_range {start = 0, end = 128} : tensor<128xi32>
          %6 = tt.reshape %5 : tensor<4x32xi32>
          %7 = tt.splat %y : tensor<4x32x!ptr<i32>>
          %8 = tt.addptr %7, %6 : tensor<4x32x!ptr<i32>>
          %9 = tt.load %8 : tensor<4x32xi32>
          %10 = tt.gather %4, %9 {axis = 0} : tensor<4x32xf32>
          %11 = tt.splat %x : tensor<4x32x!ptr<f32>>
          %12 = tt.addptr %11, %6 : tensor<4x32x!ptr<f32>>
          tt.store %12, %10 : tensor<4x32x!ptr<f32>>
          tt.return
        }
        // CHECK:     %[[S:.*]] = tt.load %{{.*}} : tensor<16x32xf32, #{{.*}}>
        // CHECK:     %[[I:.*]] = tt.load %{{.*}} : tensor<4x32xi32, #[[L:blocked<.*>]]>
        // CHECK:     tt.gather %[[S]], %[[I]] {axis = 0} : tensor<4x32xf32, #[[L]]>
        // CHECK-NOT: ttg.convert_layout
        """,
        attrs={"num_warps": 1},
    )
