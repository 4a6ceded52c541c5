"""Golden tests of the GPU passes: assign-layouts and remove-layout-conversions."""

from __future__ import annotations

import textwrap

import numpy as np

from tests.passes.support import assert_same_values
from tilelab.compiler.interpreter import run_kernel
from tilelab.compiler.ir import print_module, verify
from tilelab.compiler.ir.ops import ConvertLayoutOp, ForOp
from tilelab.compiler.ir.parser import parse_module
from tilelab.compiler.layouts import slice_layout
from tilelab.compiler.passes import assign_layouts, coalesce, remove_layout_conversions
from tilelab.compiler.passes.assign_layouts import tile_layout


def kernel(body: str, args: str = "%x: !ptr<f32>") -> str:
    lines = "\n".join("  " + line for line in textwrap.dedent(body).strip().splitlines())
    return f"tt.func @k({args}) {{\n{lines}\n  tt.return\n}}\n"


def assigned(text: str):
    module = parse_module(text)
    changed = assign_layouts.run(module)
    verify(module)
    return module, changed


def values_by_name(module) -> dict:
    return {op.name + str(i): op for i, op in enumerate(module.kernel.body.ops)}


def test_tile_layout_docstring_example():
    assert str(tile_layout([1024], 4)) == "#blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[4], order=[0]>"


def test_expand_dims_and_broadcast_need_no_conversion():
    module, changed = assigned(
        kernel(
            """
            %0 = tt.make_range {start = 0, end = 64} : tensor<64xi32>
            %1 = tt.expand_dims %0 {axis = 1} : tensor<64x1xi32>
            %2 = tt.broadcast %1 : tensor<64x64xi32>
            """
        )
    )
    rng, expand, bcast = module.kernel.body.ops[:3]
    assert changed and not any(isinstance(op, ConvertLayoutOp) for op in module.walk())
    assert bcast.result.type.layout == tile_layout([64, 64], 4)
    assert rng.result.type.layout == slice_layout(expand.result.type.layout, 1)


def test_reduction_gives_the_slice_of_its_operand_layout():
    module, _ = assigned(
        kernel(
            """
            %0 = arith.constant {value = 1.0} : tensor<32x128xf32>
            %1 = tt.reduce %0 {axis = 1} : tensor<32xf32> {
              ^bb(%a: f32, %b: f32):
                %2 = arith.add %a, %b : f32
                tt.reduce.return %2 : f32
            }
            """
        )
    )
    const, red = module.kernel.body.ops[:2]
    assert red.result.type.layout == slice_layout(const.result.type.layout, 1)


def test_mixed_layouts_get_a_conversion_before_the_user():
    text = kernel(
        """
        %0 = tt.make_range {start = 0, end = 64} : tensor<64xi32>
        %1 = tt.expand_dims %0 {axis = 1} : tensor<64x1xi32>
        %2 = tt.broadcast %1 : tensor<64x64xi32>
        %3 = tt.trans %2 {order = [1, 0]} : tensor<64x64xi32>
        %4 = arith.add %2, %3 : tensor<64x64xi32>
        """
    )
    module, _ = assigned(text)
    converts = [op for op in module.walk() if isinstance(op, ConvertLayoutOp)]
    assert len(converts) <= 1
    add = module.kernel.body.ops[-2]
    assert add.operands[0].type.layout == add.operands[1].type.layout == add.result.type.layout


def test_negative_elementwise_chain_of_one_layout_needs_no_conversion():
    module, _ = assigned(
        kernel(
            """
            %0 = tt.make_range {start = 0, end = 256} : tensor<256xi32>
            %1 = arith.add %0, %0 : tensor<256xi32>
            %2 = arith.mul %1, %0 : tensor<256xi32>
            """
        )
    )
    assert not any(isinstance(op, ConvertLayoutOp) for op in module.walk())
    assert len({op.result.type.layout for op in module.kernel.body.ops[:3]}) == 1


def test_loop_carried_tile_keeps_its_initial_layout():
    module, _ = assigned(
        kernel(
            """
            %0 = arith.constant {value = 0} : i32
            %1 = arith.constant {value = 4} : i32
            %2 = arith.constant {value = 1} : i32
            %3 = tt.make_range {start = 0, end = 128} : tensor<128xi32>
            %4 = scf.for %i = %0 to %1 step %2 iter_args(%acc = %3) -> (tensor<128xi32>) {
              %5 = arith.add %acc, %acc : tensor<128xi32>
              scf.yield %5 : tensor<128xi32>
            }
            """
        )
    )
    loop = module.kernel.body.ops[4]
    layout = loop.init_args[0].type.layout
    assert loop.body.args[1].type.layout == layout == loop.results[0].type.layout


