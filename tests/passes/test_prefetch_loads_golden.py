# ruff: noqa: E501  (the IR spells whole types)
"""prefetch-loads: a reduction loop's tiles load one iteration ahead; loops that write memory or
compute dots keep their loads; the values are the loop's own on the interpreter."""

from __future__ import annotations

import numpy as np

from tilelab.compiler.passes import prefetch_loads

from .support import assert_same_values, check_pass, check_unchanged, expand_aliases

#: a 16-element tile of ``x``, its indices ``%2``, zeros ``%4`` and ``n`` splat ``%5``
PREAMBLE = """
#L = #blocked<sizePerThread=[4], threadsPerWarp=[4], warpsPerCTA=[1], order=[0]>
tt.func @k(%x: !ptr<f32>, %out: !ptr<f32>, %n: i32) {
  %0 = arith.constant {value = 0} : i32
  %1 = arith.constant {value = 16} : i32
  %2 = tt.make_range {start = 0, end = 16} : tensor<16xi32, #L>
  %3 = tt.splat %x : tensor<16x!ptr<f32>, #L>
  %4 = arith.constant {value = 0.0} : tensor<16xf32, #L>
  %5 = tt.splat %n : tensor<16xi32, #L>
"""

#: sum of x * x over chunks of 16 of ``x[:n]``, per lane, stored after the loop; the tail is masked
SQUARES = (
    PREAMBLE
    + """  %6 = scf.for %i = %0 to %n step %1 iter_args(%acc = %4) -> (tensor<16xf32, #L>) {
    %7 = tt.splat %i : tensor<16xi32, #L>
    %8 = arith.add %7, %2 : tensor<16xi32, #L>
    %9 = arith.cmp lt %8, %5 : tensor<16xi1, #L>
    %10 = tt.addptr %3, %8 : tensor<16x!ptr<f32>, #L>
    %11 = tt.load %10, %9, %4 : tensor<16xf32, #L>
    %12 = arith.mul %11, %11 : tensor<16xf32, #L>
    %13 = arith.add %acc, %12 : tensor<16xf32, #L>
    scf.yield %13 : tensor<16xf32, #L>
  }
  %14 = tt.splat %out : tensor<16x!ptr<f32>, #L>
  %15 = tt.addptr %14, %2 : tensor<16x!ptr<f32>, #L>
  tt.store %15, %6 : tensor<16x!ptr<f32>, #L>
  tt.return
}
"""
)

#: the same sum with the pointers advanced by ``+= 16`` (a carried value with a loop-invariant step)
SQUARES_POINTER_STEPS = (
    PREAMBLE
    + """  %6 = tt.addptr %3, %2 : tensor<16x!ptr<f32>, #L>
  %7 = arith.constant {value = 16} : tensor<16xi32, #L>
  %8, %9 = scf.for %i = %0 to %n step %1 iter_args(%acc = %4, %p = %6) -> (tensor<16xf32, #L>, tensor<16x!ptr<f32>, #L>) {
    %10 = tt.splat %i : tensor<16xi32, #L>
    %11 = arith.add %10, %2 : tensor<16xi32, #L>
    %12 = arith.cmp lt %11, %5 : tensor<16xi1, #L>
    %13 = tt.load %p, %12, %4 : tensor<16xf32, #L>
    %14 = arith.mul %13, %13 : tensor<16xf32, #L>
    %15 = arith.add %acc, %14 : tensor<16xf32, #L>
    %16 = tt.addptr %p, %7 : tensor<16x!ptr<f32>, #L>
    scf.yield %15, %16 : tensor<16xf32, #L>
  }
  %17 = tt.splat %out : tensor<16x!ptr<f32>, #L>
  %18 = tt.addptr %17, %2 : tensor<16x!ptr<f32>, #L>
  tt.store %18, %8 : tensor<16x!ptr<f32>, #L>
  tt.return
}
"""
)


def test_the_next_tile_loads_at_the_top_of_the_body():
    check_pass(
        prefetch_loads,
        SQUARES
        + """
        // CHECK:      %[[FIRST:.*]] = tt.load %{{.*}}, %{{.*}}, %{{.*}} : tensor<16xf32
        // CHECK:      scf.for %i = {{.*}} iter_args(%acc = %{{.*}}, %ahead = %[[FIRST]])
        // CHECK:      %[[NEXT:.*]] = arith.add %i, %{{.*}} : i32
        // CHECK:      %[[LAST:.*]] = arith.cmp lt %[[NEXT]], %n : i1
        // CHECK:      %[[NEXT_TILE:.*]] = tt.load
        // CHECK:      arith.mul %ahead, %ahead
        // CHECK:      scf.yield %{{.*}}, %[[NEXT_TILE]]
        """,
    )


def _squares_args(n):
    def make():
        rng = np.random.default_rng(n)
        return [rng.standard_normal(64).astype(np.float32), np.full(16, np.nan, np.float32), n]

    return make


def test_values_with_a_masked_tail_and_with_pointer_steps():
    for text in (SQUARES, SQUARES_POINTER_STEPS):
        for n in (45, 48, 7, 0):  # a tail, none, one partial trip, no trip at all
            assert_same_values(prefetch_loads, expand_aliases(text), _squares_args(n), grid=(1,))


def test_negative_a_loop_that_stores_keeps_its_loads():
    stored = SQUARES.replace(
        "    scf.yield %13 : tensor<16xf32, #L>",
        "    tt.store %10, %12 : tensor<16x!ptr<f32>, #L>\n    scf.yield %13 : tensor<16xf32, #L>",
    )
    check_unchanged(prefetch_loads, stored)


def test_negative_one_stage_keeps_the_loads():
    check_unchanged(prefetch_loads, SQUARES, attrs={"num_stages": 1})
