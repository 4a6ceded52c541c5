"""Golden tests of software-pipeline, and of how allocate-shared-memory and insert-barriers treat its rings."""

from __future__ import annotations

import numpy as np
import pytest

from tilelab.compiler.interpreter import run_kernel
from tilelab.compiler.ir import print_module, verify
from tilelab.compiler.ir.ops import (
    AsyncCommitGroupOp,
    AsyncCopyGlobalToLocalOp,
    AsyncWaitOp,
    BarrierOp,
    ForOp,
    LoadOp,
    LocalAllocOp,
    LocalStoreOp,
    MemDescIndexOp,
    i32,
)
from tilelab.compiler.ir.parser import parse_module
from tilelab.compiler.ir.verifier import VerificationError
from tilelab.compiler.options import CompileOptions
from tilelab.compiler.passes import allocate_shared_memory, insert_barriers, software_pipeline

from .support import assert_docstring_example, assert_same_values, canonical, run_pass

B = "#blocked<sizePerThread=[8], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>"
R = "#blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>"
S = "#swizzled_shared<vec=1, perPhase=1, maxPhase=1, order=[0]>"
TS = f"tensor<256xf16, {S}>"


def loop_kernel(body: str, stages: int | None = 3, after: str = "", carried: bool = False) -> str:
    """A kernel with ``scf.for %i = 0 to %n step 256`` around ``body`` (lines), ``%p`` a pointer tile outside.

    With ``carried`` the loop carries ``%q`` (starting at ``%p``) and yields ``%next``.
    """
    hint = f" {{num_stages = {stages}}}" if stages else ""
    head = f"scf.for %i = %c0 to %n step %c256{hint} {{"
    tail = "scf.yield"
    if carried:
        head = f"%r = scf.for %i = %c0 to %n step %c256 iter_args(%q = %p) -> (tensor<256x!ptr<f16>, {B}>){hint} {{"
        tail = f"scf.yield %next : tensor<256x!ptr<f16>, {B}>"
    lines = "\n".join("    " + line.strip() for line in body.strip().splitlines())
    return f"""tt.func @k(%x: !ptr<f16>, %y: !ptr<f16>, %n: i32) {{
  %c0 = arith.constant {{value = 0}} : i32
  %c256 = arith.constant {{value = 256}} : i32
  %p = tt.splat %x : tensor<256x!ptr<f16>, {B}>
  %range = tt.make_range {{start = 0, end = 256}} : tensor<256xi32, {B}>
  {head}
{lines}
    {tail}
  }}
  {after}
  tt.return
}}
"""


LOAD_AT_I = f"""
%s = tt.splat %i : tensor<256xi32, {B}>
%o = arith.add %s, %range : tensor<256xi32, {B}>
%a = tt.addptr %p, %o : tensor<256x!ptr<f16>, {B}>
%v = tt.load %a : tensor<256xf16, {B}>
%buf = ttg.local_alloc : {TS}
ttg.local_store %buf, %v : {TS}
%w = ttg.local_load %buf : tensor<256xf16, {R}>
"""


def ops_of(text: str, cls) -> list:
    return [op for op in parse_module(text).walk() if isinstance(op, cls)]


def test_docstring_example():
    assert_docstring_example(software_pipeline)


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_ring_prologue_wait_and_slots(stages):
    out, changed = run_pass(software_pipeline, loop_kernel(LOAD_AT_I, stages))
    assert changed
    module = parse_module(out)
    (ring,) = [op for op in module.walk() if isinstance(op, LocalAllocOp)]
    assert ring.stages == stages and ring.parent is module.kernel.body
    loop = next(op for op in module.walk() if isinstance(op, ForOp))
    before = module.kernel.body.ops[: module.kernel.body.ops.index(loop)]
    assert sum(isinstance(op, AsyncCommitGroupOp) for op in before) == stages - 1
    assert sum(isinstance(op, AsyncCopyGlobalToLocalOp) for op in before) == stages - 1
    assert isinstance(loop.body.ops[0], AsyncWaitOp) and loop.body.ops[0].num == stages - 2
    assert isinstance(loop.body.ops[1], BarrierOp)
    assert len(loop.results) == 2  # the read and write slots
    after = module.kernel.body.ops[module.kernel.body.ops.index(loop) + 1]
    assert isinstance(after, AsyncWaitOp) and after.num == 0
    assert "tt.load" not in out and "ttg.local_store" not in out


