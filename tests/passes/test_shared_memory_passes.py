"""Golden tests of convert-through-shared, allocate-shared-memory and insert-barriers."""

from __future__ import annotations

import numpy as np

from tilelab.compiler.ir.ops import BarrierOp, LocalAllocOp, LocalLoadOp
from tilelab.compiler.ir.parser import parse_module
from tilelab.compiler.layouts import bank_conflicts, blocked, row_major_shared
from tilelab.compiler.passes import allocate_shared_memory, convert_through_shared, insert_barriers

from .support import assert_docstring_example, assert_same_values, func, run_pass

T = "tensor<64xf32>"
ROW = "#blocked<sizePerThread=[1, 4], threadsPerWarp=[8, 4], warpsPerCTA=[4, 1], order=[1, 0]>"
VEC4 = "#blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>"
SWAPPED = "#linear<register=[[2],[1]], lane=[[4],[8],[16],[32],[64]], warp=[], shape=[128]>"  # registers permuted
COL = "#blocked<sizePerThread=[4, 1], threadsPerWarp=[4, 8], warpsPerCTA=[1, 4], order=[0, 1]>"


def test_docstring_examples():
    for pass_module in (convert_through_shared, allocate_shared_memory, insert_barriers):
        assert_docstring_example(pass_module)


def test_transpose_conversion_gets_a_swizzle_with_fewer_wavefronts():
    src, dst = blocked([32, 32], [1, 4], [8, 4], [4, 1], [1, 0]), blocked([32, 32], [4, 1], [4, 8], [1, 4], [0, 1])
    shared = convert_through_shared.choose_shared_layout(src, dst, 4)

    def wavefronts(layout):
        return sum(int(bank_conflicts(layout, reg, 4).per_instruction.sum()) for reg in (src, dst))

    assert shared.params["max_phase"] > 1
    assert wavefronts(shared) < wavefronts(row_major_shared([32, 32]))


def test_a_buffer_made_for_the_pair_is_taken_only_for_fewer_instructions():
    """Rows of four to columns of four: the buffer made for the pair would be conflict-free on both sides (the
    swizzle's 16-byte stores take twice the wavefronts they need) with as many accesses: the swizzle stays.
    An accumulator to its 4-column store layout: the made buffer halves the stores: taken."""
    from tilelab.compiler.layouts import conversion_shared
    from tilelab.compiler.layouts.distributed import wgmma_accumulator

    src, dst = blocked([32, 32], [1, 4], [8, 4], [4, 1], [1, 0]), blocked([32, 32], [4, 1], [4, 8], [1, 4], [0, 1])
    made = conversion_shared(src, dst, 4, writer_runs=True)
    assert all(bank_conflicts(made, reg, 4).conflict_free for reg in (src, dst))
    assert convert_through_shared.choose_shared_layout(src, dst, 4).params["kind"] == "swizzled_shared"
    acc = wgmma_accumulator([128, 256], [8, 1], 256)
    store = blocked([128, 256], [1, 4], [1, 32], [8, 1], [1, 0])
    assert convert_through_shared.choose_shared_layout(acc, store, 4) == conversion_shared(acc, store, 4)


def test_round_trip_keeps_the_values(rng):
    text = func(
        f"""
        %0 = tt.make_range {{start = 0, end = 32}} : tensor<32xi32, #slice<dim=1, parent={ROW}>>
        %1 = tt.expand_dims %0 {{axis = 1}} : tensor<32x1xi32, {ROW}>
        %2 = tt.broadcast %1 : tensor<32x32xi32, {ROW}>
        %3 = tt.splat %x : tensor<32x32x!ptr<i32>, {ROW}>
        %4 = tt.addptr %3, %2 : tensor<32x32x!ptr<i32>, {ROW}>
        %5 = tt.load %4 : tensor<32x32xi32, {ROW}>
        %6 = ttg.convert_layout %5 : tensor<32x32xi32, {COL}>
        %7 = ttg.convert_layout %4 : tensor<32x32x!ptr<i32>, {COL}>
        %8 = arith.add %6, %6 : tensor<32x32xi32, {COL}>
        tt.store %7, %8 : tensor<32x32x!ptr<i32>, {COL}>
        """,
        "%x: !ptr<i32>",
    )
    assert_same_values(convert_through_shared, text, lambda: [rng.integers(-99, 99, 64, dtype=np.int32)], grid=(1,))
    out, _ = run_pass(convert_through_shared, text)
    assert out.count("ttg.local_alloc") == 2 and "ttg.convert_layout" not in out


