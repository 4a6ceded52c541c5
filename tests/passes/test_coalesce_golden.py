"""Golden IR tests of coalesce: accesses contiguous along dim 0 get a layout whose threads run along dim 0."""

from __future__ import annotations

from tilelab.compiler.passes import coalesce

from .support import check_pass, check_unchanged

#: a 32x32 tile laid out row-major (``#row``), its row index ``%1`` (i) and ``%8 = i + 32 * j``:
#: addresses ``x + %8`` run along dim 0, so the coalesced layout is ``#col``
HEADER = """
#row = #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>
#col = #blocked<sizePerThread=[4, 1], threadsPerWarp=[8, 4], warpsPerCTA=[1, 4], order=[0, 1]>
#i = #slice<dim=1, parent=#row>
#j = #slice<dim=0, parent=#row>
tt.func @k(%x: !ptr<f32>) {
  %0 = tt.make_range {start = 0, end = 32} : tensor<32xi32, #i>
  %1 = tt.expand_dims %0 {axis = 1} : tensor<32x1xi32, #row>
  %2 = tt.make_range {start = 0, end = 32} : tensor<32xi32, #j>
  %3 = tt.expand_dims %2 {axis = 0} : tensor<1x32xi32, #row>
  %4 = arith.constant {value = 32} : tensor<1x32xi32, #row>
  %5 = arith.mul %3, %4 : tensor<1x32xi32, #row>
  %6 = tt.broadcast %1 : tensor<32x32xi32, #row>
  %7 = tt.broadcast %5 : tensor<32x32xi32, #row>
  %8 = arith.add %6, %7 : tensor<32x32xi32, #row>
  %9 = tt.splat %x : tensor<32x32x!ptr<f32>, #row>
"""


def test_transposed_store_runs_along_dim_0():
    check_pass(
        coalesce,
        HEADER
        + """
          %10 = tt.addptr %9, %8 : tensor<32x32x!ptr<f32>, #row>
          %11 = tt.cast %8 : tensor<32x32xf32, #row>
          tt.store %10, %11 : tensor<32x32x!ptr<f32>, #row>
          tt.return
        }
        // CHECK:      %[[P:.*]] = tt.addptr %{{.*}}, %{{.*}} : tensor<32x32x!ptr<f32>, #row>
        // CHECK-NEXT: %[[V:.*]] = tt.cast
        // CHECK-NEXT: %[[PC:.*]] = ttg.convert_layout %[[P]] : tensor<32x32x!ptr<f32>, #col>
        // CHECK-NEXT: %[[VC:.*]] = ttg.convert_layout %[[V]] : tensor<32x32xf32, #col>
        // CHECK-NEXT: tt.store %[[PC]], %[[VC]] : tensor<32x32x!ptr<f32>, #col>
        """,
    )


def test_transposed_load_is_converted_back_for_its_users():
    check_pass(
        coalesce,
        HEADER
        + """
          %10 = tt.addptr %9, %8 : tensor<32x32x!ptr<f32>, #row>
          %11 = tt.load %10 : tensor<32x32xf32, #row>
          %12 = arith.add %11, %11 : tensor<32x32xf32, #row>
          tt.store %10, %12 : tensor<32x32x!ptr<f32>, #row>
          tt.return
        }
        // CHECK:      %[[P:.*]] = tt.addptr
        // CHECK-NEXT: %[[PC:.*]] = ttg.convert_layout %[[P]] : tensor<32x32x!ptr<f32>, #col>
        // CHECK-NEXT: %[[L:.*]] = tt.load %[[PC]] : tensor<32x32xf32, #col>
        // CHECK-NEXT: %[[LR:.*]] = ttg.convert_layout %[[L]] : tensor<32x32xf32, #row>
        // CHECK-NEXT: arith.add %[[LR]], %[[LR]] : tensor<32x32xf32, #row>
        // CHECK:      tt.store {{.*}} : tensor<32x32x!ptr<f32>, #col>
        """,
    )


