# ruff: noqa: E501  (CHECK lines spell whole types)
"""Golden IR tests of tma-stores: a host descriptor's store goes through a swizzled buffer and TMA copies."""

from __future__ import annotations

from tilelab.compiler.passes import tma_stores

from .support import check_pass, check_unchanged

#: a 64 x 128 f32 tile of mma fragments converted to a blocked layout for its store, and the descriptor's store
STORE = """
#mma = #mma<m16n8k16, warpsPerCTA=[4, 1]>
#b = #blocked<sizePerThread=[1, 4], threadsPerWarp=[2, 16], warpsPerCTA=[4, 1], order=[1, 0]>
tt.func @k(%c: !ptr<f32>, %m: i32, %n: i32, %s: i32, %pm: i32, %pn: i32) {
  %0 = arith.constant {value = 1} : i64
  %1 = arith.constant {value = 1.0} : tensor<64x128xf32, #mma>
  %2 = ttg.convert_layout %1 : tensor<64x128xf32, #b>
  %3 = tt.splat %c : tensor<64x128x!ptr<f32>, #b>
  %4 = arith.constant {value = true} : tensor<64x128xi1, #b>
  tt.store %3, %2, %4, %c, %m, %n, %s, %0, %pm, %pn {descriptor = 2, descriptor_checked = true} : tensor<64x128x!ptr<f32>, #b>
  tt.return
}
"""


def test_the_tile_is_stored_from_its_fragments_and_copied_in_four_boxes():
    """128 f32 a row: the 128-byte swizzle, 32 columns a box; the conversion, pointers and mask go."""
    check_pass(
        tma_stores,
        STORE
        + """
        // CHECK:      %[[ONE:.*]] = arith.constant {value = 1} : i64
        // CHECK-NEXT: %[[MAP:.*]] = ttng.tensormap %c, %m, %n, %s, %[[ONE]] {box = [64, 32], swizzle = 128, fill = "zero"}
        // CHECK-NEXT: %[[V:.*]] = arith.constant {value = 1.0} : tensor<64x128xf32, #mma>
        // CHECK-NEXT: %[[BUF:.*]] = ttg.local_alloc : tensor<64x128xf32, #nvmma_shared<swizzle=128B, elemBytes=4, order=[1, 0]>>
        // CHECK-NEXT: ttg.local_store %[[BUF]], %[[V]]
        // CHECK-NEXT: ttng.fence_async_shared
        // CHECK-NEXT: ttng.async_tma_copy_local_to_global %[[BUF]], %[[MAP]], %pm, %pn
        // CHECK-NEXT: tt.return
        """,
        attrs={"arch": "sm_90a"},
    )


def test_negative_other_architectures_and_plain_stores_keep_their_stores():
    check_unchanged(tma_stores, STORE, attrs={"arch": "sm_80"})
    check_unchanged(tma_stores, STORE, attrs={"arch": "sm_90a", "tma": False})
    plain = STORE.replace(", %c, %m, %n, %s, %0, %pm, %pn {descriptor = 2, descriptor_checked = true}", "")
    check_unchanged(tma_stores, plain, attrs={"arch": "sm_90a"})


def test_negative_rows_under_32_bytes_have_no_swizzle_to_copy_in():
    narrow = (
        STORE.replace("64x128", "64x4")
        .replace("threadsPerWarp=[2, 16]", "threadsPerWarp=[32, 1]")
        .replace("#mma>", "#b>")
    )
    check_unchanged(tma_stores, narrow, attrs={"arch": "sm_90a"})


def test_a_descriptor_made_in_the_kernel_needs_its_alignment_proven():
    """``tl.make_tensor_descriptor`` over arguments: TMA only where the specialization proves 16-byte strides."""
    made = STORE.replace(", descriptor_checked = true", "")
    check_unchanged(tma_stores, made, attrs={"arch": "sm_90a"})  # %s of unknown divisibility
    check_pass(
        tma_stores,
        made + "// CHECK: ttng.async_tma_copy_local_to_global",
        {"arch": "sm_90a", "arg_divisibility": {"s": 16}},
    )
