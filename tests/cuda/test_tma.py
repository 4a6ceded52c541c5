"""TMA copies of host tensor descriptors' tiles: the pipeliner's choice, the IR's values, the PTX, the GPU.

The structure and PTX tests need no GPU (ptxas where found); the values of the pipelined IR are
checked on the interpreter (which copies boxes as TMA does: zeros out of bounds); the ``gpu``
tests launch against torch with ragged shapes, persistent tiles (a loop around the pipelined one)
and B read K-major.
"""

import numpy as np
import pytest

import tilelab
import tilelab.language as tl
from tilelab.compiler.backends.cuda import find_tool
from tilelab.compiler.frontend.descriptor_args import DescriptorArg
from tilelab.compiler.interpreter import run_kernel
from tilelab.compiler.ir.ops import (
    AsyncCopyGlobalToLocalOp,
    AsyncTMACopyOp,
    AsyncTMAStoreOp,
    ForOp,
    InitBarriersOp,
    InvalBarriersOp,
    LoadOp,
    StoreOp,
    TensorMapOp,
    WaitBarrierOp,
)
from tilelab.compiler.options import CompileOptions
from tilelab.runtime import stages
from tilelab.tools.tensor_descriptor import TensorDescriptor

HAS_PTXAS = find_tool("ptxas") is not None


