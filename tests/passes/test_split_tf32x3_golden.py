# ruff: noqa: E501  (CHECK lines spell whole types)
"""Golden IR tests of split-tf32x3: a tf32x3 dot becomes three tf32 dots of its operands' big and small parts,
NaNs of the small products dropped, the accumulator added last; and the split IR interpreted against float64."""

from __future__ import annotations

import numpy as np

from tilelab.compiler.passes import split_tf32x3
from tilelab.compiler.passes.pipeline import COMMON

from .support import check_pass, check_unchanged, interpreted_after

#: a 64x32 by 32x64 dot into an accumulator loaded from memory, in PRECISION
DOT = """
tt.func @k(%a: !ptr<f32>, %b: !ptr<f32>, %c: !ptr<f32>) {
  %0 = tt.splat %a : tensor<64x32x!ptr<f32>>
  %1 = tt.splat %b : tensor<32x64x!ptr<f32>>
  %2 = tt.splat %c : tensor<64x64x!ptr<f32>>
  %3 = tt.load %0 : tensor<64x32xf32>
  %4 = tt.load %1 : tensor<32x64xf32>
  %5 = tt.load %2 : tensor<64x64xf32>
  %6 = tt.dot %3, %4, %5 {input_precision = "PRECISION", max_num_imprecise_acc = 0} : tensor<64x64xf32>
  tt.store %2, %6 : tensor<64x64x!ptr<f32>>
  tt.return
}
"""


def test_three_tf32_dots_then_the_accumulator():
    check_pass(
        split_tf32x3,
        DOT.replace("PRECISION", "tf32x3")
        + """
        // CHECK:      %[[A:.*]] = tt.load %{{.*}} : tensor<64x32xf32>
        // CHECK:      %[[B:.*]] = tt.load %{{.*}} : tensor<32x64xf32>
        // CHECK:      %[[C:.*]] = tt.load %{{.*}} : tensor<64x64xf32>
        // CHECK:      %[[Z:.*]] = arith.constant {value = 0.0} : tensor<64x64xf32>
        // CHECK:      %[[M:.*]] = arith.constant {value = -8192} : tensor<64x32xi32>
        // CHECK-NEXT: %[[AI:.*]] = tt.bitcast %[[A]] : tensor<64x32xi32>
        // CHECK-NEXT: %[[AH:.*]] = arith.and %[[AI]], %[[M]]
        // CHECK-NEXT: %[[ABIG:.*]] = tt.bitcast %[[AH]] : tensor<64x32xf32>
        // CHECK-NEXT: %[[ASMALL:.*]] = arith.sub %[[A]], %[[ABIG]]
        // CHECK:      %[[BBIG:.*]] = tt.bitcast %{{.*}} : tensor<32x64xf32>
        // CHECK-NEXT: %[[BSMALL:.*]] = arith.sub %[[B]], %[[BBIG]]
        // CHECK-NEXT: %[[D1:.*]] = tt.dot %[[ASMALL]], %[[BBIG]], %[[Z]] {input_precision = "tf32"
        // CHECK-NEXT: %[[D2:.*]] = tt.dot %[[ABIG]], %[[BSMALL]], %[[D1]] {input_precision = "tf32"
        // CHECK-NEXT: %[[NAN:.*]] = arith.cmp ne %[[D2]], %[[D2]]
        // CHECK-NEXT: %[[S:.*]] = arith.select %[[NAN]], %[[Z]], %[[D2]]
        // CHECK-NEXT: %[[D3:.*]] = tt.dot %[[ABIG]], %[[BBIG]], %[[S]] {input_precision = "tf32"
        // CHECK-NEXT: %[[R:.*]] = arith.add %[[D3]], %[[C]]
        // CHECK-NEXT: tt.store %{{.*}}, %[[R]]
        """,
    )


def test_negative_other_precisions_are_left_alone():
    for precision in ("tf32", "ieee"):
        check_unchanged(split_tf32x3, DOT.replace("PRECISION", precision))


def _interpreted(kernel, precision: str, a, b, split: bool):
    """``kernel`` (a one-block ``a @ b``) through the common passes (and split-tf32x3), run by the interpreter."""
    (m, k), n = a.shape, b.shape[1]
    c = np.zeros((m, n), np.float32)
    files = (*COMMON, "split_tf32x3") if split else COMMON
    interpreted_after(kernel, {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"},
                      {"M": m, "N": n, "K": k, "PRECISION": precision}, files, (1,), [a, b, c])  # fmt: skip
    return c


def test_the_split_ir_is_as_exact_as_f32():
    """Interpreted (tf32 operands rounded as the interpreter rounds them): the split dot within f32's rounding of
    the float64 product, a hundred times closer than one tf32 dot; infinities stay infinite, not NaN."""
    from tests.kernels.test_matmul import precision_dot_kernel

    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((32, 64)).astype(np.float32), rng.standard_normal((64, 32)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)

    def error(c):
        return np.linalg.norm(c - ref) / np.linalg.norm(ref)

    split = error(_interpreted(precision_dot_kernel, "tf32x3", a, b, split=True))
    tf32 = error(_interpreted(precision_dot_kernel, "tf32", a, b, split=False))
    assert split < 2e-6 and 100 * split < tf32, (split, tf32)
    a[3, 5] = np.inf
    got = _interpreted(precision_dot_kernel, "tf32x3", a, np.abs(b), split=True)
    assert np.isposinf(got[3]).all() and np.isfinite(np.delete(got, 3, axis=0)).all()