def test_mask_is_kept_and_anded_with_the_bound():
    body = LOAD_AT_I.replace(
        "%v = tt.load %a :",
        f"%lim = tt.splat %n : tensor<256xi32, {B}>\n%m = arith.cmp lt %o, %lim : tensor<256xi1, {B}>\n"
        f"%zero = arith.constant {{value = 0.0}} : tensor<256xf16, {B}>\n%v = tt.load %a, %m, %zero :",
    )
    out, changed = run_pass(software_pipeline, loop_kernel(body, 2))
    assert changed and out.count("arith.and") == 2  # prologue copy and in-loop copy
    copies = ops_of(out, AsyncCopyGlobalToLocalOp)
    assert all(c.mask is not None for c in copies)


def test_num_stages_one_changes_nothing():
    text = loop_kernel(LOAD_AT_I, 1)
    out, changed = run_pass(software_pipeline, text)
    assert not changed and out == canonical(text)


def test_module_default_applies_without_a_loop_hint():
    module = parse_module(loop_kernel(LOAD_AT_I, None))
    module.options = CompileOptions(target="cuda", num_stages=1)
    assert not software_pipeline.run(module)
    module.options = CompileOptions(target="cuda", num_stages=4)
    assert software_pipeline.run(module)
    verify(module)
    assert [op.stages for op in module.walk() if isinstance(op, LocalAllocOp)] == [4]


def test_pointer_advanced_by_an_invariant_step_is_pipelined():
    body = f"""
    %v = tt.load %q : tensor<256xf16, {B}>
    %buf = ttg.local_alloc : {TS}
    ttg.local_store %buf, %v : {TS}
    %w = ttg.local_load %buf : tensor<256xf16, {R}>
    %next = tt.addptr %q, %range : tensor<256x!ptr<f16>, {B}>
    """
    out, changed = run_pass(software_pipeline, loop_kernel(body, 3, carried=True))
    assert changed and "tt.load" not in out
    # stage 1 of the prologue and the in-loop copy read q + k * step: step times 1, then times 2
    assert out.count("arith.mul") == 2 and out.count("tt.addptr") == 3
    assert len(ops_of(out, AsyncCopyGlobalToLocalOp)) == 3


def test_negative_loop_carried_pointer_is_left_alone():
    """The pointer advances by a step computed in the loop: its later values are not cloned."""
    body = f"""
    %v = tt.load %q : tensor<256xf16, {B}>
    %buf = ttg.local_alloc : {TS}
    ttg.local_store %buf, %v : {TS}
    %w = ttg.local_load %buf : tensor<256xf16, {R}>
    %step = tt.splat %c256 : tensor<256xi32, {B}>
    %next = tt.addptr %q, %step : tensor<256x!ptr<f16>, {B}>
    """
    text = loop_kernel(body, 3, carried=True)
    out, changed = run_pass(software_pipeline, text)
    assert not changed and out == canonical(text)


