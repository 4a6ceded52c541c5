"""The CUDA pass pipeline on kernels in Triton users' spelling (``benchmarks/corpus``), no GPU needed.

Each test runs the frontend and the sm_90a passes on a corpus kernel, specialized as a Triton launch
would specialize it (pointers and multiples of 16 divisible by 16), and checks what the pipeline
made: the shared-memory budget, wgmma for fp8, no per-iteration trip through shared memory in
attention, matmul and attention loops that overlap their wgmma with the next copies.
"""

from __future__ import annotations

import numpy as np
import pytest

import tilelab.language as tl
from benchmarks.corpus import kernels
from tilelab.compiler.interpreter import run_kernel
from tilelab.compiler.ir.ops import (
    AsyncCopyGlobalToLocalOp,
    AsyncWaitOp,
    BarrierOp,
    ConvertLayoutOp,
    FenceAsyncSharedOp,
    ForOp,
    LoadOp,
    LocalAllocOp,
    LocalStoreOp,
    MemDescTransOp,
    WarpGroupDotOp,
    WarpGroupDotWaitOp,
)
from tilelab.compiler.options import CompileOptions
from tilelab.compiler.passes.allocate_shared_memory import shared_memory_limit
from tilelab.errors import OutOfResources
from tilelab.runtime import stages

MM_ARGS = ["M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn"]


def compile_passes(fn, signature, constants, num_warps=8, num_stages=3):
    """The tile IR of ``fn`` after the CUDA passes for sm_90a (ints: divisible by 16, strides of 1 constant)."""
    sig = {k: v for k, v in signature.items() if v != 1}
    consts = {**constants, **{k: 1 for k, v in signature.items() if v == 1}}
    module = stages.build(fn, sig, consts, {k: 16 for k in sig})
    options = CompileOptions(target="cuda", arch="sm_90a", num_warps=num_warps, num_stages=num_stages)
    stages.run_passes(module, options, "cuda", snapshots=False)
    return module


def matmul(dtype="fp16", bm=128, bn=128, bk=64, k_major_b=False, **kw):
    sig = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": "*fp32", **{n: "i32" for n in MM_ARGS}}
    sig["stride_ak"] = sig["stride_cn"] = 1
    sig["stride_bk" if k_major_b else "stride_bn"] = 1
    meta = {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8, "HINTS": False}
    return compile_passes(kernels.matmul_kernel, sig, meta, **kw)


def attention(bm=128, bn=64, d=128, **kw):
    sig = {n: "*fp16" for n in ("Q", "K", "V", "Out")} | {"sm_scale": "fp32"}
    sig |= {n: "i32" for n in ("stride_qz", "stride_qm", "stride_kz", "stride_kn", "stride_vz", "stride_vn")}
    sig |= {"stride_oz": "i32", "stride_om": "i32", "N_CTX": "i32"}
    meta = {"HEAD_DIM": d, "BLOCK_M": bm, "BLOCK_N": bn, "CAUSAL": False}
    return compile_passes(kernels.attention_fwd_kernel, sig, meta, **kw)


def attention_bwd(d=128, m1=64, n1=128, m2=128, n2=64, causal=False, **kw):
    sig = {n: "*fp16" for n in ("Q", "K", "V", "DO", "DQ", "DK", "DV")} | {"LSE": "*fp32", "Delta": "*fp32"}
    sig |= {"sm_scale": "fp32", "stride_z": "i32", "stride_tok": "i32", "N_CTX": "i32"}
    meta = {"HEAD_DIM": d, "BLOCK_M1": m1, "BLOCK_N1": n1, "BLOCK_M2": m2, "BLOCK_N2": n2, "CAUSAL": causal}
    return compile_passes(kernels.attention_bwd_kernel, sig, meta, **kw)


def loop_of(module) -> ForOp:
    return next(op for op in module.walk() if isinstance(op, ForOp))


