"""IR-level checks of build_module on sample kernels: structure, types, locations."""

import inspect

import pytest

from tilelab.compiler.frontend import CompilationError, build_module, get_jit_fn
from tilelab.compiler.ir import ForOp, IfOp, ReduceOp, print_module, verify
from tilelab.compiler.ir.types import PointerType, f16, f32, i32

from . import kernels

P = PointerType


def build(fn, sig, consts):
    m = build_module(fn, sig, consts)
    verify(m)
    return m, print_module(m, locs=False)


def test_vector_add_ir_and_attrs():
    m, text = build(kernels.add, {"x_ptr": P(f32), "y_ptr": P(f32), "out_ptr": P(f32), "n": i32}, {"BLOCK": 128})
    assert "tt.make_range {start = 0, end = 128} : tensor<128xi32>" in text
    assert text.count("tt.load") == 2 and "tt.store" in text
    assert "arith.add %12, %15 : tensor<128xf32>" in text
    k = m.kernel
    assert k.attrs["arg_names"] == ("x_ptr", "y_ptr", "out_ptr", "n")
    assert k.attrs["arg_divisibility"] == (1, 1, 1, 1)
    assert m.attrs["constants"] == {"BLOCK": 128}
    assert m.attrs["signature"] == {"x_ptr": "*f32", "y_ptr": "*f32", "out_ptr": "*f32", "n": "i32"}
    first = inspect.getsourcelines(kernels.add)[1]
    assert k.attrs["first_line"] == first and k.attrs["filename"].endswith("kernels.py")
    load = next(op for op in m.walk() if op.name == "tt.load")
    assert load.loc.line == first + 3 and load.loc.col == 29


def test_softmax_reductions():
    m, text = build(kernels.softmax, {"out_ptr": P(f32), "in_ptr": P(f32), "stride": i32, "n_cols": i32}, {"BLOCK": 64})
    reduces = [op for op in m.walk() if isinstance(op, ReduceOp)]
    assert [r.combine.ops[0].kind for r in reduces] == ["max", "add"]
    assert "math.exp" in text and "arith.fdiv" in text
    assert "arith.constant {value = -inf} : f32" in text


def test_matmul_loop_carries_acc_and_pointers():
    sig = {"a_ptr": P(f16), "b_ptr": P(f16), "c_ptr": P(f16), "M": i32, "N": i32, "K": i32}
    m, text = build(kernels.matmul, sig, {"BM": 32, "BN": 32, "BK": 16})
    loop = next(op for op in m.walk() if isinstance(op, ForOp))
    assert [str(t.type) for t in loop.results] == [
        "tensor<32x32xf32>",
        "tensor<32x16x!ptr<f16>>",
        "tensor<16x32x!ptr<f16>>",
    ]
    assert "tt.dot" in text and 'callee = "cdiv"' in text
    assert m.get("cdiv") is not None
    assert "tt.cast" in text and "tensor<32x32xf16>" in text


def test_control_flow_calls_and_block_pointers():
    sig = {"x_ptr": P(f32), "out_ptr": P(f32), "n": i32, "seed": i32}
    m, text = build(kernels.control, sig, {"BLOCK": 16})
    ifs = [op for op in m.kernel.walk() if isinstance(op, IfOp)]
    assert len(ifs) == 1 and str(ifs[0].results[0].type) == "tensor<16xf32>"
    assert "scf.while" in text and "scf.condition" in text
    assert "arith.mul" in text and "value = 100" not in text  # constexpr-false branch dropped
    assert text.count("tt.reduce ") == 3 and "tt.scan" in text  # tl.reduce; argmax: the max, the first index
    assert {"add_one", "rand", "philox_impl"} <= {f.sym_name for f in m.funcs}
    block_loop = [op for op in m.kernel.walk() if isinstance(op, ForOp)][-1]
    assert len(block_loop.results) == 5  # v + the block pointer's base, shape, stride, offset


def test_constants_are_not_arguments():
    m, _ = build(kernels.add, {"x_ptr": P(f32), "y_ptr": P(f32), "out_ptr": P(f32)}, {"n": 1, "BLOCK": 32})
    assert m.kernel.attrs["arg_names"] == ("x_ptr", "y_ptr", "out_ptr")


def test_get_jit_fn():
    class Wrapper:
        _tilelab_fn = staticmethod(kernels.add)

    assert get_jit_fn(Wrapper()) is kernels.add
    assert get_jit_fn(kernels.add) is None


@pytest.mark.parametrize("block", [16, 64])
def test_specialization_changes_shapes(block):
    _, text = build(kernels.add, {"x_ptr": P(f32), "y_ptr": P(f32), "out_ptr": P(f32), "n": i32}, {"BLOCK": block})
    assert f"tensor<{block}xf32>" in text


def test_conditional_expressions_ir():
    """A run-time scalar condition builds an ``scf.if`` (only one branch runs); a tile condition a select."""
    m, text = build(kernels.conditional, {"x_ptr": P(f32), "out_ptr": P(f32), "n": i32}, {"BLOCK": 16})
    ifs = [op for op in m.walk() if isinstance(op, IfOp)]
    assert len(ifs) == 2
    assert [r.type for r in ifs[0].results] == [ifs[0].then_block.ops[-1].operands[0].type]  # yields the tile
    assert ifs[1].results == [] and any(op.name == "tt.store" for op in ifs[1].then_block.ops)
    assert "arith.select" in text


def test_conditional_expression_needs_values_on_both_sides():
    with pytest.raises(CompilationError, match="needs a value from both branches, or from neither") as info:
        build(kernels.half_conditional, {"x_ptr": P(f32), "n": i32}, {})
    assert info.value.line == inspect.getsourcelines(kernels.half_conditional)[1] + 2