ROW64 = "#blocked<sizePerThread=[1, 4], threadsPerWarp=[2, 16], warpsPerCTA=[4, 1], order=[1, 0]>"


def _transpose(result_layout: str) -> str:
    return func(
        f"""
        %0 = tt.make_range {{start = 0, end = 32}} : tensor<32xi32, #slice<dim=0, parent={ROW64}>>
        %1 = tt.expand_dims %0 {{axis = 0}} : tensor<1x32xi32, {ROW64}>
        %2 = tt.broadcast %1 : tensor<32x32xi32, {ROW64}>
        %3 = tt.make_range {{start = 0, end = 32}} : tensor<32xi32, #slice<dim=1, parent={ROW64}>>
        %4 = tt.expand_dims %3 {{axis = 1}} : tensor<32x1xi32, {ROW64}>
        %5 = arith.constant {{value = 32}} : tensor<32x1xi32, {ROW64}>
        %6 = arith.mul %4, %5 : tensor<32x1xi32, {ROW64}>
        %7 = tt.broadcast %6 : tensor<32x32xi32, {ROW64}>
        %8 = arith.add %7, %2 : tensor<32x32xi32, {ROW64}>
        %9 = tt.splat %x : tensor<32x32x!ptr<i32>, {ROW64}>
        %10 = tt.addptr %9, %8 : tensor<32x32x!ptr<i32>, {ROW64}>
        %11 = tt.load %10 : tensor<32x32xi32, {ROW64}>
        %12 = tt.trans %11 {{order = [1, 0]}} : tensor<32x32xi32, {result_layout}>
        %13 = tt.splat %y : tensor<32x32x!ptr<i32>, {ROW64}>
        %14 = tt.addptr %13, %8 : tensor<32x32x!ptr<i32>, {ROW64}>
        %15 = ttg.convert_layout %12 : tensor<32x32xi32, {ROW64}>
        tt.store %14, %15 : tensor<32x32x!ptr<i32>, {ROW64}>
        """,
        "%x: !ptr<i32>, %y: !ptr<i32>",
    )


def test_trans_that_moves_data_becomes_a_free_trans_and_a_swizzled_round_trip(rng):
    text = _transpose(ROW64)  # the trans itself would gather across threads, through a row-major scratch
    assert_same_values(
        convert_through_shared,
        text,
        lambda: [rng.integers(-99, 99, 1024, dtype=np.int32), np.zeros(1024, np.int32)],
        grid=(1,),
    )
    module = parse_module(run_pass(convert_through_shared, text)[0])
    (trans,) = [op for op in module.walk() if op.name == "tt.trans"]
    src = trans.operands[0].type.layout
    assert trans.result.type.layout == convert_through_shared.permuted(src, [1, 0])
    (alloc,) = [op for op in module.walk() if isinstance(op, LocalAllocOp)]
    assert alloc.result.type.layout.params["max_phase"] > 1  # a swizzle, not the plain row-major scratch


def test_negative_trans_already_free_stays():
    free = str(convert_through_shared.permuted(blocked([32, 32], [1, 4], [2, 16], [4, 1], [1, 0]), [1, 0]))
    out = run_pass(convert_through_shared, _transpose(free))[0]
    (trans,) = [op for op in parse_module(out).walk() if op.name == "tt.trans"]
    assert str(trans.result.type.layout) == free
    assert "ttg.convert_layout" not in out and out.count("ttg.local_alloc") == 1  # only the store's conversion


def test_negative_register_permutation_stays_a_conversion():
    text = func(
        f"""
        %0 = arith.constant {{value = 1.0}} : tensor<128xf32, {VEC4}>
        %1 = ttg.convert_layout %0 : tensor<128xf32, {SWAPPED}>
        """
    )
    out, changed = run_pass(convert_through_shared, text)
    assert not changed and "ttg.local_alloc" not in out


def _allocated(body: str):
    module = parse_module(func(body))
    allocate_shared_memory.run(module)
    return module, [op.attrs["offset"] for op in module.walk() if isinstance(op, LocalAllocOp)]


def test_overlapping_buffers_get_disjoint_aligned_bytes():
    module, offsets = _allocated(
        f"""
        %0 = arith.constant {{value = 1.0}} : tensor<4xf32>
        %1 = ttg.local_alloc : tensor<4xf32>
        %2 = ttg.local_alloc : {T}
        ttg.local_store %1, %0 : tensor<4xf32>
        %3 = ttg.local_load %1 : tensor<4xf32>
        %4 = ttg.local_load %2 : {T}
        """
    )
    assert offsets == [0, 16] and module.attrs["shared_bytes"] == 16 + 256


