"""Golden tests of the rematerialize pass: index tiles rebuilt in the layout their user wants."""

from __future__ import annotations

import numpy as np

import tilelab.language as tl
from benchmarks.gpu_kernels import transpose_kernel  # the benchmark's source
from tilelab.compiler.interpreter import run_kernel
from tilelab.compiler.ir import print_module
from tilelab.compiler.ir.ops import ConvertLayoutOp, ForOp, LoadOp, MakeRangeOp
from tilelab.compiler.ir.parser import parse_module
from tilelab.compiler.layouts import blocked, conversion_kind, slice_layout
from tilelab.compiler.options import CompileOptions
from tilelab.compiler.passes import rematerialize
from tilelab.compiler.passes.assign_layouts import collapse
from tilelab.compiler.passes.manager import PassManager
from tilelab.compiler.passes.pipeline import PIPELINES
from tilelab.runtime import stages

from .support import assert_docstring_example, assert_same_values, canonical, func, run_pass

ROW = blocked([32, 32], [1, 4], [8, 4], [4, 1], [1, 0])
ROWS = slice_layout(ROW, 1)  # a [32] tile along the rows of ROW: expand_dims(axis=1) is free
LINE = collapse(ROW, [0])  # what a [1, 32] tile broadcast to ROW holds
COLS = slice_layout(LINE, 0)  # a [32] tile along the columns of ROW: expand_dims(axis=0) is free

#: ``out[i, j] = x[j, i]`` for a 32x32 tile: ``r`` expanded along both axes, so once across threads
TRANSPOSED_COPY = func(
    f"""
    %0 = tt.make_range {{start = 0, end = 32}} : tensor<32xi32, {ROWS}>
    %1 = arith.constant {{value = 32}} : tensor<32xi32, {ROWS}>
    %2 = arith.mul %0, %1 : tensor<32xi32, {ROWS}>
    %3 = tt.expand_dims %2 {{axis = 1}} : tensor<32x1xi32, {ROW}>
    %4 = tt.broadcast %3 : tensor<32x32xi32, {ROW}>
    %5 = tt.expand_dims %0 {{axis = 0}} : tensor<1x32xi32, {LINE}>
    %6 = tt.broadcast %5 : tensor<32x32xi32, {ROW}>
    %7 = arith.add %4, %6 : tensor<32x32xi32, {ROW}>
    %8 = tt.splat %x : tensor<32x32x!ptr<i32>, {ROW}>
    %9 = tt.addptr %8, %7 : tensor<32x32x!ptr<i32>, {ROW}>
    %10 = tt.load %9 : tensor<32x32xi32, {ROW}>
    %11 = tt.splat %out : tensor<32x32x!ptr<i32>, {ROW}>
    %12 = tt.addptr %11, %7 : tensor<32x32x!ptr<i32>, {ROW}>
    %13 = arith.mul %5, %5 : tensor<1x32xi32, {LINE}>
    %14 = tt.broadcast %13 : tensor<32x32xi32, {ROW}>
    %15 = arith.add %10, %14 : tensor<32x32xi32, {ROW}>
    tt.store %12, %15 : tensor<32x32x!ptr<i32>, {ROW}>
    """,
    "%x: !ptr<i32>, %out: !ptr<i32>",
)


def crossing_index_ops(module) -> list:
    """Ops of ``module`` that would move an integer or pointer tile between threads."""

    def is_index(t) -> bool:
        return t.element.is_pointer or t.element.is_int

    return [
        op for op in module.walk() if rematerialize.crossing_target(op) is not None and is_index(op.operands[0].type)
    ]


def test_docstring_example():
    assert_docstring_example(rematerialize)


def test_expand_dims_across_threads_gets_its_own_range():
    assert conversion_kind(ROWS, COLS) == "shared"  # the test is about a real crossing
    out, changed = run_pass(rematerialize, TRANSPOSED_COPY)
    assert changed
    lines = [line.strip() for line in out.splitlines()]
    ranges = [line for line in lines if "tt.make_range" in line]
    assert len(ranges) == 2 and str(ROWS) in ranges[0] and str(COLS) in ranges[1]
    assert not crossing_index_ops(parse_module(out))


def test_one_copy_serves_every_user_of_a_layout():
    out, _ = run_pass(rematerialize, TRANSPOSED_COPY)
    assert out.count("tt.make_range") == 2  # %5 is expanded once, used twice: one copy of %0