def test_negative_row_major_access_stays():
    check_unchanged(
        coalesce,
        HEADER
        + """
          %10 = arith.constant {value = 32} : tensor<32x1xi32, #row>
          %11 = arith.mul %1, %10 : tensor<32x1xi32, #row>
          %12 = tt.broadcast %11 : tensor<32x32xi32, #row>
          %13 = tt.broadcast %3 : tensor<32x32xi32, #row>
          %14 = arith.add %12, %13 : tensor<32x32xi32, #row>
          %15 = tt.addptr %9, %14 : tensor<32x32x!ptr<f32>, #row>
          %16 = tt.load %15 : tensor<32x32xf32, #row>
          tt.store %15, %16 : tensor<32x32x!ptr<f32>, #row>
          tt.return
        }
        """,
    )


#: one shape, an i8 load and an f32 store: the shape's vector is the i8 one (16 elements)
MIXED = """
#v16 = #blocked<sizePerThread=[16], threadsPerWarp=[32], warpsPerCTA=[4], order=[0]>
#v4 = #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[4], order=[0]>
tt.func @k(%x: !ptr<i8>, %y: !ptr<f32>) {
  %0 = tt.make_range {start = 0, end = 2048} : tensor<2048xi32, #v16>
  %1 = tt.splat %x : tensor<2048x!ptr<i8>, #v16>
  %2 = tt.addptr %1, %0 : tensor<2048x!ptr<i8>, #v16>
  %3 = tt.load %2 : tensor<2048xi8, #v16>
  %4 = tt.cast %3 : tensor<2048xf32, #v16>
  %5 = tt.splat %y : tensor<2048x!ptr<f32>, #v16>
  %6 = tt.addptr %5, %0 : tensor<2048x!ptr<f32>, #v16>
"""


def test_wide_store_of_a_narrow_shape_gets_its_own_16_byte_vector():
    check_pass(
        coalesce,
        MIXED
        + """
          tt.store %6, %4 : tensor<2048x!ptr<f32>, #v16>
          tt.return
        }
        // CHECK:      %[[L:.*]] = tt.load %{{.*}} : tensor<2048xi8, #v16>
        // CHECK:      %[[PC:.*]] = ttg.convert_layout %{{.*}} : tensor<2048x!ptr<f32>, #v4>
        // CHECK-NEXT: %[[VC:.*]] = ttg.convert_layout %{{.*}} : tensor<2048xf32, #v4>
        // CHECK-NEXT: tt.store %[[PC]], %[[VC]] : tensor<2048x!ptr<f32>, #v4>
        """,
        attrs={"num_warps": 4},
    )


def test_negative_narrow_access_keeps_the_shape_vector():
    check_unchanged(
        coalesce,
        MIXED
        + """
          %7 = tt.splat %x : tensor<2048x!ptr<i8>, #v16>
          %8 = tt.addptr %7, %0 : tensor<2048x!ptr<i8>, #v16>
          tt.store %8, %3 : tensor<2048x!ptr<i8>, #v16>
          tt.return
        }
        """,
        attrs={"num_warps": 4},
    )


def test_negative_wide_load_of_a_narrow_shape_keeps_the_shape_vector():
    """An f32 load in the i8 store's shape (a bf16 row read for an fp8 store, as in row quantization):
    its 64 bytes a thread go as four 16-byte loads whose gaps L1 serves, with no trip through shared
    memory; Triton keeps the load's layout the same way."""
    check_unchanged(
        coalesce,
        """
#v16 = #blocked<sizePerThread=[16], threadsPerWarp=[32], warpsPerCTA=[4], order=[0]>
tt.func @k(%x: !ptr<f32>, %y: !ptr<i8>) {
  %0 = tt.make_range {start = 0, end = 2048} : tensor<2048xi32, #v16>
  %1 = tt.splat %x : tensor<2048x!ptr<f32>, #v16>
  %2 = tt.addptr %1, %0 : tensor<2048x!ptr<f32>, #v16>
  %3 = tt.load %2 : tensor<2048xf32, #v16>
  %4 = tt.cast %3 : tensor<2048xi8, #v16>
  %5 = tt.splat %y : tensor<2048x!ptr<i8>, #v16>
  %6 = tt.addptr %5, %0 : tensor<2048x!ptr<i8>, #v16>
  tt.store %6, %4 : tensor<2048x!ptr<i8>, #v16>
  tt.return
}
""",
        attrs={"num_warps": 4},
    )


