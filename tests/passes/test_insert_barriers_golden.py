"""Golden IR tests of insert-barriers: a gpu.barrier wherever threads could race on shared bytes."""

from __future__ import annotations

from tilelab.compiler.passes import insert_barriers

from .support import check_pass, check_unchanged


def test_read_after_write_and_write_after_read_are_separated():
    check_pass(
        insert_barriers,
        """
        tt.func @k(%x: !ptr<f32>) {
          %0 = arith.constant {value = 1.0} : tensor<64xf32>
          %1 = ttg.local_alloc {offset = 0} : tensor<64xf32>
          ttg.local_store %1, %0 : tensor<64xf32>
          %2 = ttg.local_load %1 : tensor<64xf32>
          ttg.local_store %1, %2 : tensor<64xf32>
          tt.return
        }
        // CHECK:      ttg.local_store
        // CHECK-NEXT: gpu.barrier
        // CHECK-NEXT: ttg.local_load
        // CHECK-NEXT: gpu.barrier
        // CHECK-NEXT: ttg.local_store
        """,
    )


def test_overlapping_bytes_of_two_buffers_race_too():
    check_pass(
        insert_barriers,
        """
        tt.func @k(%x: !ptr<f32>) {
          %0 = arith.constant {value = 1.0} : tensor<64xf32>
          %1 = ttg.local_alloc {offset = 0} : tensor<64xf32>
          %2 = ttg.local_alloc {offset = 128} : tensor<64xf32>
          ttg.local_store %1, %0 : tensor<64xf32>
          ttg.local_store %2, %0 : tensor<64xf32>
          tt.return
        }
        // CHECK:      ttg.local_store
        // CHECK-NEXT: gpu.barrier
        // CHECK-NEXT: ttg.local_store
        """,
    )


def test_next_iteration_of_a_loop_waits_for_the_reads_of_this_one():
    check_pass(
        insert_barriers,
        """
        tt.func @k(%x: !ptr<f32>, %n: i32) {
          %0 = arith.constant {value = 1.0} : tensor<64xf32>
          %1 = ttg.local_alloc {offset = 0} : tensor<64xf32>
          scf.for %i = %n to %n step %n {
            ttg.local_store %1, %0 : tensor<64xf32>
            %2 = ttg.local_load %1 : tensor<64xf32>
            scf.yield
          }
          tt.return
        }
        // CHECK:      scf.for
        // CHECK-NEXT:   gpu.barrier
        // CHECK-NEXT:   ttg.local_store
        // CHECK-NEXT:   gpu.barrier
        // CHECK-NEXT:   ttg.local_load
        // CHECK-NEXT:   scf.yield
        """,
    )


def test_negative_disjoint_bytes_and_two_reads_need_no_barrier():
    check_unchanged(
        insert_barriers,
        """
        tt.func @k(%x: !ptr<f32>) {
          %0 = arith.constant {value = 1.0} : tensor<64xf32>
          %1 = ttg.local_alloc {offset = 0} : tensor<64xf32>
          %2 = ttg.local_alloc {offset = 256} : tensor<64xf32>
          ttg.local_store %1, %0 : tensor<64xf32>
          %3 = ttg.local_load %2 : tensor<64xf32>
          %4 = ttg.local_load %2 : tensor<64xf32>
          tt.return
        }
        """,
    )


def test_negative_stages_of_one_ring_do_not_race_with_each_other():
    check_unchanged(
        insert_barriers,
        """
        tt.func @k(%x: !ptr<f16>, %n: i32) {
          %0 = tt.splat %x : tensor<8x!ptr<f16>>
          %1 = ttg.local_alloc {stages = 2, offset = 0} : tensor<8xf16>
          %2 = arith.constant {value = 0} : i32
          %3 = arith.constant {value = 1} : i32
          %4 = ttg.memdesc_index %1, %3 : tensor<8xf16>
          ttg.async_copy_global_to_local %4, %0 : tensor<8xf16>
          %5 = ttg.memdesc_index %1, %2 : tensor<8xf16>
          %6 = ttg.local_load %5 : tensor<8xf16>
          tt.return
        }
        """,
    )