def test_tutorial_matmul_copies_both_operands_asynchronously():
    # (pid_m * BM + arange) % M with 16 | M keeps 16-element runs: both tiles go through cp.async rings
    loop = loop_of(matmul())
    copies = [op for op in loop.body.ops if isinstance(op, AsyncCopyGlobalToLocalOp)]
    assert len(copies) == 2


def test_matmul_wgmma_overlaps_the_next_copies():
    module = matmul()
    body = loop_of(module).body.ops
    dot = next(op for op in body if isinstance(op, WarpGroupDotOp))
    assert dot.attrs["pendings"] == 1
    after = body[body.index(dot) + 1 :]
    assert isinstance(after[0], BarrierOp)  # every warpgroup's previous wgmma done: its slot is free
    assert any(isinstance(op, AsyncCopyGlobalToLocalOp) for op in after)
    waits = [op for op in module.walk() if isinstance(op, WarpGroupDotWaitOp)]
    assert len(waits) == 1 and waits[0].attrs["pendings"] == 0


def test_attention_loop_has_no_layout_round_trip_and_q_is_stored_once():
    module = attention()
    loop = loop_of(module)
    stores = [op for op in loop.walk() if isinstance(op, LocalStoreOp)]
    assert not stores  # p, the A operand of the second wgmma, stays in registers; q is stored before the loop
    first, second = [op for op in loop.body.ops if isinstance(op, WarpGroupDotOp)]
    assert not first.a_in_registers and second.a_in_registers
    assert not any(isinstance(op, ConvertLayoutOp) for op in loop.walk())
    assert module.attrs["shared_bytes"] <= shared_memory_limit("sm_90a")


def ring_stages(module) -> set[int]:
    return {op.attrs["stages"] for op in module.walk() if isinstance(op, LocalAllocOp) and op.attrs.get("stages")}


def test_a_config_too_big_for_four_stages_gets_three():
    # 128x128 tiles of k and v at d 128, q 32 KiB: four stages would need 288 KiB of shared memory,
    # three 224 KiB (p, in registers, needs none)
    module = attention(bm=128, bn=128, num_stages=4)
    assert ring_stages(module) == {3}
    assert module.attrs["shared_bytes"] <= shared_memory_limit("sm_90a")
    assert ring_stages(attention(bm=128, bn=128)) == {3}


def test_attention_second_wgmma_runs_into_the_next_iteration():
    """``p @ v`` is left in flight (``pendings = 1``); the next iteration's first dot waits for it.

    The carried accumulator is read through a wait right after ``q @ k``; the copies into the slot
    the previous iteration read come after ``p @ v``, behind a barrier; a wait after the loop.
    """
    module = attention()
    loop = loop_of(module)
    body = loop.body.ops
    first, second = [op for op in body if isinstance(op, WarpGroupDotOp)]
    assert first.attrs.get("pendings", 0) == 0 and second.attrs["pendings"] == 1
    wait = body[body.index(first) + 1]
    assert isinstance(wait, WarpGroupDotWaitOp) and wait.operands[0] is loop.body.args[2]  # acc
    assert loop.body.args[2].users == [wait]
    after = body[body.index(second) + 1 :]
    assert isinstance(after[0], BarrierOp)
    assert not any(isinstance(op, AsyncCopyGlobalToLocalOp) for op in body[: body.index(second)])
    waits = [op for op in module.walk() if isinstance(op, WarpGroupDotWaitOp)]
    assert len(waits) == 2 and waits[1].operands[0] is loop.results[1]
    # the copies landed, then the one barrier: q @ k needs no barrier of its own, and no proxy fence
    # (the loop stores nothing from registers: hoist-fences put the fence before the loop)
    assert [type(op) for op in body[:2]] == [AsyncWaitOp, BarrierOp]
    assert not any(isinstance(op, BarrierOp) for op in body[2 : body.index(first)])
    assert not any(isinstance(op, FenceAsyncSharedOp) for op in loop.walk())
    assert isinstance(loop.parent.ops[loop.parent.ops.index(loop) - 1], FenceAsyncSharedOp)