@tilelab.jit
def _product(a_desc, b_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """This program's tile of C (f32) = A @ B through descriptors of A (M x K) and B (K x N)."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        acc = tl.dot(a_desc.load([pid_m * BM, k * BK]), b_desc.load([k * BK, pid_n * BN]), acc)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@tilelab.jit
def desc_matmul(a_desc, b_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C (f32) = A @ B, A and B host descriptors (A: M x K, B: K x N)."""
    _product(a_desc, b_desc, c_ptr, M, N, K, BM, BN, BK)


@tilelab.jit
def persistent_nt(
    a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SMS: tl.constexpr
):
    """Persistent C = A @ B^T with B given N x K (read K-major, transposed in the dot), C a descriptor."""
    tiles_n = tl.cdiv(N, BN)
    for tile in tl.range(tl.program_id(0), tl.cdiv(M, BM) * tiles_n, SMS):
        om, on = (tile // tiles_n) * BM, (tile % tiles_n) * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            acc = tl.dot(a_desc.load([om, k * BK]), b_desc.load([on, k * BK]).T, acc)
        c_desc.store([om, on], acc.to(c_desc.dtype))


@tilelab.jit
def made_matmul(a, b, c, M, N, K, sam, sbk, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """``desc_matmul`` with the descriptors made in the kernel from runtime strides."""
    a_desc = tl.make_tensor_descriptor(a, [M, K], [sam, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b, [K, N], [sbk, 1], [BK, BN])
    _product(a_desc, b_desc, c, M, N, K, BM, BN, BK)


MADE = {"a": "*f16", "b": "*f16", "c": "*f32", "M": "i32", "N": "i32", "K": "i32", "sam": "i32", "sbk": "i32"}


def _made_matmul_ir(divisibility):
    module = stages.build(made_matmul.fn, MADE, {"BM": 64, "BN": 64, "BK": 64}, divisibility)
    stages.run_passes(module, CompileOptions(target="cuda", arch="sm_90a", num_warps=4), "cuda", snapshots=False)
    return module


def test_descriptors_made_in_the_kernel_use_tma_where_their_strides_are_proven_aligned(rng):
    """Strides divisible by 16 (as a launch specializes them): TMA; of unknown divisibility: cp.async."""
    aligned = _made_matmul_ir({"a": 16, "b": 16, "c": 16, "sam": 16, "sbk": 16})
    assert len(_ops(aligned, TensorMapOp)) == 2 and not _ops(aligned, AsyncCopyGlobalToLocalOp)
    unknown = _made_matmul_ir({"a": 16, "b": 16, "c": 16, "sam": 16})  # b's row stride: not known to be 16-byte
    assert [m.base.name_hint for m in _ops(unknown, TensorMapOp)] == ["a"] and _ops(unknown, AsyncCopyGlobalToLocalOp)
    m, n, k = 100, 72, 150
    a = rng.uniform(-1, 1, (m, 160)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, 80)).astype(np.float16)
    for module in (aligned, unknown):
        c = np.full((m, n), np.nan, np.float32)
        run_kernel(module, (2, 2), [a.ravel(), b.ravel(), c, m, n, k, 160, 80])
        expected = a[:, :k].astype(np.float32) @ b[:, :n].astype(np.float32)
        np.testing.assert_allclose(c, expected, rtol=2e-2, atol=2e-2)


def _parts(name, dtype="*f16"):
    return {f"{name}_base": dtype, f"{name}_shape0": "i32", f"{name}_shape1": "i32", f"{name}_stride0": "i32"}


def _desc_matmul_ir(bm=64, bn=64, bk=64, arch="sm_90a", tma=True, num_stages=3):
    sig = {**_parts("a_desc"), **_parts("b_desc"), "c_ptr": "*f32", "M": "i32", "N": "i32", "K": "i32"}
    consts = {"BM": bm, "BN": bn, "BK": bk, "a_desc": DescriptorArg((bm, bk)), "b_desc": DescriptorArg((bk, bn))}
    consts.update(a_desc_stride1=1, b_desc_stride1=1)
    module = stages.build(desc_matmul.fn, sig, consts, {})
    options = CompileOptions(target="cuda", arch=arch, num_warps=4, num_stages=num_stages, tma=tma)
    stages.run_passes(module, options, "cuda", snapshots=False)
    return module


def _ops(module, kind):
    return [op for op in module.kernel.walk() if isinstance(op, kind)]


def test_descriptor_tiles_are_copied_by_tma_and_waited_on_mbarriers():
    """Both operand tiles: one TMA copy each per stage (prologue 2, loop 1), one map each, no cp.async."""
    module = _desc_matmul_ir()
    loop = next(op for op in module.kernel.walk() if isinstance(op, ForOp))
    assert not _ops(module, AsyncCopyGlobalToLocalOp) and not [op for op in loop.walk() if isinstance(op, LoadOp)]
    assert len(_ops(module, AsyncTMACopyOp)) == 6
    maps = _ops(module, TensorMapOp)
    assert sorted(tuple(m.attrs["box"]) for m in maps) == [(64, 64), (64, 64)]
    assert all(m.parent is module.kernel.body and m.attrs["swizzle"] == 128 for m in maps)
    (init,) = _ops(module, InitBarriersOp)
    assert init.attrs == {"num": 3, "count": 2}  # three stages, two copies arriving on each
    assert isinstance(loop.body.ops[0], WaitBarrierOp) and len(_ops(module, InvalBarriersOp)) == 1
    assert len(loop.body.args) == 1 + 4  # acc, read slot, write slot, phase


@pytest.mark.parametrize(
    "change",
    [{"arch": "sm_80"}, {"arch": "sm_90a", "tma": False}],
    ids=["sm_80", "tma off"],
)
def test_cp_async_stays_where_tma_does_not_apply(change):
    module = _desc_matmul_ir(**change)
    assert not _ops(module, AsyncTMACopyOp) and not _ops(module, TensorMapOp)
    assert _ops(module, AsyncCopyGlobalToLocalOp)


@pytest.mark.parametrize("m, n, k", [(64, 64, 256), (100, 72, 150)])
def test_tma_pipelined_ir_gives_numpy_values(rng, m, n, k):
    """Ragged M, N and K: the boxes at the edges read zeros outside the arrays (row strides padded to 16 bytes)."""
    module = _desc_matmul_ir()
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    ka, nb = -(-k // 8) * 8, -(-n // 8) * 8
    ap, bp = np.zeros((m, ka), np.float16), np.zeros((k, nb), np.float16)
    ap[:, :k], bp[:, :n] = a, b
    c = np.full((m, n), np.nan, np.float32)
    run_kernel(module, (-(-m // 64), -(-n // 64)), [ap.ravel(), m, k, ka, bp.ravel(), k, n, nb, c, m, n, k])
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=2e-2, atol=2e-2)


def test_persistent_tiles_reinitialize_the_mbarriers_per_tile(rng):
    """A loop around the pipelined one: the mbarriers are initialized before and invalidated after each K loop."""
    sig = {**_parts("a_desc"), **_parts("b_desc"), **_parts("c_desc", "*f32"), "M": "i32", "N": "i32", "K": "i32"}
    consts = {"BM": 64, "BN": 64, "BK": 32, "SMS": 3}
    for name, block in (("a_desc", (64, 32)), ("b_desc", (64, 32)), ("c_desc", (64, 64))):
        consts.update({name: DescriptorArg(block), f"{name}_stride1": 1})
    module = stages.build(persistent_nt.fn, sig, consts, {})
    stages.run_passes(module, CompileOptions(target="cuda", arch="sm_90a", num_warps=4), "cuda", snapshots=False)
    outer = next(op for op in module.kernel.body.ops if isinstance(op, ForOp))
    assert any(isinstance(op, InitBarriersOp) for op in outer.body.ops)
    assert any(isinstance(op, InvalBarriersOp) for op in outer.body.ops)
    swizzles = sorted((m.attrs["swizzle"], tuple(m.attrs["box"])) for m in _ops(module, TensorMapOp))
    assert swizzles == [(64, (64, 32))] * 2 + [(128, (64, 32))]  # A, B: 32 f16 a row; C: 64 f32, 2 boxes of 32
    (store,) = _ops(module, AsyncTMAStoreOp)
    assert store.parent is outer.body and not _ops(module, StoreOp)
    m, n, k = 130, 72, 100
    a = rng.uniform(-1, 1, (m, 104)).astype(np.float16)
    b = rng.uniform(-1, 1, (n, 104)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    run_kernel(module, (3,), [a.ravel(), m, k, 104, b.ravel(), n, k, 104, c.ravel(), m, n, n, m, n, k])
    expected = a[:, :k].astype(np.float32) @ b[:, :k].astype(np.float32).T
    np.testing.assert_allclose(c, expected, rtol=2e-2, atol=2e-2)


@pytest.mark.skipif(not HAS_PTXAS, reason="ptxas not found")
def test_tma_ptx_assembles_with_maps_passed_by_value():
    sig = {**_parts("a_desc"), **_parts("b_desc"), "c_ptr": "*f32", "M": "i32", "N": "i32", "K": "i32"}
    consts = {"BM": 128, "BN": 128, "BK": 64, "a_desc": DescriptorArg((128, 64)), "b_desc": DescriptorArg((64, 128))}
    consts.update(a_desc_stride1=1, b_desc_stride1=1)
    ck = tilelab.compile(desc_matmul, sig, consts, target="cuda:sm_90a", num_stages=3, snapshots=False, cache=False)
    ptx = ck.asm["ptx"]
    assert ptx.count(".param .align 64 .b8") == 2 and "cvta.param" in ptx and "local_depot" not in ptx
    assert ptx.count("cp.async.bulk.tensor.2d") == 3 * 3  # A one box, B two (128 columns, 64 a box), 3 stages
    assert "cp.async.cg" not in ptx and ck.metadata["spills"] == 0
    recipes = ck.metadata["tensormaps"]
    assert sorted((r["name"], tuple(r["box"])) for r in recipes) == [("a_desc", (128, 64)), ("b_desc", (64, 64))]
    assert ck.metadata["param_kinds"][-2:] == ["tensormap", "tensormap"]


# --------------------------------------------------------------------------- on the GPU


def _cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch


def _padded(torch, rows, cols, dtype):
    """A rows x cols view of a wider array whose rows are 16-byte multiples, as descriptors need."""
    width = -(-cols // 16) * 16
    return torch.randn((rows, width), device="cuda", dtype=dtype)[:, :cols]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("m, n, k, bm, bn, bk", [(300, 200, 150, 64, 64, 64), (256, 384, 512, 128, 128, 64)])
def test_tma_matmul_on_the_gpu(dtype, m, n, k, bm, bn, bk):
    torch = _cuda()
    dt = getattr(torch, dtype)
    a, b = _padded(torch, m, k, dt), _padded(torch, k, n, dt)
    c = torch.full((m, n), float("nan"), device="cuda")
    desc_matmul[(tilelab.cdiv(m, bm), tilelab.cdiv(n, bn))](
        TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bk, bn]), c, m, n, k,
        bm, bn, bk, num_warps=4, num_stages=3,
    )  # fmt: skip
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=2e-2, atol=5e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k", [(1000, 696, 520), (128, 128, 64)])
def test_tma_persistent_matmul_on_the_gpu(m, n, k):
    torch = _cuda()
    a, b = _padded(torch, m, k, torch.float16), _padded(torch, n, k, torch.float16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    bm, bn, bk, sms = 128, 128, 64, 7  # few programs: each takes many tiles
    persistent_nt[(sms,)](
        TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bn, bk]),
        TensorDescriptor.from_tensor(c, [bm, bn]), m, n, k, bm, bn, bk, sms, num_warps=8, num_stages=4,
    )  # fmt: skip
    torch.testing.assert_close(c.float(), a.float() @ b.float().T, rtol=2e-2, atol=1e-1)


@pytest.mark.gpu
@pytest.mark.parametrize("width", [160, 152])  # row strides of 16 elements (TMA) and of 8 (cp.async)
def test_made_descriptors_on_the_gpu(width):
    torch = _cuda()
    m, n, k = 300, 136, width - 10
    a = torch.randn((m, width), device="cuda", dtype=torch.float16)[:, :k]
    b = torch.randn((k, width), device="cuda", dtype=torch.float16)[:, :n]
    c = torch.full((m, n), float("nan"), device="cuda")
    grid = (tilelab.cdiv(m, 64), tilelab.cdiv(n, 64))
    made_matmul[grid](a, b, c, m, n, k, a.stride(0), b.stride(0), 64, 64, 64, num_warps=4, num_stages=3)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=2e-2, atol=5e-2)


@tilelab.jit
def desc_copy(src_desc, dst_desc, B: tl.constexpr):
    """A tile copy through two host descriptors: a TMA store with no dot in the kernel."""
    pid = tl.program_id(0)
    dst_desc.store([pid * B, 0], src_desc.load([pid * B, 0]))


def test_a_tma_store_alone_aligns_shared_memory_to_the_swizzle_repeat():
    """The swizzled buffer a TMA store reads agrees with the hardware's swizzle only from a 1024-byte base."""
    sig = {**_parts("src_desc", "*f32"), **_parts("dst_desc", "*f32")}
    consts = {"B": 64, "src_desc": DescriptorArg((64, 64)), "dst_desc": DescriptorArg((64, 64))}
    consts.update(src_desc_stride1=1, dst_desc_stride1=1)
    ck = tilelab.compile(desc_copy, sig, consts, target="cuda:sm_90a", snapshots=False, cache=False)
    ptx = ck.asm["ptx"]
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in ptx and "wgmma" not in ptx
    assert ".extern .shared .align 1024" in ptx