def test_values_are_preserved(rng):
    def args():
        return [rng.integers(-1000, 1000, 32 * 32, dtype=np.int32), np.full(32 * 32, -7, np.int32)]

    assert_same_values(rematerialize, TRANSPOSED_COPY, args, grid=(1,))


def test_loop_copy_stays_with_its_original():
    text = func(
        f"""
        %0 = tt.make_range {{start = 0, end = 32}} : tensor<32xi32, {ROWS}>
        scf.for %k = %n to %n step %n {{
          %1 = tt.splat %k : tensor<32xi32, {ROWS}>
          %2 = arith.add %1, %0 : tensor<32xi32, {ROWS}>
          %3 = tt.expand_dims %2 {{axis = 0}} : tensor<1x32xi32, {LINE}>
          %4 = tt.broadcast %3 : tensor<32x32xi32, {ROW}>
          %5 = tt.splat %x : tensor<32x32x!ptr<i32>, {ROW}>
          %6 = tt.addptr %5, %4 : tensor<32x32x!ptr<i32>, {ROW}>
          tt.store %6, %4 : tensor<32x32x!ptr<i32>, {ROW}>
          scf.yield
        }}
        """,
        "%x: !ptr<i32>, %n: i32",
    )
    out, changed = run_pass(rematerialize, text)
    assert changed and not crossing_index_ops(parse_module(out))
    head, body = out.split("scf.for", 1)
    assert f"tt.make_range {{start = 0, end = 32}} : tensor<32xi32, {COLS}>" in head  # invariant: before the loop
    assert f"tt.splat %k : tensor<32xi32, {COLS}>" in body


def row_of_loaded_values(volatile: bool = False) -> str:
    """``out[i, j] = (x[j] if j < n else -1) + j``: a masked [32] load along ROWS, broadcast along COLS."""
    hint = " {volatile = true}" if volatile else ""
    return func(
        f"""
        %0 = tt.make_range {{start = 0, end = 32}} : tensor<32xi32, {ROWS}>
        %1 = tt.splat %x : tensor<32x!ptr<i32>, {ROWS}>
        %2 = tt.addptr %1, %0 : tensor<32x!ptr<i32>, {ROWS}>
        %3 = tt.splat %n : tensor<32xi32, {ROWS}>
        %4 = arith.cmp lt %0, %3 : tensor<32xi1, {ROWS}>
        %5 = arith.constant {{value = -1}} : tensor<32xi32, {ROWS}>
        %6 = tt.load %2, %4, %5{hint} : tensor<32xi32, {ROWS}>
        %7 = arith.add %6, %0 : tensor<32xi32, {ROWS}>
        %8 = tt.expand_dims %7 {{axis = 0}} : tensor<1x32xi32, {LINE}>
        %9 = tt.broadcast %8 : tensor<32x32xi32, {ROW}>
        %10 = tt.expand_dims %0 {{axis = 1}} : tensor<32x1xi32, {ROW}>
        %11 = arith.constant {{value = 32}} : tensor<32x1xi32, {ROW}>
        %12 = arith.mul %10, %11 : tensor<32x1xi32, {ROW}>
        %13 = tt.broadcast %12 : tensor<32x32xi32, {ROW}>
        %14 = tt.expand_dims %0 {{axis = 0}} : tensor<1x32xi32, {LINE}>
        %15 = tt.broadcast %14 : tensor<32x32xi32, {ROW}>
        %16 = arith.add %13, %15 : tensor<32x32xi32, {ROW}>
        %17 = tt.splat %out : tensor<32x32x!ptr<i32>, {ROW}>
        %18 = tt.addptr %17, %16 : tensor<32x32x!ptr<i32>, {ROW}>
        tt.store %18, %9 : tensor<32x32x!ptr<i32>, {ROW}>
        """,
        "%x: !ptr<i32>, %out: !ptr<i32>, %n: i32",
    )