def test_a_config_that_cannot_fit_raises_out_of_resources():
    # a 256x256 f32 accumulator moved through shared memory for its store: 256 KiB in any case
    with pytest.raises(OutOfResources) as err:
        matmul(bm=256, bn=256, bk=64, num_stages=1)
    assert err.value.limit == 232448 and err.value.required > err.value.limit
    assert "shared memory" in str(err.value) and "Hardware limit: 232448" in str(err.value)


def test_fp8_dot_takes_wgmma_with_k_major_b_and_carried_pointers_in_the_load_layout():
    module = matmul("fp8e4nv", bk=128, k_major_b=True)
    loop = loop_of(module)
    assert any(isinstance(op, WarpGroupDotOp) for op in loop.walk())
    assert not any(isinstance(op, ConvertLayoutOp) for op in loop.walk())  # b_ptrs += ... moved to the load's layout
    copies = [op for op in loop.body.ops if isinstance(op, AsyncCopyGlobalToLocalOp)]
    assert len(copies) == 2


def test_shared_memory_limits_by_architecture():
    assert shared_memory_limit("sm_90a") == 232448 and shared_memory_limit("sm_80") == 166912
    assert shared_memory_limit("sm_86") == 101376 and shared_memory_limit(None) is None


def test_negative_attention_with_p_in_shared_memory_waits_for_each_dot():
    """Warpgroups side by side split p's columns: p goes through a buffer the next iteration stores
    again, so ``p @ v`` must be done before the loop moves on (no dot left in flight)."""
    module = attention(bm=64, bn=64, d=64, num_warps=8)
    loop = loop_of(module)
    first, second = [op for op in loop.body.ops if isinstance(op, WarpGroupDotOp)]
    assert not second.a_in_registers
    assert second.attrs.get("pendings", 0) == 0
    assert not any(isinstance(op, WarpGroupDotWaitOp) for op in module.walk())


def test_attention_bwd_tiles_read_plain_and_transposed_are_stored_once_and_copied_asynchronously():
    """``qT`` and ``tl.trans(qT)`` (``do`` and ``tl.trans(do)``; ``kT``, ``tl.trans(kT)``) share one ring slot.

    The transposed reads go through ``ttg.memdesc_trans`` views of the buffer the plain read uses, so
    every f16 tile the loops load is copied with ``cp.async`` (its only user is one store), and no
    f16 tile is stored from registers in either loop (before: four stores, four barriers a loop).
    The dk/dv loop's ``lse`` and ``delta``, which ``p`` and ``ds`` are computed from, are copied
    ahead too (``stage_loads_feeding_dots``): no global load is left in that loop.
    """
    module = attention_bwd()
    loops = [op for op in module.walk() if isinstance(op, ForOp)]
    assert len(loops) == 2
    for loop, transposed, statistics in zip(loops, (2, 1), (2, 0)):
        assert not [op for op in loop.walk() if isinstance(op, LoadOp) and op.result.type.element.name == "f16"]
        copies = [op for op in loop.walk() if isinstance(op, AsyncCopyGlobalToLocalOp)]
        assert len([c for c in copies if c.view.type.element.name == "f16"]) == 2
        assert len([c for c in copies if c.view.type.element.name == "f32"]) == statistics
        views = [op for op in loop.walk() if isinstance(op, MemDescTransOp)]
        assert len(views) == transposed
        stores = [op for op in loop.walk() if isinstance(op, LocalStoreOp) and op.value.type.element.name == "f16"]
        assert not stores
    assert not [op for op in loops[0].walk() if isinstance(op, LoadOp)]
    assert module.attrs["shared_bytes"] <= shared_memory_limit("sm_90a")