@pytest.mark.parametrize(
    "edit",
    [
        # the loaded tile is also used in registers
        ("%w = ttg.local_load %buf", f"tt.store %a, %v : tensor<256x!ptr<f16>, {B}>\n%w = ttg.local_load %buf"),
        # masked-off lanes must read 1.0, which a zero-filling copy cannot give
        (
            "%v = tt.load %a :",
            f"%t = arith.constant {{value = true}} : tensor<256xi1, {B}>\n"
            f"%one = arith.constant {{value = 1.0}} : tensor<256xf16, {B}>\n%v = tt.load %a, %t, %one :",
        ),
        # the buffer is read before the store: the previous iteration's tile
        ("ttg.local_store %buf, %v", f"%u = ttg.local_load %buf : tensor<256xf16, {R}>\nttg.local_store %buf, %v"),
    ],
)
def test_negative_loads_that_do_not_match(edit):
    text = loop_kernel(LOAD_AT_I.replace(*edit), 3)
    out, changed = run_pass(software_pipeline, text)
    assert not changed and out == canonical(text)


def test_negative_loop_with_runtime_step():
    text = loop_kernel(LOAD_AT_I, 3).replace("step %c256", "step %n")
    assert not run_pass(software_pipeline, text)[1]


def _lowered_shape(text: str):
    module = parse_module(text)
    for p in (software_pipeline, allocate_shared_memory, insert_barriers):
        p.run(module)
    verify(module)
    return module


def test_ring_gets_all_its_stages_and_outlives_the_loop():
    epilogue = f"%e = ttg.local_alloc : {TS}\n  ttg.local_store %e, %z : {TS}"
    text = loop_kernel(LOAD_AT_I, 3, after=f"%z = arith.constant {{value = 0.0}} : tensor<256xf16, {B}>\n  {epilogue}")
    module = _lowered_shape(text)
    ring, epi = [op for op in module.walk() if isinstance(op, LocalAllocOp)]
    assert ring.nbytes == 3 * 512 and ring.attrs["offset"] == 0
    assert epi.attrs["offset"] == 0 and module.attrs["shared_bytes"] == 3 * 512  # reuses the ring's bytes


def test_barriers_one_per_iteration_and_one_before_reusing_the_ring():
    epilogue = f"%e = ttg.local_alloc : {TS}\n  ttg.local_store %e, %z : {TS}"
    text = loop_kernel(LOAD_AT_I, 3, after=f"%z = arith.constant {{value = 0.0}} : tensor<256xf16, {B}>\n  {epilogue}")
    module = _lowered_shape(text)
    loop = next(op for op in module.walk() if isinstance(op, ForOp))
    assert sum(isinstance(op, BarrierOp) for op in loop.walk()) == 1
    body = module.kernel.body.ops
    store = next(op for op in body if isinstance(op, LocalStoreOp))
    assert isinstance(body[body.index(store) - 1], BarrierOp)  # the epilogue writes over the ring's bytes
    assert body.index(store) > body.index(loop) + 1


def test_nested_loop_waits_for_the_previous_pass_over_the_ring():
    inner = loop_kernel(LOAD_AT_I, 3).split("\n")
    start = next(i for i, line in enumerate(inner) if "scf.for" in line)
    end = max(i for i, line in enumerate(inner) if line == "  }")
    nested = inner[:start] + ["  scf.for %j = %c0 to %n step %c256 {"]
    nested += ["  " + line for line in inner[start : end + 1]] + ["    scf.yield", "  }"] + inner[end + 1 :]
    out, changed = run_pass(software_pipeline, "\n".join(nested))
    assert changed
    outer = next(op for op in parse_module(out).walk() if isinstance(op, ForOp))
    ring = next(op for op in outer.body.ops if isinstance(op, LocalAllocOp))
    assert isinstance(outer.body.ops[outer.body.ops.index(ring) + 1], BarrierOp)


def test_new_ops_round_trip_and_verify():
    out, _ = run_pass(software_pipeline, loop_kernel(LOAD_AT_I, 3))
    assert print_module(parse_module(out), locs=False) == out
    assert len(ops_of(out, MemDescIndexOp)) == 2 + 2  # prologue stages, then read and write views