def test_layouts_do_not_change_what_the_kernel_computes(rng):
    text = kernel(
        """
        %0 = tt.make_range {start = 0, end = 64} : tensor<64xi32>
        %1 = tt.expand_dims %0 {axis = 1} : tensor<64x1xi32>
        %2 = tt.broadcast %1 : tensor<64x64xi32>
        %3 = tt.trans %2 {order = [1, 0]} : tensor<64x64xi32>
        %4 = arith.add %2, %3 : tensor<64x64xi32>
        %5 = tt.splat %x : tensor<64x64x!ptr<i32>>
        %6 = tt.addptr %5, %3 : tensor<64x64x!ptr<i32>>
        tt.store %6, %4 : tensor<64x64x!ptr<i32>>
        """,
        "%x: !ptr<i32>",
    )
    outs = []
    for transform in (False, True):
        module = parse_module(text)
        if transform:
            assign_layouts.run(module)
        out = rng.integers(-100, 100, size=64, dtype=np.int32)
        run_kernel(module, grid=(1, 1, 1), args=[out])
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])
    assert outs[0][5] == 5 + 63


# ---------------------------------------------------------------- remove-layout-conversions


def _with_converts(chain: bool):
    module, _ = assigned(
        kernel("%0 = tt.make_range {start = 0, end = 128} : tensor<128xi32>\n%1 = arith.add %0, %0 : tensor<128xi32>")
    )
    body = module.kernel.body
    rng, add = body.ops[:2]
    layout = rng.result.type.layout
    other = tile_layout([128], 2)
    first = ConvertLayoutOp(rng.result, rng.result.type.with_layout(other if chain else layout))
    body.insert(1, first)
    src = first.result
    if chain:
        second = ConvertLayoutOp(first.result, rng.result.type.with_layout(layout))
        body.insert(2, second)
        src = second.result
    add.operands = [src, src]
    return module, add, rng


def test_conversion_to_the_same_layout_goes():
    module, add, rng = _with_converts(chain=False)
    assert remove_layout_conversions.run(module)
    assert add.operands == [rng.result, rng.result]
    assert not any(isinstance(op, ConvertLayoutOp) for op in module.walk())


def test_chain_back_to_the_source_layout_goes():
    module, add, rng = _with_converts(chain=True)
    assert remove_layout_conversions.run(module)
    assert add.operands == [rng.result, rng.result]
    assert "ttg.convert_layout" not in print_module(module)


def test_negative_a_real_conversion_stays():
    module, add, rng = _with_converts(chain=False)
    remove_layout_conversions.run(module)
    other = tile_layout([128], 2)
    conv = ConvertLayoutOp(rng.result, rng.result.type.with_layout(other))
    module.kernel.body.insert(1, conv)
    add.operands = [conv.result, conv.result]
    assert not remove_layout_conversions.run(module)
    assert "ttg.convert_layout" in print_module(module)


# ---------------------------------------------------------------- coalesce


def _store_kernel(ptr_index: str) -> str:
    return kernel(
        f"""
        %0 = tt.make_range {{start = 0, end = 64}} : tensor<64xi32>
        %1 = tt.expand_dims %0 {{axis = 1}} : tensor<64x1xi32>
        %2 = tt.expand_dims %0 {{axis = 0}} : tensor<1x64xi32>
        %3 = arith.constant {{value = 64}} : tensor<{ptr_index}xi32>
        %4 = arith.mul {"%1" if ptr_index == "64x1" else "%2"}, %3 : tensor<{ptr_index}xi32>
        %5 = tt.broadcast %4 : tensor<64x64xi32>
        %6 = tt.broadcast {"%2" if ptr_index == "64x1" else "%1"} : tensor<64x64xi32>
        %7 = arith.add %5, %6 : tensor<64x64xi32>
        %8 = tt.splat %x : tensor<64x64x!ptr<i32>>
        %9 = tt.addptr %8, %7 : tensor<64x64x!ptr<i32>>
        tt.store %9, %7 : tensor<64x64x!ptr<i32>>
        """,
        "%x: !ptr<i32>",
    )


