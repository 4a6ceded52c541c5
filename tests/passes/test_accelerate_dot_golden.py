"""Golden IR tests of accelerate-dot: mma.sync operands converted to dot-operand layouts; wgmma on sm_90a."""

from __future__ import annotations

import pytest

from tilelab.compiler.passes import accelerate_dot

from .support import check_pass, check_unchanged

LAYOUTS = """
#a = #blocked<sizePerThread=[1, 4], threadsPerWarp=[8, 4], warpsPerCTA=[4, 1], order=[1, 0]>
#b = #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>
#at = #blocked<sizePerThread=[4, 1], threadsPerWarp=[4, 8], warpsPerCTA=[1, 4], order=[0, 1]>
#mma_acc = #mma<m16n8k16, warpsPerCTA=[2, 2]>
#wgmma_acc = #wgmma<warpsPerCTA=[4, 1], instrShape=[64, 64, 16]>
#dot_a = #dot_op<opIdx=0, parent=#mma_acc, kWidth=2>
#dot_b = #dot_op<opIdx=1, parent=#mma_acc, kWidth=2>
#smem_a = #nvmma_shared<swizzle=64B, elemBytes=2, order=[1, 0]>
#smem_b = #nvmma_shared<swizzle=128B, elemBytes=2, order=[1, 0]>
"""

#: a 64x64 += 64x32 @ 32x64 f16 dot in a loop, the accumulator carried in the mma layout
LOOP = (
    LAYOUTS
    + """
tt.func @k(%pa: !ptr<f16>, %pb: !ptr<f16>, %pc: !ptr<f32>, %n: i32) {
  %0 = tt.splat %pa : tensor<64x32x!ptr<f16>, #a>
  %1 = tt.splat %pb : tensor<32x64x!ptr<f16>, #b>
  %2 = arith.constant {value = 0.0} : tensor<64x64xf32, #mma_acc>
  %3 = scf.for %i = %n to %n step %n iter_args(%acc = %2) -> (tensor<64x64xf32, #mma_acc>) {
    %4 = tt.load %0 : tensor<64x32xf16, #a>
    %5 = tt.load %1 : tensor<32x64xf16, #b>
    %6 = tt.dot %4, %5, %acc : tensor<64x64xf32, #mma_acc>
    scf.yield %6 : tensor<64x64xf32, #mma_acc>
  }
  %7 = tt.splat %pc : tensor<64x64x!ptr<f32>, #mma_acc>
  tt.store %7, %3 : tensor<64x64x!ptr<f32>, #mma_acc>
  tt.return
}
"""
)


@pytest.fixture(autouse=True)
def wgmma_default(monkeypatch):
    """The wgmma switch at its default (on): the architecture alone decides."""
    monkeypatch.delenv("TILELAB_CUDA_WGMMA", raising=False)


def test_mma_sync_operands_are_converted_right_before_the_dot():
    check_pass(
        accelerate_dot,
        LOOP
        + """
        // CHECK:      scf.for
        // CHECK-NEXT:   %[[A:.*]] = tt.load
        // CHECK-NEXT:   %[[B:.*]] = tt.load
        // CHECK-NEXT:   %[[AD:.*]] = ttg.convert_layout %[[A]] : tensor<64x32xf16, #dot_a>
        // CHECK-NEXT:   %[[BD:.*]] = ttg.convert_layout %[[B]] : tensor<32x64xf16, #dot_b>
        // CHECK-NEXT:   %[[D:.*]] = tt.dot %[[AD]], %[[BD]], %acc : tensor<64x64xf32, #mma_acc>
        // CHECK-NEXT:   scf.yield %[[D]]
        """,
        attrs={"arch": "sm_80"},
    )


def test_an_operand_that_is_a_conversion_is_converted_from_its_source():
    check_pass(
        accelerate_dot,
        LAYOUTS
        + """
        tt.func @k() {
          %0 = arith.constant {value = 1.0} : tensor<32x16xf16, #a>
          %1 = ttg.convert_layout %0 : tensor<32x16xf16, #at>
          %2 = arith.constant {value = 1.0} : tensor<16x32xf16, #b>
          %3 = arith.constant {value = 0.0} : tensor<32x32xf32, #mma_acc>
          %4 = tt.dot %1, %2, %3 : tensor<32x32xf32, #mma_acc>
          tt.return
        }
        // CHECK:     %[[A:.*]] = arith.constant {value = 1.0} : tensor<32x16xf16, #a>
        // CHECK-NOT: #at
        // CHECK:     %[[AD:.*]] = ttg.convert_layout %[[A]] : tensor<32x16xf16, #dot_a>
        // CHECK:     tt.dot %[[AD]],
        """,
    )


def test_hopper_dot_reads_swizzled_shared_buffers_and_its_accumulator_becomes_wgmma():
    check_pass(
        accelerate_dot,
        LOOP
        + """
        // CHECK-NOT:  mma<m16n8k16
        // CHECK:      %[[Z:.*]] = arith.constant {value = 0.0} : tensor<64x64xf32, #wgmma_acc>
        // CHECK-NEXT: %[[R:.*]] = scf.for {{.*}} iter_args(%acc = %[[Z]]) -> (tensor<64x64xf32, #wgmma_acc>)
        // CHECK-NEXT:   %[[A:.*]] = tt.load
        // CHECK-NEXT:   %[[B:.*]] = tt.load
        // CHECK-NEXT:   %[[SA:.*]] = ttg.local_alloc : tensor<64x32xf16, #smem_a>
        // CHECK-NEXT:   ttg.local_store %[[SA]], %[[A]]
        // CHECK-NEXT:   %[[SB:.*]] = ttg.local_alloc : tensor<32x64xf16, #smem_b>
        // CHECK-NEXT:   ttg.local_store %[[SB]], %[[B]]
        // CHECK-NEXT:   ttng.fence_async_shared
        // CHECK-NEXT:   %[[D:.*]] = ttng.warp_group_dot %[[SA]], %[[SB]], %acc : tensor<64x64xf32, #wgmma_acc>
        // CHECK-NEXT:   scf.yield %[[D]]
        // CHECK:      tt.store %{{.*}}, %[[R]] : tensor<64x64x!ptr<f32>, #wgmma_acc>
        // CHECK-NOT:  mma<m16n8k16
        """,
        attrs={"arch": "sm_90a", "num_warps": 4},
    )


def test_plain_sm_90_keeps_mma_sync():
    check_pass(
        accelerate_dot,
        LOOP
        + """
        // CHECK-NOT: ttng.warp_group_dot
        // CHECK:     ttg.convert_layout %{{.*}} : tensor<64x32xf16, #dot_a>
        // CHECK:     tt.dot
        // CHECK-NOT: ttng.warp_group_dot
        """,
        attrs={"arch": "sm_90", "num_warps": 4},
    )


def test_negative_a_dot_without_an_mma_accumulator_stays():
    check_unchanged(
        accelerate_dot,
        """
        #acc = #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>
        #a = #blocked<sizePerThread=[1, 4], threadsPerWarp=[8, 4], warpsPerCTA=[4, 1], order=[1, 0]>
        tt.func @k() {
          %0 = arith.constant {value = 1.0} : tensor<32x16xf32, #a>
          %1 = arith.constant {value = 1.0} : tensor<16x32xf32, #acc>
          %2 = arith.constant {value = 0.0} : tensor<32x32xf32, #acc>
          %3 = tt.dot %0, %1, %2 : tensor<32x32xf32, #acc>
          tt.return
        }
        """,
        attrs={"arch": "sm_90a"},
    )