def test_verifier_rejects_indexing_a_plain_buffer():
    text = f"""tt.func @k() {{
  %0 = ttg.local_alloc : {TS}
  %1 = arith.constant {{value = 0}} : i32
  %2 = ttg.memdesc_index %0, %1 : {TS}
  tt.return
}}
"""
    with pytest.raises(VerificationError, match="not a ring"):
        verify(parse_module(text))


def test_verifier_rejects_copying_other_elements():
    text = f"""tt.func @k(%x: !ptr<f32>) {{
  %0 = ttg.local_alloc : {TS}
  %1 = tt.splat %x : tensor<256x!ptr<f32>, {B}>
  ttg.async_copy_global_to_local %0, %1 : {TS}
  tt.return
}}
"""
    with pytest.raises(VerificationError, match="do not point"):
        verify(parse_module(text))


@pytest.mark.parametrize("stages, n", [(2, 1024), (3, 1280), (4, 512), (3, 256)])
def test_values_are_preserved_on_the_interpreter(stages, n, rng):
    """A pipelined copy loop (rings, slots, masked prologue and tail) writes what the plain loop writes."""
    import numpy as np

    store = f"""
    %yo = tt.splat %y : tensor<256x!ptr<f16>, {R}>
    %so = tt.splat %i : tensor<256xi32, {R}>
    %ro = tt.make_range {{start = 0, end = 256}} : tensor<256xi32, {R}>
    %oo = arith.add %so, %ro : tensor<256xi32, {R}>
    %yp = tt.addptr %yo, %oo : tensor<256x!ptr<f16>, {R}>
    tt.store %yp, %w : tensor<256x!ptr<f16>, {R}>
    """

    def args():
        x = rng.standard_normal(n).astype(np.float16)
        return [x, np.full(n, np.nan, np.float16), n]

    assert_same_values(software_pipeline, loop_kernel(LOAD_AT_I + store, stages), args, grid=(1,))


# --------------------------------------------------------------------------- small loads on a dot's path


def shifted_exp_matmul(bm=64, bn=64, bk=64, num_warps=4, num_stages=3):
    """``shifted_exp_matmul_kernel`` after the sm_90a passes (M, N, K divisible by 16)."""
    from tests.support.gpu_kernels import SHIFTED, shifted_exp_matmul_kernel
    from tilelab.runtime import stages

    module = stages.build(
        shifted_exp_matmul_kernel.fn,
        SHIFTED,
        {"BM": bm, "BN": bn, "BK": bk, "A_COLUMNS": False},
        dict.fromkeys(SHIFTED, 16),
    )
    options = CompileOptions(target="cuda", arch="sm_90a", num_warps=num_warps, num_stages=num_stages)
    stages.run_passes(module, options, "cuda", snapshots=False)
    return module


def test_a_statistic_feeding_a_dot_is_copied_ahead_with_one_owner_per_element():
    """``s = load(s_ptr + kk)`` then ``exp2(a - s[None, :])`` as a dot operand: ``s`` gets its own ring.

    Its copy is in the default tile layout (each element in one register of one thread; the
    slice of the dot's operand layout it is read in holds every element 16 times per warp),
    and the loop has no global load left: the statistic arrives with the operands, iterations ahead.
    """
    module = shifted_exp_matmul()
    loop = next(op for op in module.walk() if isinstance(op, ForOp))
    assert not [op for op in loop.walk() if isinstance(op, LoadOp)]
    copies = [op for op in loop.body.ops if isinstance(op, AsyncCopyGlobalToLocalOp)]
    (stat,) = [c for c in copies if c.view.type.element.name == "f32"]
    layout = stat.ptrs.type.layout
    owners = layout.apply(register=list(range(layout.in_size("register"))), lane=0, warp=0)
    assert len({tuple(c) for c in owners}) == layout.in_size("register")  # no register holds a copy
    rings = [op for op in module.walk() if isinstance(op, LocalAllocOp) and op.attrs.get("stages") == 3]
    assert len(rings) == 3