def test_buffer_used_in_a_loop_stays_live_through_the_loop():
    module, offsets = _allocated(
        f"""
        %0 = arith.constant {{value = 0}} : i32
        %1 = arith.constant {{value = 4}} : i32
        %2 = arith.constant {{value = 1}} : i32
        %3 = ttg.local_alloc : {T}
        scf.for %i = %0 to %1 step %2 {{
          %4 = ttg.local_alloc : {T}
          %5 = ttg.local_load %3 : {T}
          ttg.local_store %4, %5 : {T}
          scf.yield
        }}
        """
    )
    assert offsets == [0, 256] and module.attrs["shared_bytes"] == 512


def _barriers(body: str) -> str:
    out, _ = run_pass(insert_barriers, func(body))
    return out


def test_negative_disjoint_buffers_need_no_barrier():
    out = _barriers(
        f"""
        %0 = arith.constant {{value = 1.0}} : {T}
        %1 = ttg.local_alloc {{offset = 0}} : {T}
        %2 = ttg.local_alloc {{offset = 256}} : {T}
        ttg.local_store %1, %0 : {T}
        %3 = ttg.local_load %2 : {T}
        %4 = ttg.local_load %2 : {T}
        """
    )
    assert "gpu.barrier" not in out  # a write and reads of other bytes, and two reads of the same bytes


def test_loop_carried_write_after_read_gets_a_barrier():
    module = parse_module(
        func(
            f"""
            %0 = arith.constant {{value = 0}} : i32
            %1 = arith.constant {{value = 4}} : i32
            %2 = arith.constant {{value = 1}} : i32
            %3 = arith.constant {{value = 1.0}} : {T}
            %4 = ttg.local_alloc {{offset = 0}} : {T}
            scf.for %i = %0 to %1 step %2 {{
              ttg.local_store %4, %3 : {T}
              %5 = ttg.local_load %4 : {T}
              scf.yield
            }}
            """
        )
    )
    assert insert_barriers.run(module)
    body = next(op for op in module.walk() if op.name == "scf.for").body.ops
    kinds = [type(op).__name__ for op in body]
    assert kinds == ["BarrierOp", "LocalStoreOp", "BarrierOp", "LocalLoadOp", "YieldOp"]
    assert not insert_barriers.run(module)  # idempotent
    assert sum(isinstance(op, BarrierOp) for op in module.walk()) == 2
    assert isinstance(body[3], LocalLoadOp)


def _loop_converting(value_line: str, convert_inside_if: bool = False) -> str:
    """A loop adding a converted tile into ``%y`` four times; ``value_line`` defines ``%v`` (``{ROW}``)."""
    convert = f"%c = ttg.convert_layout %v : tensor<32x32xi32, {COL}>"
    if convert_inside_if:
        convert = f"""%t = arith.cmp lt %i, %n : i1
          %c = scf.if %t -> (tensor<32x32xi32, {COL}>) {{
            %ci = ttg.convert_layout %v : tensor<32x32xi32, {COL}>
            scf.yield %ci : tensor<32x32xi32, {COL}>
          }} else {{
            %z = arith.constant {{value = 0}} : tensor<32x32xi32, {COL}>
            scf.yield %z : tensor<32x32xi32, {COL}>
          }}"""
    return func(
        f"""
        %0 = tt.make_range {{start = 0, end = 32}} : tensor<32xi32, #slice<dim=1, parent={ROW}>>
        %1 = tt.expand_dims %0 {{axis = 1}} : tensor<32x1xi32, {ROW}>
        %2 = tt.broadcast %1 : tensor<32x32xi32, {ROW}>
        %3 = tt.splat %x : tensor<32x32x!ptr<i32>, {ROW}>
        %4 = tt.addptr %3, %2 : tensor<32x32x!ptr<i32>, {ROW}>
        %p = ttg.convert_layout %4 : tensor<32x32x!ptr<i32>, {COL}>
        %q = tt.splat %y : tensor<32x32x!ptr<i32>, {COL}>
        %r = ttg.convert_layout %2 : tensor<32x32xi32, {COL}>
        %yp = tt.addptr %q, %r : tensor<32x32x!ptr<i32>, {COL}>
        %lo = arith.constant {{value = 0}} : i32
        %hi = arith.constant {{value = 4}} : i32
        %one = arith.constant {{value = 1}} : i32
        %acc0 = arith.constant {{value = 0}} : tensor<32x32xi32, {COL}>
        %acc = scf.for %i = %lo to %hi step %one iter_args(%a = %acc0) -> (tensor<32x32xi32, {COL}>) {{
          {value_line}
          {convert}
          %s = arith.add %a, %c : tensor<32x32xi32, {COL}>
          scf.yield %s : tensor<32x32xi32, {COL}>
        }}
        tt.store %yp, %acc : tensor<32x32x!ptr<i32>, {COL}>
        """,
        "%x: !ptr<i32>, %y: !ptr<i32>, %n: i32",
    )