def test_a_cheap_load_is_loaded_again_in_the_wanted_layout(rng):
    # 32 elements, 128 threads: each thread loads the row it needs instead of receiving it
    out, changed = run_pass(rematerialize, row_of_loaded_values())
    assert changed and not crossing_index_ops(parse_module(out))
    module = parse_module(out)
    loads = [op for op in module.walk() if isinstance(op, LoadOp)]
    assert len(loads) == 1 and loads[0].result.type.layout == COLS  # the original, now unused, is gone
    assert all(v.type.layout == COLS for v in loads[0].operands)  # pointer, mask and other too
    assert not any(isinstance(op, ConvertLayoutOp) for op in module.walk())
    x = rng.integers(-1000, 1000, 32, dtype=np.int32)
    res = np.full(32 * 32, 12345, np.int32)
    run_kernel(module, grid=(1,), args=[x, res, 20])
    j = np.arange(32)
    row = np.where(j < 20, x, -1) + j
    np.testing.assert_array_equal(res.reshape(32, 32), np.broadcast_to(row, (32, 32)))


def test_negative_a_volatile_load_stays():
    text = row_of_loaded_values(volatile=True)
    out, changed = run_pass(rematerialize, text)
    module = parse_module(out)
    loads = [op for op in module.walk() if isinstance(op, LoadOp)]
    assert len(loads) == 1 and loads[0].result.type.layout == ROWS  # read once, where the program reads it
    assert changed  # the column index %14 is still rebuilt


def test_negative_a_loop_carried_tile_stays():
    text = func(
        f"""
        %0 = tt.make_range {{start = 0, end = 32}} : tensor<32xi32, {ROWS}>
        %1 = scf.for %k = %n to %n step %n iter_args(%a = %0) -> (tensor<32xi32, {ROWS}>) {{
          %2 = arith.add %a, %a : tensor<32xi32, {ROWS}>
          scf.yield %2 : tensor<32xi32, {ROWS}>
        }}
        %3 = ttg.convert_layout %1 : tensor<32xi32, {COLS}>
        %4 = tt.splat %x : tensor<32x!ptr<i32>, {COLS}>
        tt.store %4, %3 : tensor<32x!ptr<i32>, {COLS}>
        """,
        "%x: !ptr<i32>, %n: i32",
    )
    out, changed = run_pass(rematerialize, text)
    assert not changed and out == canonical(text)


def test_negative_a_chain_past_the_op_budget_stays():
    steps = rematerialize.MAX_OPS + 1
    adds = [f"%{i + 1} = arith.add %{i}, %{i} : tensor<32xi32, {ROWS}>" for i in range(steps)]
    text = func(
        "\n".join(
            [
                f"%0 = tt.make_range {{start = 0, end = 32}} : tensor<32xi32, {ROWS}>",
                *adds,
                f"%{steps + 1} = ttg.convert_layout %{steps} : tensor<32xi32, {COLS}>",
                f"%{steps + 2} = tt.splat %x : tensor<32x!ptr<i32>, {COLS}>",
                f"tt.store %{steps + 2}, %{steps + 1} : tensor<32x!ptr<i32>, {COLS}>",
            ]
        ),
        "%x: !ptr<i32>",
    )
    out, changed = run_pass(rematerialize, text)
    assert not changed and out == canonical(text)


def test_negative_a_free_conversion_stays():
    swapped = "#linear<register=[[2],[1]], lane=[[4],[8],[16],[32],[64]], warp=[], shape=[128]>"
    vec4 = "#blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>"
    text = func(
        f"""
        %0 = tt.make_range {{start = 0, end = 128}} : tensor<128xi32, {vec4}>
        %1 = ttg.convert_layout %0 : tensor<128xi32, {swapped}>
        %2 = tt.splat %x : tensor<128x!ptr<i32>, {swapped}>
        tt.store %2, %1 : tensor<128x!ptr<i32>, {swapped}>
        """,
        "%x: !ptr<i32>",
    )
    out, changed = run_pass(rematerialize, text)
    assert not changed and out == canonical(text)


# ---------------------------------------------------------------- in the CUDA pipeline


def matmul_kernel(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * K + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * K + rn[None, :], acc)


def through_rematerialize(fn, signature, constants, num_warps):
    """``fn`` built and run through the CUDA passes up to and including rematerialize, and the module before it."""
    module = stages.build(fn, signature, constants, {})
    module.options = CompileOptions(target="cuda", num_warps=num_warps)
    passes = PIPELINES["cuda"]
    last = [p.name for p in passes].index(rematerialize.NAME)
    PassManager(passes[:last]).run(module)
    before = parse_module(print_module(module, locs=False))
    PassManager(passes[last : last + 1]).run(module)
    return before, module


