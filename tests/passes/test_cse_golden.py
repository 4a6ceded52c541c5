"""Golden IR tests of cse: the second of two equal pure ops is replaced by the first."""

from __future__ import annotations

from tilelab.compiler.passes import cse

from .support import check_pass, check_unchanged


def test_equal_splats_merge():
    check_pass(
        cse,
        """
        tt.func @k(%x: !ptr<f32>) {
          %0 = tt.splat %x : tensor<8x!ptr<f32>>
          %1 = tt.splat %x : tensor<8x!ptr<f32>>
          %2 = tt.load %0 : tensor<8xf32>
          tt.store %1, %2 : tensor<8x!ptr<f32>>
          tt.return
        }
        // CHECK:     %[[P:.*]] = tt.splat %x
        // CHECK-NOT: tt.splat
        // CHECK:     %[[V:.*]] = tt.load %[[P]]
        // CHECK:     tt.store %[[P]], %[[V]]
        """,
    )


def test_a_merge_makes_its_users_equal_too():
    check_pass(
        cse,
        """
        tt.func @k(%x: !ptr<i32>) {
          %0 = tt.get_program_id {axis = 0} : i32
          %1 = tt.get_program_id {axis = 0} : i32
          %2 = arith.mul %0, %0 : i32
          %3 = arith.mul %1, %1 : i32
          %4 = arith.sub %2, %3 : i32
          tt.store %x, %4 : !ptr<i32>
          tt.return
        }
        // CHECK:     %[[PID:.*]] = tt.get_program_id {axis = 0}
        // CHECK-NOT: tt.get_program_id
        // CHECK:     %[[SQ:.*]] = arith.mul %[[PID]], %[[PID]]
        // CHECK-NOT: arith.mul
        // CHECK:     arith.sub %[[SQ]], %[[SQ]]
        """,
    )


def test_loop_body_reuses_a_value_from_above():
    check_pass(
        cse,
        """
        tt.func @k(%x: !ptr<i32>, %n: i32) {
          %0 = arith.mul %n, %n : i32
          scf.for %i = %n to %n step %n {
            %1 = arith.mul %n, %n : i32
            tt.store %x, %1 : !ptr<i32>
            scf.yield
          }
          tt.store %x, %0 : !ptr<i32>
          tt.return
        }
        // CHECK:      %[[M:.*]] = arith.mul %n, %n
        // CHECK-NEXT: scf.for
        // CHECK-NEXT: tt.store %x, %[[M]]
        """,
    )


def test_negative_sibling_branches_do_not_share():
    check_unchanged(
        cse,
        """
        tt.func @k(%x: !ptr<i32>, %n: i32, %c: i1) {
          scf.if %c {
            %0 = arith.mul %n, %n : i32
            tt.store %x, %0 : !ptr<i32>
            scf.yield
          } else {
            %1 = arith.mul %n, %n : i32
            tt.store %x, %1 : !ptr<i32>
            scf.yield
          }
          tt.return
        }
        """,
    )


def test_negative_loads_and_different_attrs_stay():
    check_unchanged(
        cse,
        """
        tt.func @k(%x: !ptr<i32>) {
          %0 = tt.load %x : i32
          %1 = tt.load %x : i32
          %2 = tt.get_program_id {axis = 0} : i32
          %3 = tt.get_program_id {axis = 1} : i32
          %4 = arith.add %0, %1 : i32
          %5 = arith.add %2, %3 : i32
          %6 = arith.add %4, %5 : i32
          tt.store %x, %6 : !ptr<i32>
          tt.return
        }
        """,
    )


def _two_reductions(second_combine: str) -> str:
    return f"""
        tt.func @k(%x: !ptr<f32>, %y: tensor<8x4xf32>) {{
          %0 = tt.reduce %y {{axis = 1}} : tensor<8xf32> {{
          ^bb(%a: f32, %b: f32):
            %1 = arith.max %a, %b : f32
            tt.reduce.return %1 : f32
          }}
          %2 = tt.reduce %y {{axis = 1}} : tensor<8xf32> {{
          ^bb(%c: f32, %d: f32):
            %3 = {second_combine} : f32
            tt.reduce.return %3 : f32
          }}
          %4 = tt.splat %x : tensor<8x!ptr<f32>>
          %5 = arith.add %0, %2 : tensor<8xf32>
          tt.store %4, %5 : tensor<8x!ptr<f32>>
          tt.return
        }}
        """


def test_reductions_with_equal_combines_merge():
    """``tl.max(x, 1)`` and the max ``tl.argmax(x, 1)`` starts with: the block arguments' names differ."""
    check_pass(
        cse,
        _two_reductions("arith.max %c, %d")
        + """
        // CHECK:     %[[R:.*]] = tt.reduce %y
        // CHECK-NOT: tt.reduce %y
        // CHECK:     arith.add %[[R]], %[[R]]
        """,
    )


def test_negative_reductions_with_other_combines_stay():
    check_unchanged(cse, _two_reductions("arith.min %c, %d"))
    check_unchanged(cse, _two_reductions("arith.max %d, %c"))  # same op, operands swapped: not proved equal