def _stores_by_depth(text: str) -> list[int]:
    """For each ``ttg.local_store``, how many ``scf.for`` ops hold it."""
    from tilelab.compiler.ir.ops import ForOp, LocalStoreOp

    def depth(op):
        d, block = 0, op.parent
        while block is not None and block.parent is not None and block.parent.parent is not None:
            holder = block.parent.parent
            d += isinstance(holder, ForOp)
            block = holder.parent
        return d

    return [depth(op) for op in parse_module(text).walk() if isinstance(op, LocalStoreOp)]


def _depth(op) -> int:
    """How many ``scf.for`` ops hold ``op``."""
    from tilelab.compiler.ir.ops import ForOp

    d, block = 0, op.parent
    while block is not None and block.parent is not None and block.parent.parent is not None:
        holder = block.parent.parent
        d += isinstance(holder, ForOp)
        block = holder.parent
    return d


def _random_args(rng):
    return lambda: [rng.integers(-99, 99, 1024, dtype=np.int32), np.zeros(1024, np.int32), 4]


def test_loop_invariant_conversion_is_stored_once_before_the_loop(rng):
    """Attention's ``q``: the tile is stored before the loop; only its ``local_load`` runs per iteration."""
    text = _loop_converting("").replace(
        "%lo = arith.constant", f"%v = tt.load %4 : tensor<32x32xi32, {ROW}>\n  %lo = arith.constant"
    )
    out, changed = run_pass(convert_through_shared, text)
    assert changed and _stores_by_depth(out) == [0, 0, 0]  # %p, %r and the hoisted %v
    module = parse_module(out)
    stores = [op for op in module.walk() if op.name == "ttg.local_store"]
    (store_v,) = [op for op in stores if op.operands[1].defining_op.name == "tt.load"]
    readers = [op for op in module.walk() if isinstance(op, LocalLoadOp) and op.operands[0] is store_v.operands[0]]
    assert [_depth(op) for op in readers] == [1]
    assert_same_values(convert_through_shared, text, _random_args(rng), grid=(1,))


def test_negative_conversion_of_a_value_made_in_the_loop_stays_in_the_loop(rng):
    text = _loop_converting(f"%v = tt.load %4 : tensor<32x32xi32, {ROW}>")
    out, _ = run_pass(convert_through_shared, text)
    assert sorted(_stores_by_depth(out)) == [0, 0, 1]
    assert_same_values(convert_through_shared, text, _random_args(rng), grid=(1,))


def test_negative_conversion_inside_a_branch_is_not_hoisted(rng):
    text = _loop_converting("", convert_inside_if=True).replace(
        "%lo = arith.constant", f"%v = tt.load %4 : tensor<32x32xi32, {ROW}>\n  %lo = arith.constant"
    )
    out, _ = run_pass(convert_through_shared, text)
    assert sorted(_stores_by_depth(out)) == [0, 0, 1]
    assert_same_values(convert_through_shared, text, _random_args(rng), grid=(1,))


def test_dot_operand_buffer_follows_the_stored_tiles_order():
    """A tile contiguous along dim 0 (``k`` loaded as ``[D, BN]``) gets a buffer of that order: 16-byte stores."""
    col = blocked([128, 64], [8, 1], [16, 2], [1, 8], [0, 1])
    row = blocked([64, 128], [1, 8], [2, 16], [8, 1], [1, 0])
    assert convert_through_shared.stored_order(col) == (0, 1)
    assert convert_through_shared.stored_order(row) == (1, 0)
    # one element per thread (an unaligned load): the lanes walk the rows, registers step 8 rows down
    single = blocked([128, 32], [1, 1], [1, 32], [8, 1], [1, 0])
    assert convert_through_shared.stored_order(single) == (1, 0)
    assert convert_through_shared.stored_order(blocked([32, 128], [1, 1], [32, 1], [1, 8], [0, 1])) == (0, 1)
    shared = convert_through_shared.mma_operand_shared([128, 64], 2, (0, 1))
    assert shared.params["order"] == (0, 1) and shared.params["vec"] == 8
    # each thread's 8 consecutive elements along dim 0 are one 16-byte store
    assert (
        bank_conflicts(shared, col, 2).per_instruction.size
        < bank_conflicts(convert_through_shared.mma_operand_shared([128, 64], 2), col, 2).per_instruction.size
    )
