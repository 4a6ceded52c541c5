"""Golden IR tests of software-pipeline: a loop's shared-memory operand load becomes cp.async into a ring."""

from __future__ import annotations

from tilelab.compiler.passes import software_pipeline

from .support import check_pass, check_unchanged

#: ``for i in range(0, n, 8)``: load 8 halves at ``x + i``, store them to shared, read them back
LOOP = """
#v8 = #blocked<sizePerThread=[8], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>
#v1 = #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>
#smem = #swizzled_shared<vec=1, perPhase=1, maxPhase=1, order=[0]>
tt.func @k(%x: !ptr<f16>, %n: i32) {
  %0 = arith.constant {value = 0} : i32
  %1 = arith.constant {value = 8} : i32
  %2 = tt.splat %x : tensor<8x!ptr<f16>, #v8>
  scf.for %i = %0 to %n step %1 {
    %3 = tt.splat %i : tensor<8xi32, #v8>
    %4 = tt.addptr %2, %3 : tensor<8x!ptr<f16>, #v8>
    %5 = tt.load %4 : tensor<8xf16, #v8>
    %6 = ttg.local_alloc : tensor<8xf16, #smem>
    ttg.local_store %6, %5 : tensor<8xf16, #smem>
    %7 = ttg.local_load %6 : tensor<8xf16, #v1>
    USE
    scf.yield
  }
  tt.return
}
"""


def test_three_stages_copy_two_iterations_ahead():
    check_pass(
        software_pipeline,
        LOOP.replace("USE", "")
        + """
        // CHECK:      %[[RING:.*]] = ttg.local_alloc {stages = 3} : tensor<8xf16, #smem>
        // CHECK:      %[[S0:.*]] = ttg.memdesc_index %[[RING]], %[[ZERO:.*]] :
        // CHECK-NEXT: ttg.async_copy_global_to_local %[[S0]],
        // CHECK-NEXT: ttg.async_commit_group
        // CHECK:      %[[S1:.*]] = ttg.memdesc_index %[[RING]], %{{.*}} :
        // CHECK-NEXT: ttg.async_copy_global_to_local %[[S1]],
        // CHECK-NEXT: ttg.async_commit_group
        // CHECK-NOT:  ttg.async_copy_global_to_local
        // CHECK:      scf.for %i = {{.*}} iter_args(%[[READ:.*]] = %[[ZERO]], %[[WRITE:.*]] = %{{.*}}) -> (i32, i32)
        // CHECK-NEXT:   ttg.async_wait {num = 1}
        // CHECK-NEXT:   gpu.barrier
        // CHECK-NEXT:   %[[CUR:.*]] = ttg.memdesc_index %[[RING]], %[[READ]]
        // CHECK:        %[[NEXT:.*]] = ttg.memdesc_index %[[RING]], %[[WRITE]]
        // CHECK-NEXT:   ttg.async_copy_global_to_local %[[NEXT]],
        // CHECK-NEXT:   ttg.async_commit_group
        // CHECK-NEXT:   ttg.local_load %[[CUR]] : tensor<8xf16, #v1>
        // CHECK-NOT:    tt.load
        // CHECK:        scf.yield
        // CHECK-NEXT: }
        // CHECK-NEXT: ttg.async_wait {num = 0}
        """,
        attrs={"num_stages": 3},
    )


def test_the_loops_own_num_stages_wins():
    check_pass(
        software_pipeline,
        LOOP.replace("USE", "").replace("step %1 {", "step %1 {num_stages = 2} {")
        + """
        // CHECK:      ttg.local_alloc {stages = 2}
        // CHECK:      ttg.async_copy_global_to_local
        // CHECK-NOT:  ttg.async_copy_global_to_local
        // CHECK:      scf.for
        // CHECK-NEXT:   ttg.async_wait {num = 0}
        """,
        attrs={"num_stages": 4},
    )


def test_negative_a_load_also_used_in_registers_stays():
    check_unchanged(
        software_pipeline,
        LOOP.replace("USE", "tt.store %4, %5 : tensor<8x!ptr<f16>, #v8>"),
        attrs={"num_stages": 3},
    )


def test_negative_one_stage_is_no_pipeline():
    check_unchanged(software_pipeline, LOOP.replace("USE", ""), attrs={"num_stages": 1})
