"""Golden IR tests of allocate-shared-memory: offsets first-fit by live range, 16-byte aligned."""

from __future__ import annotations

from tilelab.compiler.passes import allocate_shared_memory

from .support import check_module, check_unchanged, parse


def test_buffers_live_together_get_disjoint_aligned_bytes():
    text = """
    tt.func @k(%x: !ptr<f32>) {
      %0 = arith.constant {value = 1.0} : tensor<3xf32>
      %1 = ttg.local_alloc : tensor<3xf32>
      %2 = ttg.local_alloc : tensor<3xf32>
      ttg.local_store %1, %0 : tensor<3xf32>
      ttg.local_store %2, %0 : tensor<3xf32>
      %3 = ttg.local_load %1 : tensor<3xf32>
      %4 = ttg.local_load %2 : tensor<3xf32>
      tt.return
    }
    // CHECK: ttg.local_alloc {offset = 0} : tensor<3xf32>
    // CHECK: ttg.local_alloc {offset = 16} : tensor<3xf32>
    """
    module = parse(text)
    check_module(allocate_shared_memory, module, text)
    assert module.attrs["shared_bytes"] == 32  # 12 bytes at 0, 12 at 16; the total rounded up to 16 too


def test_a_buffer_whose_last_use_has_passed_lends_its_bytes():
    text = """
    tt.func @k(%x: !ptr<f32>) {
      %0 = arith.constant {value = 1.0} : tensor<64xf32>
      %1 = ttg.local_alloc : tensor<64xf32>
      ttg.local_store %1, %0 : tensor<64xf32>
      %2 = ttg.local_load %1 : tensor<64xf32>
      %3 = ttg.local_alloc : tensor<64xf32>
      ttg.local_store %3, %2 : tensor<64xf32>
      tt.return
    }
    // CHECK: %[[A:.*]] = ttg.local_alloc {offset = 0}
    // CHECK: ttg.local_load %[[A]]
    // CHECK: ttg.local_alloc {offset = 0}
    """
    module = parse(text)
    check_module(allocate_shared_memory, module, text)
    assert module.attrs["shared_bytes"] == 256


def test_a_ring_takes_stages_times_its_tile_and_lives_through_its_loop():
    text = """
    tt.func @k(%x: !ptr<f32>, %n: i32) {
      %0 = arith.constant {value = 1.0} : tensor<64xf32>
      %1 = ttg.local_alloc {stages = 3} : tensor<16xf16>
      scf.for %i = %n to %n step %n {
        %2 = ttg.local_alloc : tensor<64xf32>
        ttg.local_store %2, %0 : tensor<64xf32>
        %3 = ttg.local_load %2 : tensor<64xf32>
        %4 = ttg.memdesc_index %1, %n : tensor<16xf16>
        %5 = ttg.local_load %4 : tensor<16xf16>
        scf.yield
      }
      %6 = ttg.local_alloc : tensor<64xf32>
      ttg.local_store %6, %0 : tensor<64xf32>
      tt.return
    }
    // CHECK: ttg.local_alloc {stages = 3, offset = 0} : tensor<16xf16>
    // CHECK: scf.for
    // CHECK:   ttg.local_alloc {offset = 96} : tensor<64xf32>
    // CHECK: ttg.local_alloc {offset = 0} : tensor<64xf32>
    """
    module = parse(text)
    check_module(allocate_shared_memory, module, text)
    assert module.attrs["shared_bytes"] == 96 + 256


def test_negative_allocated_ir_stays():
    check_unchanged(
        allocate_shared_memory,
        """
        tt.func @k(%x: !ptr<f32>) {
          %0 = arith.constant {value = 1.0} : tensor<64xf32>
          %1 = ttg.local_alloc {offset = 0} : tensor<64xf32>
          ttg.local_store %1, %0 : tensor<64xf32>
          %2 = ttg.local_alloc {offset = 256} : tensor<64xf32>
          ttg.local_store %2, %0 : tensor<64xf32>
          %3 = ttg.local_load %1 : tensor<64xf32>
          %4 = ttg.local_load %2 : tensor<64xf32>
          tt.return
        }
        """,
        attrs={"shared_bytes": 512},
    )


def test_a_wgmma_buffer_after_a_small_one_starts_on_its_swizzle_repeat():
    # the 128-byte swizzle XORs address bits 4-6 with bits 7-9: the buffer starts on 1024 bytes
    text = """
    tt.func @k(%x: !ptr<f32>) {
      %0 = arith.constant {value = 1.0} : tensor<64xf32>
      %1 = arith.constant {value = 1.0} : tensor<64x64xf16>
      %2 = ttg.local_alloc : tensor<64xf32>
      %3 = ttg.local_alloc : tensor<64x64xf16, #nvmma_shared<swizzle=128B, elemBytes=2, order=[1, 0]>>
      ttg.local_store %2, %0 : tensor<64xf32>
      ttg.local_store %3, %1 : tensor<64x64xf16, #nvmma_shared<swizzle=128B, elemBytes=2, order=[1, 0]>>
      %4 = ttg.local_load %2 : tensor<64xf32>
      %5 = ttg.local_load %3 : tensor<64x64xf16>
      tt.return
    }
    // CHECK: ttg.local_alloc {offset = 0} : tensor<64xf32>
    // CHECK: ttg.local_alloc {offset = 1024} : tensor<64x64xf16
    """
    module = parse(text)
    check_module(allocate_shared_memory, module, text)
    assert module.attrs["shared_bytes"] == 1024 + 64 * 64 * 2


def test_a_buffer_read_through_a_transposed_view_lives_until_the_view_is_read():
    text = """
    tt.func @k(%x: !ptr<f32>) {
      %0 = arith.constant {value = 1.0} : tensor<8x4xf32>
      %1 = ttg.local_alloc : tensor<8x4xf32>
      ttg.local_store %1, %0 : tensor<8x4xf32>
      %2 = ttg.local_load %1 : tensor<8x4xf32>
      %3 = ttg.local_alloc : tensor<8x4xf32>
      ttg.local_store %3, %2 : tensor<8x4xf32>
      %4 = ttg.memdesc_trans %1 {order = [1, 0]} : tensor<4x8xf32>
      %5 = ttg.local_load %4 : tensor<4x8xf32>
      tt.return
    }
    // CHECK: %[[A:.*]] = ttg.local_alloc {offset = 0}
    // CHECK: ttg.local_alloc {offset = 128}
    // CHECK: ttg.memdesc_trans %[[A]]
    """
    module = parse(text)
    check_module(allocate_shared_memory, module, text)
    assert module.attrs["shared_bytes"] == 256  # without the view's read, the second buffer reused offset 0