def test_transpose_moves_only_its_data(rng):
    signature = {"x_ptr": "*fp32", "out_ptr": "*fp32", "N": "i32"}
    before, after = through_rematerialize(transpose_kernel, signature, {"B": 32}, num_warps=4)
    assert crossing_index_ops(before) and not crossing_index_ops(after)
    x = rng.standard_normal((64, 64)).astype(np.float32)
    out = np.full_like(x, np.nan)
    run_kernel(after, grid=(2, 2, 1), args=[x, out, 64])
    np.testing.assert_array_equal(out, x.T)


def test_matmul_loop_moves_no_index_tile(rng):
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K": "i32"}
    constants = {"BM": 64, "BN": 64, "BK": 32}
    before, after = through_rematerialize(matmul_kernel, signature, constants, num_warps=4)
    assert crossing_index_ops(before) and not crossing_index_ops(after)
    loop = next(op for op in after.walk() if isinstance(op, ForOp))
    assert not any(isinstance(op, MakeRangeOp) for op in loop.walk())  # the ranges stay before the loop
    a, b = (rng.standard_normal((64, 64)).astype(np.float16) for _ in range(2))
    c = np.full((64, 64), np.nan, np.float32)
    run_kernel(after, grid=(1, 1, 1), args=[a, b, c, 64])
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2, atol=1e-2)


#: ``out[j, i] = x[i, j]`` where ``i < n``: the store's mask is the load's mask transposed (``mask.T``), from ranges
MASKED_TRANSPOSE = func(
    f"""
    %0 = tt.make_range {{start = 0, end = 32}} : tensor<32xi32, {ROWS}>
    %1 = tt.expand_dims %0 {{axis = 1}} : tensor<32x1xi32, {ROW}>
    %2 = tt.broadcast %1 : tensor<32x32xi32, {ROW}>
    %3 = tt.splat %n : tensor<32x32xi32, {ROW}>
    %4 = arith.cmp lt %2, %3 : tensor<32x32xi1, {ROW}>
    %5 = arith.constant {{value = 32}} : tensor<32x32xi32, {ROW}>
    %6 = arith.mul %2, %5 : tensor<32x32xi32, {ROW}>
    %7 = tt.make_range {{start = 0, end = 32}} : tensor<32xi32, {COLS}>
    %8 = tt.expand_dims %7 {{axis = 0}} : tensor<1x32xi32, {LINE}>
    %9 = tt.broadcast %8 : tensor<32x32xi32, {ROW}>
    %10 = arith.add %6, %9 : tensor<32x32xi32, {ROW}>
    %11 = tt.splat %x : tensor<32x32x!ptr<i32>, {ROW}>
    %12 = tt.addptr %11, %10 : tensor<32x32x!ptr<i32>, {ROW}>
    %13 = tt.load %12, %4 : tensor<32x32xi32, {ROW}>
    %14 = tt.trans %13 {{order = [1, 0]}} : tensor<32x32xi32, {ROW}>
    %15 = tt.trans %4 {{order = [1, 0]}} : tensor<32x32xi1, {ROW}>
    %16 = tt.splat %out : tensor<32x32x!ptr<i32>, {ROW}>
    %17 = tt.addptr %16, %10 : tensor<32x32x!ptr<i32>, {ROW}>
    tt.store %17, %14, %15 : tensor<32x32x!ptr<i32>, {ROW}>
    """,
    "%x: !ptr<i32>, %out: !ptr<i32>, %n: i32",
)


def test_a_transposed_mask_is_built_again_untransposed():
    """``mask.T`` moves every element between threads; the mask's chain built again in the layout whose
    transpose is the store's makes the ``trans`` free. The data's ``trans`` (a loaded tile) still moves."""
    out, changed = run_pass(rematerialize, MASKED_TRANSPOSE)
    assert changed
    module = parse_module(out)
    crossing = [op for op in module.walk() if rematerialize.crossing_target(op) is not None]
    assert [op.name for op in crossing] == ["tt.trans"] and isinstance(crossing[0].operands[0].defining_op, LoadOp)
    assert out.count("tt.make_range") == 3  # the rows' range again, in the untransposed layout's slice


def test_a_masked_transpose_keeps_its_values(rng):
    def args():
        return [rng.integers(-1000, 1000, 32 * 32, dtype=np.int32), np.full(32 * 32, -7, np.int32), 20]

    assert_same_values(rematerialize, MASKED_TRANSPOSE, args, grid=(1,))