def _coalesced(text):
    module = parse_module(text)
    assign_layouts.run(module)
    changed = coalesce.run(module)
    verify(module)
    store = next(op for op in module.walk() if op.name == "tt.store")
    return changed, store


def test_column_contiguous_store_gets_a_column_major_layout():
    changed, store = _coalesced(_store_kernel("1x64"))  # address = row + 64 * col
    assert changed and store.operands[0].type.layout.params["order"] == (0, 1)
    assert all(isinstance(v.defining_op, ConvertLayoutOp) for v in store.operands)


def test_negative_row_contiguous_store_keeps_its_layout():
    changed, store = _coalesced(_store_kernel("64x1"))  # address = 64 * row + col
    assert not changed and store.operands[0].type.layout.params["order"] == (1, 0)


# ---------------------------------------------------------------- loop-carried layouts

ROWS = "#blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[4], order=[0]>"
SLICE = "#blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>"


def _carried_kernel(extra_use: str = "") -> str:
    """``l = l * 0.5 + row_sum(i)`` over four iterations, ``l`` carried in ``ROWS`` while computed in ``SLICE``."""
    return kernel(
        f"""
        %r = tt.make_range {{start = 0, end = 128}} : tensor<128xi32, {SLICE}>
        %xs = tt.splat %x : tensor<128x!ptr<f32>, {SLICE}>
        %px = tt.addptr %xs, %r : tensor<128x!ptr<f32>, {SLICE}>
        %ro = tt.make_range {{start = 0, end = 128}} : tensor<128xi32, {ROWS}>
        %os = tt.splat %o : tensor<128x!ptr<f32>, {ROWS}>
        %po = tt.addptr %os, %ro : tensor<128x!ptr<f32>, {ROWS}>
        %lo = arith.constant {{value = 0}} : i32
        %hi = arith.constant {{value = 4}} : i32
        %one = arith.constant {{value = 1}} : i32
        %l0 = arith.constant {{value = 0.0}} : tensor<128xf32, {ROWS}>
        %l = scf.for %i = %lo to %hi step %one iter_args(%li = %l0) -> (tensor<128xf32, {ROWS}>) {{
          %v = tt.load %px : tensor<128xf32, {SLICE}>
          %fi = tt.cast %i : f32
          %s = tt.splat %fi : tensor<128xf32, {SLICE}>
          %w = arith.mul %v, %s : tensor<128xf32, {SLICE}>
          %a = ttg.convert_layout %w : tensor<128xf32, {ROWS}>
          %half = arith.constant {{value = 0.5}} : tensor<128xf32, {ROWS}>
          %scaled = arith.mul %li, %half : tensor<128xf32, {ROWS}>
          %next = arith.add %scaled, %a : tensor<128xf32, {ROWS}>
          {extra_use}
          scf.yield %next : tensor<128xf32, {ROWS}>
        }}
        tt.store %po, %l : tensor<128x!ptr<f32>, {ROWS}>
        """,
        "%x: !ptr<f32>, %o: !ptr<f32>",
    )


def _loop_conversions(module) -> int:
    loop = next(op for op in module.walk() if isinstance(op, ForOp))
    return sum(isinstance(op, ConvertLayoutOp) for op in loop.walk())


def test_loop_carried_statistic_moves_to_the_layout_its_loop_computes(rng):
    """Attention's ``l_i``: the conversion in the loop goes; one after the loop feeds the store."""
    text = _carried_kernel()
    module = parse_module(text)
    assert _loop_conversions(module) == 1
    assert remove_layout_conversions.run(module)
    verify(module)
    assert _loop_conversions(module) == 0
    loop = next(op for op in module.walk() if isinstance(op, ForOp))
    assert str(loop.results[0].type.layout) == SLICE and str(loop.body.args[1].type.layout) == SLICE
    assert str(loop.init_args[0].type.layout) == SLICE  # the zeros made again in the new layout
    assert_same_values(
        remove_layout_conversions,
        text,
        lambda: [rng.standard_normal(128).astype(np.float32), np.full(128, np.nan, np.float32)],
        grid=(1,),
    )


def test_negative_carried_value_read_by_a_store_in_the_loop_stays():
    text = _carried_kernel(extra_use=f"tt.store %po, %next : tensor<128x!ptr<f32>, {ROWS}>")
    module = parse_module(text)
    remove_layout_conversions.run(module)
    assert _loop_conversions(module) == 1
