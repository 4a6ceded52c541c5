# ruff: noqa: E501  (CHECK lines spell whole types)
"""Golden IR tests of hoist-fences: a proxy fence leaves loops that store nothing to shared memory from registers."""

from __future__ import annotations

from tilelab.compiler.passes import hoist_fences

from .support import check_pass, check_unchanged

ALIASES = """
#smem = #nvmma_shared<swizzle=128B, elemBytes=2, order=[1, 0]>
#row = #blocked<sizePerThread=[1, 8], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>
#acc = #wgmma<warpsPerCTA=[4, 1], instrShape=[64, 64, 16]>
"""

#: a persistent kernel's shape: a tile loop around a K loop of copied operands, then an epilogue
#: that stores the tile to shared memory from registers (EPILOGUE replaced by a store or by nothing)
NESTED = (
    ALIASES
    + """
tt.func @k(%a: !ptr<f16>, %n: i32, %t: i32) {
  %0 = arith.constant {value = 0} : i32
  %1 = arith.constant {value = 1} : i32
  %2 = ttg.local_alloc {stages = 2} : tensor<64x64xf16, #smem>
  %3 = tt.splat %a : tensor<64x64x!ptr<f16>, #row>
  %4 = arith.constant {value = 0.0} : tensor<64x64xf32, #acc>
  %5 = arith.constant {value = 0.0} : tensor<64x64xf16, #row>
  scf.for %tile = %0 to %t step %1 {
    %6 = scf.for %i = %0 to %n step %1 iter_args(%c = %4) -> (tensor<64x64xf32, #acc>) {
      ttg.async_wait {num = 0}
      gpu.barrier
      %7 = ttg.memdesc_index %2, %0 : tensor<64x64xf16, #smem>
      ttng.fence_async_shared
      %8 = ttng.warp_group_dot %7, %7, %c : tensor<64x64xf32, #acc>
      ttng.fence_async_shared
      %9 = ttng.warp_group_dot %7, %7, %8 : tensor<64x64xf32, #acc>
      %10 = ttg.memdesc_index %2, %1 : tensor<64x64xf16, #smem>
      ttg.async_copy_global_to_local %10, %3 : tensor<64x64xf16, #smem>
      ttg.async_commit_group
      scf.yield %9
    }
    EPILOGUE
    scf.yield
  }
  tt.return
}
"""
)

EPILOGUE_STORE = """%11 = ttg.local_alloc : tensor<64x64xf16, #smem>
    ttg.local_store %11, %5 : tensor<64x64xf16, #smem>"""


def test_a_fence_stops_before_the_loop_whose_body_stores_from_registers():
    """The K loop only copies: its two fences become one before it; the tile loop's epilogue store keeps it inside."""
    check_pass(
        hoist_fences,
        NESTED.replace("EPILOGUE", EPILOGUE_STORE)
        + """
        // CHECK:      scf.for %tile
        // CHECK-NEXT:   ttng.fence_async_shared
        // CHECK-NEXT:   scf.for %i
        // CHECK-NOT:    ttng.fence_async_shared
        // CHECK:        ttg.local_store
        """,
        attrs={"arch": "sm_90a"},
    )


def test_a_fence_climbs_out_of_every_loop_that_only_copies():
    check_pass(
        hoist_fences,
        NESTED.replace("EPILOGUE", "")
        + """
        // CHECK:      %[[Z:.*]] = arith.constant {value = 0.0} : tensor<64x64xf16, #row>
        // CHECK-NEXT: ttng.fence_async_shared
        // CHECK-NEXT: scf.for %tile
        // CHECK-NOT:  ttng.fence_async_shared
        """,
        attrs={"arch": "sm_90a"},
    )


def test_tma_copies_count_as_copies():
    """A TMA copy into the ring (a descriptor's load) is no store from registers either."""
    tma = (
        ALIASES
        + """
    tt.func @k(%a: !ptr<f16>, %n: i32) {
      %0 = arith.constant {value = 0} : i32
      %1 = arith.constant {value = 1} : i32
      %2 = ttg.local_alloc {stages = 2} : tensor<64x64xf16, #smem>
      %3 = arith.constant {value = 64} : i64
      %4 = ttng.tensormap %a, %n, %n, %3, %3 {box = [64, 64], swizzle = 128, fill = "zero"} : i64
      %5 = ttg.local_alloc {stages = 2} : tensor<1xi64, #swizzled_shared<vec=1, perPhase=1, maxPhase=1, order=[0]>>
      %6 = arith.constant {value = 0.0} : tensor<64x64xf32, #acc>
      %p = arith.constant {value = true} : i1
      %7 = scf.for %i = %0 to %n step %1 iter_args(%c = %6) -> (tensor<64x64xf32, #acc>) {
        %8 = ttg.memdesc_index %2, %0 : tensor<64x64xf16, #smem>
        ttng.fence_async_shared
        %9 = ttng.warp_group_dot %8, %8, %c : tensor<64x64xf32, #acc>
        %10 = ttg.memdesc_index %2, %1 : tensor<64x64xf16, #smem>
        ttng.async_tma_copy_global_to_local %10, %4, %5, %1, %p, %0, %0 : tensor<64x64xf16, #smem>
        scf.yield %9
      }
      tt.return
    }
    // CHECK:      ttng.fence_async_shared
    // CHECK-NEXT: scf.for
    // CHECK-NOT:  ttng.fence_async_shared
    """
    )
    check_pass(hoist_fences, tma, attrs={"arch": "sm_90a"})


def test_negative_a_loop_that_stores_its_operand_from_registers_keeps_its_fence():
    """One stage: the operand is stored from registers each iteration and must be fenced each iteration."""
    stored = (
        ALIASES
        + """
    tt.func @k(%n: i32) {
      %0 = arith.constant {value = 0} : i32
      %1 = arith.constant {value = 1} : i32
      %2 = arith.constant {value = 1.0} : tensor<64x64xf16, #row>
      %3 = arith.constant {value = 0.0} : tensor<64x64xf32, #acc>
      %4 = scf.for %i = %0 to %n step %1 iter_args(%c = %3) -> (tensor<64x64xf32, #acc>) {
        %5 = ttg.local_alloc : tensor<64x64xf16, #smem>
        ttg.local_store %5, %2 : tensor<64x64xf16, #smem>
        ttng.fence_async_shared
        %6 = ttng.warp_group_dot %5, %5, %c : tensor<64x64xf32, #acc>
        scf.yield %6
      }
      tt.return
    }
    """
    )
    check_unchanged(hoist_fences, stored, attrs={"arch": "sm_90a"})
