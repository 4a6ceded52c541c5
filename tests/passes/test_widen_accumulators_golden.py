"""Golden IR tests of widen-accumulators: an f16 dot accumulator becomes f32 (rounded after the dot), and a loop
that carries it from one dot to the next carries the f32 value, rounded once after the loop."""

from __future__ import annotations

import numpy as np

from benchmarks.probe.kernels import f16_acc_matmul_kernel
from tilelab.compiler.passes import widen_accumulators
from tilelab.compiler.passes.pipeline import COMMON

from .support import check_pass, check_unchanged, interpreted_after

#: one dot of loaded tiles into an accumulator of OPERAND x OPERAND -> ACC (replaced per test)
ONE_DOT = """
tt.func @k(%a: !ptr<OPERAND>, %c: !ptr<ACC>) {
  %0 = tt.splat %a : tensor<64x64x!ptr<OPERAND>>
  %1 = tt.splat %c : tensor<64x64x!ptr<ACC>>
  %2 = tt.load %0 : tensor<64x64xOPERAND>
  %3 = arith.constant {value = 1.5} : tensor<64x64xACC>
  %4 = tt.dot %2, %2, %3 {input_precision = "tf32", max_num_imprecise_acc = 0} : tensor<64x64xACC>
  tt.store %1, %4 : tensor<64x64x!ptr<ACC>>
  tt.return
}
"""


def one_dot(operand: str, acc: str) -> str:
    return ONE_DOT.replace("OPERAND", operand).replace("ACC", acc)


def test_a_dot_into_f16_sums_in_f32_and_rounds_once():
    """The constant accumulator is made again in f32 (the f16 one goes); the result is rounded for the store."""
    check_pass(
        widen_accumulators,
        one_dot("f16", "f16")
        + """
        // CHECK-NOT:  arith.constant {value = 1.5} : tensor<64x64xf16>
        // CHECK:      %[[C:.*]] = arith.constant {value = 1.5} : tensor<64x64xf32>
        // CHECK-NEXT: %[[D:.*]] = tt.dot %{{.*}}, %{{.*}}, %[[C]] {{.*}} : tensor<64x64xf32>
        // CHECK-NEXT: %[[R:.*]] = tt.cast %[[D]] {rounding = "rtne"} : tensor<64x64xf16>
        // CHECK-NEXT: tt.store %{{.*}}, %[[R]]
        """,
    )


def test_fp8_operands_into_f16_too():
    check_pass(
        widen_accumulators,
        one_dot("fp8e4nv", "f16")
        + """
        // CHECK: tt.dot {{.*}} : tensor<64x64xf32>
        // CHECK: tt.cast {{.*}} : tensor<64x64xf16>
        """,
    )


def test_negative_dots_into_f32_or_from_other_operands_are_left_alone():
    for operand, acc in (("f16", "f32"), ("bf16", "f32"), ("f32", "f32")):
        check_unchanged(widen_accumulators, one_dot(operand, acc))


#: a K loop whose f16 accumulator is carried from one dot to the next; USE is what else the body does with it
LOOP = """
tt.func @k(%a: !ptr<f16>, %n: i32) {
  %0 = arith.constant {value = 0} : i32
  %1 = arith.constant {value = 1} : i32
  %2 = tt.splat %a : tensor<64x64x!ptr<f16>>
  %3 = tt.load %2 : tensor<64x64xf16>
  %4 = scf.for %i = %0 to %n step %1 iter_args(%acc = %3) -> (tensor<64x64xf16>) {
    %5 = tt.load %2 : tensor<64x64xf16>
    USE
    %6 = tt.dot %5, %5, %acc {input_precision = "tf32", max_num_imprecise_acc = 0} : tensor<64x64xf16>
    scf.yield %6
  }
  tt.store %2, %4 : tensor<64x64x!ptr<f16>>
  tt.return
}
"""


def test_a_loaded_accumulator_is_widened_once_before_the_loop():
    """Not a constant: a cast before the loop; the loop carries f32 and the store reads the rounding after it."""
    check_pass(
        widen_accumulators,
        LOOP.replace("USE", "")
        + """
        // CHECK:      %[[L:.*]] = tt.load
        // CHECK-NEXT: %[[W:.*]] = tt.cast %[[L]] {rounding = "rtne"} : tensor<64x64xf32>
        // CHECK-NEXT: %[[F:.*]] = scf.for {{.*}} iter_args(%acc = %[[W]]) -> (tensor<64x64xf32>)
        // CHECK-NOT:    tt.cast
        // CHECK:        scf.yield
        // CHECK:      %[[R:.*]] = tt.cast %[[F]] {rounding = "rtne"} : tensor<64x64xf16>
        // CHECK-NEXT: tt.store %{{.*}}, %[[R]]
        """,
    )


def test_negative_an_accumulator_the_loop_also_reads_as_f16_stays_f16_between_iterations():
    """The body stores the f16 accumulator too: the dot still sums in f32, but each iteration rounds."""
    check_pass(
        widen_accumulators,
        LOOP.replace("USE", "tt.store %2, %acc : tensor<64x64x!ptr<f16>>")
        + """
        // CHECK:      scf.for {{.*}} -> (tensor<64x64xf16>)
        // CHECK:        tt.store %{{.*}}, %acc
        // CHECK-NEXT:   %[[W:.*]] = tt.cast %acc {rounding = "rtne"} : tensor<64x64xf32>
        // CHECK-NEXT:   %[[D:.*]] = tt.dot %{{.*}}, %{{.*}}, %[[W]]
        // CHECK-NEXT:   %[[R:.*]] = tt.cast %[[D]] {rounding = "rtne"} : tensor<64x64xf16>
        // CHECK-NEXT:   scf.yield %[[R]]
        """,
    )


def _tutorial_f16_matmul(widen: bool, a, b, acc_in_dot: bool):
    """The probe's f16-accumulate matmul through the common passes (and widen-accumulators), run by the
    interpreter: what the pass's IR computes, before any GPU layout or lowering."""
    (m, k), n = a.shape, b.shape[1]
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", **dict.fromkeys(
        ("M", "N", "K", "stride_am", "stride_bk", "stride_cm"), "i32")}  # fmt: skip
    consts = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "ACC_IN_DOT": acc_in_dot}
    c = np.zeros((m, n), np.float16)
    files = (*COMMON, "widen_accumulators") if widen else COMMON
    grid = (-(-m // 64), -(-n // 64))
    interpreted_after(f16_acc_matmul_kernel, sig, consts, files, grid, [a, b, c, m, n, k, k, n, n])
    return c


def test_the_widened_ir_computes_the_more_exact_sum():
    """The same kernel interpreted before and after the pass: both within f16's rounding of the float64 product,
    the widened one (one rounding after the loop, not one per K block) at most as far from it."""
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((96, 200)).astype(np.float16), rng.standard_normal((200, 80)).astype(np.float16)
    ref = a.astype(np.float64) @ b.astype(np.float64)

    def error(c):
        return np.linalg.norm(c.astype(np.float64) - ref) / np.linalg.norm(ref)

    for acc_in_dot in (True, False):
        per_block, widened = (_tutorial_f16_matmul(w, a, b, acc_in_dot) for w in (False, True))
        assert error(widened) <= error(per_block) < 3e-3
        assert error(widened) < 1e-3
        once = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)  # f32 sums, rounded once
        np.testing.assert_allclose(widened, once, rtol=2**-9, atol=1e-4)  # an ulp: the f32 sums differ in order