def attention_bwd_reference(q, k, v, do, scale, causal):
    """lse, delta and the gradients dq, dk, dv of softmax(q k^T * scale) v, in float64."""
    q, k, v, do = (x.astype(np.float64) for x in (q, k, v, do))
    s = q @ k.transpose(0, 2, 1) * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape[1:], bool)), s, -np.inf)
    lse = np.log(np.exp(s - s.max(-1, keepdims=True)).sum(-1)) + s.max(-1)
    p = np.exp(s - lse[..., None])
    o = p @ v
    delta = (o * do).sum(-1)
    ds = p * (do @ v.transpose(0, 2, 1) - delta[..., None])
    return lse, delta, ds @ k * scale, ds.transpose(0, 2, 1) @ q * scale, p.transpose(0, 2, 1) @ do


@pytest.mark.parametrize("causal", [False, True])
def test_attention_bwd_after_the_cuda_passes_computes_the_gradients(rng, causal):
    """The sm_90a pipeline's IR (rings, ``memdesc_trans`` views, wgmma) run on the interpreter, against numpy."""
    bh, s, d = 2, 128, 64
    module = attention_bwd(d=d, m1=32, n1=64, m2=64, n2=32, causal=causal, num_warps=4)
    assert any(isinstance(op, MemDescTransOp) for op in module.walk())
    q, k, v, do = (rng.standard_normal((bh, s, d)).astype(np.float16) for _ in range(4))
    scale = 1 / np.sqrt(d)
    lse, delta, *want = attention_bwd_reference(q, k, v, do, scale, causal)
    grads = [np.full((bh, s, d), np.nan, np.float16) for _ in range(3)]
    f32 = [lse.astype(np.float32), delta.astype(np.float32)]
    run_kernel(module, (s // 64, bh), [q, k, v, do, *grads, *f32, np.float32(scale), s * d, d, s])
    for name, got, ref in zip(("dq", "dk", "dv"), grads, want):
        err = np.abs(got.astype(np.float64) - ref).max() / np.abs(ref).max()
        assert err < 1e-2, (name, err)


def attention_trans_k_kernel(
    Q, K, V, Out, sm_scale, stride_m, N_CTX, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr
):
    """The forward loop as many users spell it: ``k`` loaded row by row like ``v``, ``tl.dot(q, tl.trans(k))``."""
    off = tl.program_id(1).to(tl.int64) * N_CTX * stride_m
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + off + offs_m[:, None] * stride_m + offs_d[None, :], mask=offs_m[:, None] < N_CTX, other=0.0)
    m_i = tl.full([BM], float("-inf"), tl.float32)
    l_i = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    for start_n in range(0, N_CTX, BN):
        cols = start_n + offs_n
        k = tl.load(K + off + cols[:, None] * stride_m + offs_d[None, :], mask=cols[:, None] < N_CTX, other=0.0)
        qk = tl.where(cols[None, :] < N_CTX, tl.dot(q, tl.trans(k)) * sm_scale, -1.0e6)
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + off + cols[:, None] * stride_m + offs_d[None, :], mask=cols[:, None] < N_CTX, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_ij
    out = Out + off + offs_m[:, None] * stride_m + offs_d[None, :]
    tl.store(out, (acc / l_i[:, None]).to(tl.float16), mask=offs_m[:, None] < N_CTX)


def test_attention_with_k_transposed_in_the_dot_copies_k_asynchronously_too():
    """``tl.dot(q, tl.trans(k))``: ``k`` is stored as loaded and read through a ``memdesc_trans`` view.

    Before the view, the transposed operand was stored from registers in every iteration (two
    stores, only ``v`` copied with ``cp.async``).
    """
    sig = {n: "*fp16" for n in ("Q", "K", "V", "Out")} | {"sm_scale": "fp32", "stride_m": "i32", "N_CTX": "i32"}
    module = compile_passes(attention_trans_k_kernel, sig, {"D": 64, "BM": 128, "BN": 64})
    loop = loop_of(module)
    assert len([op for op in loop.walk() if isinstance(op, AsyncCopyGlobalToLocalOp)]) == 2
    assert len([op for op in loop.walk() if isinstance(op, MemDescTransOp)]) == 1
    assert not [op for op in loop.walk() if isinstance(op, LocalStoreOp)]