def test_wide_atomic_of_a_narrow_shape_gets_its_own_16_byte_vector():
    """An atomic writes as a store does: 64 bytes a thread would give four ``red.v4`` whose lanes each cover a
    quarter of a sector group; its own 16-byte layout makes each instruction's lanes contiguous. Its old values
    are converted back for their readers."""
    check_pass(
        coalesce,
        MIXED
        + """
          %7 = tt.atomic_rmw %6, %4 {kind = "fadd", sem = "relaxed", scope = "gpu"} : tensor<2048xf32, #v16>
          tt.store %6, %7 : tensor<2048x!ptr<f32>, #v16>
          tt.return
        }
        // CHECK:      %[[PC:.*]] = ttg.convert_layout %{{.*}} : tensor<2048x!ptr<f32>, #v4>
        // CHECK-NEXT: %[[VC:.*]] = ttg.convert_layout %{{.*}} : tensor<2048xf32, #v4>
        // CHECK-NEXT: %[[OLD:.*]] = tt.atomic_rmw %[[PC]], %[[VC]] {{.*}} : tensor<2048xf32, #v4>
        // CHECK-NEXT: %[[BACK:.*]] = ttg.convert_layout %[[OLD]] : tensor<2048xf32, #v16>
        """,
        attrs={"num_warps": 4},
    )


def test_transposed_atomic_runs_along_dim_0():
    check_pass(
        coalesce,
        HEADER
        + """
  %10 = tt.addptr %9, %8 : tensor<32x32x!ptr<f32>, #row>
  %11 = tt.cast %8 : tensor<32x32xf32, #row>
  %12 = tt.atomic_rmw %10, %11 {kind = "fadd", sem = "relaxed", scope = "gpu"} : tensor<32x32xf32, #row>
  tt.return
}
// CHECK: tt.atomic_rmw %{{.*}}, %{{.*}} {{.*}} : tensor<32x32xf32, #col>
""",
        attrs={"num_warps": 4},
    )


def test_a_reduced_row_stored_strided_is_spread_over_the_threads():
    """``tl.store(out + rows * 2, tl.max(x, 1))``: the slice leaves each thread 2 rows (8 lanes hold copies),
    2 scalar stores a thread; spread one row a thread, one store."""
    check_pass(
        coalesce,
        HEADER
        + """
          %10 = arith.constant {value = 2} : tensor<32xi32, #i>
          %11 = arith.mul %0, %10 : tensor<32xi32, #i>
          %12 = tt.splat %x : tensor<32x!ptr<f32>, #i>
          %13 = tt.addptr %12, %11 : tensor<32x!ptr<f32>, #i>
          %14 = tt.cast %0 : tensor<32xf32, #i>
          tt.store %13, %14 : tensor<32x!ptr<f32>, #i>
          tt.return
        }
        // CHECK:      %[[P:.*]] = ttg.convert_layout %{{.*}} : tensor<32x!ptr<f32>, #blocked<sizePerThread=[1],
        // CHECK-SAME: threadsPerWarp=[32], warpsPerCTA=[4], order=[0]>>
        // CHECK-NEXT: %[[V:.*]] = ttg.convert_layout %{{.*}} : tensor<32xf32, #blocked<sizePerThread=[1],
        // CHECK-NEXT: tt.store %[[P]], %[[V]]
        """,
        attrs={"num_warps": 4},
    )


def test_negative_a_reduced_row_a_thread_writes_as_one_vector_keeps_its_layout():
    """A column sum's slice: each thread holds 4 adjacent columns, one 16-byte store (copies masked off)."""
    check_unchanged(
        coalesce,
        HEADER
        + """
          %10 = tt.splat %x : tensor<32x!ptr<f32>, #j>
          %11 = tt.addptr %10, %2 : tensor<32x!ptr<f32>, #j>
          %12 = tt.cast %2 : tensor<32xf32, #j>
          tt.store %11, %12 : tensor<32x!ptr<f32>, #j>
          tt.return
        }
        """,
        attrs={"num_warps": 4, "arg_divisibility": {"x": 16}},
    )