@pytest.mark.parametrize("m, n, k", [(64, 64, 256), (100, 72, 150)])
def test_a_statistic_copied_ahead_gives_the_same_values(rng, m, n, k):
    """The pipelined IR on the interpreter against numpy, with ragged sizes (masked rows, columns, K tail)."""
    from tests.support.gpu_kernels import shifted_exp_matmul_reference

    module = shifted_exp_matmul()
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    s = rng.uniform(-1, 1, k).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    run_kernel(module, (-(-m // 64), -(-n // 64)), [a, s, b, c, m, n, k])
    np.testing.assert_allclose(c, shifted_exp_matmul_reference(a, s, b), rtol=2e-2, atol=2e-2)


def test_a_statistic_is_left_alone_when_the_loop_is_not_pipelined():
    """``stage_loads_feeding_dots`` then ``unstage`` (what ``run`` does when no stage count fits) gives the IR back."""
    from tests.support.gpu_kernels import SHIFTED, shifted_exp_matmul_kernel
    from tilelab.runtime import stages

    module = stages.build(
        shifted_exp_matmul_kernel.fn,
        SHIFTED,
        {"BM": 64, "BN": 64, "BK": 64, "A_COLUMNS": False},
        dict.fromkeys(SHIFTED, 16),
    )
    options = CompileOptions(target="cuda", arch="sm_90a", num_warps=4, num_stages=1)
    stages.run_passes(module, options, "cuda", snapshots=False)  # num_stages 1: the pipeliner leaves it
    loop = next(op for op in module.walk() if isinstance(op, ForOp))
    before = print_module(module)
    staged = software_pipeline.stage_loads_feeding_dots(loop, 4, 32)
    assert len(staged) == 2  # a and s: both reach the dot in registers
    assert all(not st.load.result.has_uses() for st in staged)
    software_pipeline.unstage(module.funcs[0], staged)
    verify(module)
    assert print_module(module) == before


def test_a_staged_tile_is_copied_along_its_contiguous_dim(rng):
    """A column-major A feeding the dot through registers is copied with its threads down the columns."""
    from tests.support.gpu_kernels import SHIFTED, shifted_exp_matmul_kernel, shifted_exp_matmul_reference
    from tilelab.runtime import stages

    consts = {"BM": 64, "BN": 64, "BK": 64, "A_COLUMNS": True}
    module = stages.build(shifted_exp_matmul_kernel.fn, SHIFTED, consts, dict.fromkeys(SHIFTED, 16))
    stages.run_passes(module, CompileOptions(target="cuda", arch="sm_90a", num_warps=4), "cuda", snapshots=False)
    loop = next(op for op in module.walk() if isinstance(op, ForOp))
    (a_copy,) = [
        c
        for c in loop.body.ops
        if isinstance(c, AsyncCopyGlobalToLocalOp)
        and c.ptrs.type.shape == (64, 64)
        and c.view.type.element.name == "f16"
        and c.ptrs.type.layout.params.get("order") == (0, 1)
    ]
    assert a_copy.ptrs.type.layout.params["size_per_thread"] == (8, 1)  # 16 bytes down a column
    m, n, k = 96, 64, 160
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    s = rng.uniform(-1, 1, k).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    run_kernel(module, (2, 1), [np.asfortranarray(a).ravel(order="F"), s, b, c, m, n, k])
    np.testing.assert_allclose(c, shifted_exp_matmul_reference(a, s, b), rtol=2e-2, atol=2e-2)


# --------------------------------------------------------------------------- gathers: addresses from an index load


def gather_kernel(store_in_loop: bool = False) -> str:
    """``acc += x[idx[i + range]]`` for ``i`` in steps of 256, through a shared buffer (``y``: the sum)."""
    store = f"""
    %yi = tt.splat %y : tensor<256x!ptr<f16>, {R}>
    %ri = tt.make_range {{start = 0, end = 256}} : tensor<256xi32, {R}>
    %pi = tt.addptr %yi, %ri : tensor<256x!ptr<f16>, {R}>
    tt.store %pi, %w : tensor<256x!ptr<f16>, {R}>"""
    return f"""tt.func @k(%x: !ptr<f16>, %idx: !ptr<i32>, %y: !ptr<f16>, %n: i32) {{
  %c0 = arith.constant {{value = 0}} : i32
  %c256 = arith.constant {{value = 256}} : i32
  %p = tt.splat %x : tensor<256x!ptr<f16>, {B}>
  %ip = tt.splat %idx : tensor<256x!ptr<i32>, {B}>
  %range = tt.make_range {{start = 0, end = 256}} : tensor<256xi32, {B}>
  %zero = arith.constant {{value = 0.0}} : tensor<256xf16, {R}>
  %sum = scf.for %i = %c0 to %n step %c256 iter_args(%acc = %zero) -> (tensor<256xf16, {R}>) {{num_stages = 3}} {{
    %s = tt.splat %i : tensor<256xi32, {B}>
    %o = arith.add %s, %range : tensor<256xi32, {B}>
    %ia = tt.addptr %ip, %o : tensor<256x!ptr<i32>, {B}>
    %g = tt.load %ia : tensor<256xi32, {B}>
    %a = tt.addptr %p, %g : tensor<256x!ptr<f16>, {B}>
    %v = tt.load %a : tensor<256xf16, {B}>
    %buf = ttg.local_alloc : {TS}
    ttg.local_store %buf, %v : {TS}
    %w = ttg.local_load %buf : tensor<256xf16, {R}>{store if store_in_loop else ""}
    %next = arith.add %acc, %w : tensor<256xf16, {R}>
    scf.yield %next : tensor<256xf16, {R}>
  }}
  %ys = tt.splat %y : tensor<256x!ptr<f16>, {R}>
  %rr = tt.make_range {{start = 0, end = 256}} : tensor<256xi32, {R}>
  %yp = tt.addptr %ys, %rr : tensor<256x!ptr<f16>, {R}>
  tt.store %yp, %sum : tensor<256x!ptr<f16>, {R}>
  tt.return
}}
"""


def test_a_gather_is_copied_ahead_with_its_indices_loaded_one_iteration_earlier():
    out, changed = run_pass(software_pipeline, gather_kernel())
    assert changed
    loop = next(op for op in parse_module(out).walk() if isinstance(op, ForOp))
    copies = ops_of(out, AsyncCopyGlobalToLocalOp)
    assert len(copies) == 3  # iterations 0 and 1 before the loop, i + 2 in it
    index_loads = [op for op in parse_module(out).walk() if isinstance(op, LoadOp)]
    # before the loop: the indices of iterations 0, 1 (for their copies) and 2 (carried); in it: of i + 3
    assert len(index_loads) == 4 and all(op.result.type.element == i32 for op in index_loads)
    assert i32 in [a.type.element for a in loop.body.args[1:] if a.type.is_tensor]  # the indices, carried


@pytest.mark.parametrize("stages_n", [256, 512, 1024, 1280])
def test_a_pipelined_gather_gives_the_same_values(stages_n, rng):
    n, m = stages_n, 3000

    def args():
        x = rng.standard_normal(m).astype(np.float16)
        idx = rng.integers(0, m, n).astype(np.int32)
        return [x, idx, np.full(256, np.nan, np.float16), n]

    assert_same_values(software_pipeline, gather_kernel(), args, grid=(1,))


def test_negative_a_gather_in_a_loop_that_writes_global_memory_is_left_alone():
    """A store in the loop might write the index table a later iteration reads: no index load goes ahead."""
    out, changed = run_pass(software_pipeline, gather_kernel(store_in_loop=True))
    assert not changed and not ops_of(out, AsyncCopyGlobalToLocalOp)
