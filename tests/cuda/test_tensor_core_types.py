"""f32 dots in tf32 and int8 dots into int32 on tensor cores (``wgmma`` on Hopper, else ``mma.sync``).

Before, these ``tl.dot``s ran on the FMA fallback: a few percent of the tensor cores' rate (tf32 is
what ``tl.dot`` of f32 tiles asks for by default). The kernels are written as Triton users write them:
runtime strides, a masked K tail, pointers advanced with ``+=``, tensors straight from torch.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tilelab
import tilelab.language as tl
from tilelab.compiler.backends.cuda import find_tool
from tilelab.compiler.interpreter import run_kernel
from tilelab.compiler.ir.ops import DotOp, WarpGroupDotOp

needs_ptxas = pytest.mark.skipif(find_tool("ptxas") is None, reason="ptxas not found")


@tilelab.jit
def tc_matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, ACC: tl.constexpr, PRECISION: tl.constexpr,
):  # fmt: skip
    """``a @ b`` accumulated in ``ACC`` (f32 for f32 tiles, i32 for int8), the tutorial's way."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = (pid_m * BM + tl.arange(0, BM)) % M
    rn = (pid_n * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=ACC)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0)
        acc += tl.dot(a, b, input_precision=PRECISION)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    cm = pid_m * BM + tl.arange(0, BM)
    cn = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn, acc, mask=(cm[:, None] < M) & (cn[None, :] < N))


SIG = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"}
SIG.update({name: "i32" for name in ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")})
#: row-major tensors, as a launch over contiguous torch tensors specializes them (unit strides are constants)
UNIT = {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1}


@pytest.fixture(autouse=True)
def wgmma_on(monkeypatch, tmp_path):
    monkeypatch.setenv("TILELAB_CUDA_WGMMA", "1")
    monkeypatch.setenv("TILELAB_CACHE_DIR", str(tmp_path))


def compile_f32(bm, bn, bk, num_warps, num_stages, precision="tf32", arch="sm_90a"):
    consts = {"BM": bm, "BN": bn, "BK": bk, "ACC": tl.float32, "PRECISION": precision, **UNIT}
    div = {name: 16 for name in SIG}
    return tilelab.compile(
        tc_matmul_kernel, SIG, consts, target=f"cuda:{arch}", num_warps=num_warps, num_stages=num_stages,
        divisibility=div, cache=False,
    )  # fmt: skip


def dots(ck):
    return [op for op in ck.module.walk() if isinstance(op, (DotOp, WarpGroupDotOp))]


@needs_ptxas
@pytest.mark.parametrize("bm, bn, bk, num_warps", [(64, 64, 32, 4), (128, 128, 32, 8), (128, 256, 32, 8)])
def test_an_f32_dot_is_a_tf32_wgmma_with_b_stored_k_major(bm, bn, bk, num_warps):
    """wgmma has no transpose for 32-bit types: B (N-contiguous in memory) goes to a K-major buffer."""
    ck = compile_f32(bm, bn, bk, num_warps, num_stages=3)
    (dot,) = dots(ck)
    assert isinstance(dot, WarpGroupDotOp)
    b = dot.operands[1].type.layout.params
    assert b["kind"] == "nvmma_shared" and b["order"] == (0, 1) and "elemBytes=4" in str(dot.operands[1].type)
    ptx = ck.asm["ptx"]
    kinds = set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k(\d+)\.f32\.(\w+)\.(\w+)", ptx))
    assert kinds == {("8", "tf32", "tf32")}
    assert "cp.async" in ptx and ck.metadata["spills"] == 0


def test_negative_exact_f32_products_keep_the_fma_dot():
    """``ieee`` asks for f32 products: no tensor-core instruction gives them."""
    ck = compile_f32(64, 64, 32, 4, num_stages=1, precision="ieee")
    assert [type(op) for op in dots(ck)] == [DotOp]
    assert "mma" not in ck.asm["ptx"]


@pytest.mark.parametrize("num_stages", [1, 3])
@pytest.mark.parametrize("bm, kind", [(64, WarpGroupDotOp), (32, DotOp)])  # wgmma; mma.sync (32 rows)
def test_tf32x3_is_three_tf32_dots_whose_final_ir_computes_f32_sums(rng, num_stages, bm, kind):
    """``tf32x3`` (split-tf32x3): three tensor-core dots a dot, and the final sm_90a IR on the interpreter within
    f32's tolerance of the float64 product, far inside one tf32 dot's error; ragged shapes."""
    ck = compile_f32(bm, 64, 32, 4, num_stages, precision="tf32x3")
    assert [type(op) for op in dots(ck)] == [kind] * 3
    m, n, k = 100, 72, 200
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.full((m, n), np.nan, np.float32)
    run_kernel(ck.module, (-(-m // bm), -(-n // 64)), [a, b, c, m, n, k, k, n, n])
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.linalg.norm(c - ref) / np.linalg.norm(ref) < 2e-6


@needs_ptxas
@pytest.mark.parametrize(
    "arch, bm, bn, num_warps",
    [("sm_80", 64, 64, 4), ("sm_90a", 32, 64, 4), ("sm_90a", 64, 32, 2)],  # before Hopper; tiles wgmma cannot take
)
def test_where_wgmma_cannot_an_f32_dot_is_a_tf32_mma_sync(arch, bm, bn, num_warps):
    ck = compile_f32(bm, bn, 32, num_warps, num_stages=3, arch=arch)
    assert [type(op) for op in dots(ck)] == [DotOp]
    shapes = set(re.findall(r"mma\.sync\.aligned\.(\S+)", ck.asm["ptx"]))
    assert shapes == {"m16n8k8.row.col.f32.tf32.tf32.f32"} and ck.metadata["spills"] == 0


@pytest.mark.parametrize("num_stages", [1, 3])
@pytest.mark.parametrize("m, n, k", [(128, 128, 96), (100, 72, 40)])
@pytest.mark.parametrize("bm, kind", [(64, WarpGroupDotOp), (32, DotOp)])  # wgmma; mma.sync (32 rows)
def test_the_pipelined_ir_computes_the_product(rng, num_stages, m, n, k, bm, kind):
    """The final sm_90a IR (rings, cp.async, the tf32 wgmma or mma.sync) on the interpreter, ragged shapes included."""
    ck = compile_f32(bm, 64, 32, 4, num_stages)
    assert [type(op) for op in dots(ck)] == [kind]
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.full((m, n), np.nan, np.float32)
    run_kernel(ck.module, (-(-m // bm), -(-n // 64)), [a, b, c, m, n, k, k, n, n])
    assert within_tf32(c, a, b)


def within_tf32(got, a, b) -> bool:
    """Whether ``got`` is ``a @ b`` up to tf32 inputs: 10 mantissa bits kept of each (2^-9 a product at most)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    bound = 2.0**-9 * (np.abs(a) @ np.abs(b)) + 1e-4
    return bool((np.abs(np.asarray(got, np.float64) - a @ b) <= bound).all())


@pytest.mark.gpu
@pytest.mark.parametrize(
    "m, n, k, bm, bn, bk, num_warps",
    [
        (256, 256, 256, 128, 128, 32, 8),  # two warpgroups stacked along M
        (200, 136, 100, 64, 64, 32, 4),  # ragged: masked rows, columns and K tail
        (256, 512, 128, 128, 256, 32, 8),  # n256 instructions
        (192, 256, 64, 64, 128, 16, 8),  # two warpgroups side by side; 64-byte K rows
        (100, 72, 40, 32, 64, 32, 4),  # 32 rows: mma.sync m16n8k8
        (96, 96, 64, 32, 32, 16, 2),  # two warps, K steps of 8 twice: mma.sync
    ],
)
@pytest.mark.parametrize("num_stages", [1, 3])
def test_tf32_matmul_values_on_the_gpu(rng, m, n, k, bm, bn, bk, num_warps, num_stages):
    """Launched as users launch it: the jit specializes sizes and strides (200 is no multiple of 16) itself."""
    torch = pytest.importorskip("torch")
    a = torch.from_numpy(rng.standard_normal((m, k)).astype(np.float32)).cuda()
    b = torch.from_numpy(rng.standard_normal((k, n)).astype(np.float32)).cuda()
    c = torch.full((m, n), float("nan"), device="cuda")
    tc_matmul_kernel[(-(-m // bm), -(-n // bn))](
        a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BM=bm, BN=bn, BK=bk, ACC=tl.float32, PRECISION="tf32", num_warps=num_warps, num_stages=num_stages,
    )  # fmt: skip
    got, a, b = c.cpu().numpy(), a.cpu().numpy(), b.cpu().numpy()
    assert within_tf32(got, a, b)
    err = np.abs(got - a.astype(np.float64) @ b.astype(np.float64)).max()
    assert err > 1e-5 * np.sqrt(k)  # tf32, not exact f32 products: the tensor cores did the work


# --------------------------------------------------------------------------- int8 -> int32


I8 = {"a_ptr": "*i8", "b_ptr": "*i8", "c_ptr": "*i32"}
I8.update({name: "i32" for name in ("M", "N", "K", "stride_am", "stride_bk", "stride_bn", "stride_cm")})


def compile_i8(bm, bn, bk, num_warps, num_stages, b_k_major):
    """B K-major (``stride_bk`` 1: ``x @ w.T`` of a row-major ``w``) or row-major (``stride_bn`` 1)."""
    unit = {"stride_ak": 1, "stride_cn": 1, ("stride_bk" if b_k_major else "stride_bn"): 1}
    sig = {k: v for k, v in I8.items() if k not in unit}
    return tilelab.compile(
        tc_matmul_kernel, sig, {"BM": bm, "BN": bn, "BK": bk, "ACC": tl.int32, "PRECISION": "ieee", **unit},
        target="cuda:sm_90a",
        num_warps=num_warps, num_stages=num_stages, divisibility={name: 16 for name in sig}, cache=False,
    )  # fmt: skip


def i8_args(a, b, b_k_major):
    """The launch's runtime arguments: B given as ``(K, N)`` either way (transposed storage when K-major)."""
    (m, k), n = a.shape, b.shape[1]
    strides = [k, k, n] if b_k_major else [k, n, n]  # stride_am, then stride_bn or stride_bk, stride_cm
    return [m, n, k, *strides]


@needs_ptxas
@pytest.mark.parametrize("b_k_major", [True, False])
def test_an_int8_dot_is_an_s8_wgmma_into_s32(b_k_major):
    """K-major B is copied by ``cp.async``; a row-major one is loaded 16 bytes a thread and stored transposed."""
    ck = compile_i8(128, 128, 64, 8, 3, b_k_major)
    (dot,) = dots(ck)
    assert isinstance(dot, WarpGroupDotOp) and dot.operands[1].type.layout.params["order"] == (0, 1)
    ptx = ck.asm["ptx"]
    assert set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+(k\d+\.\w+\.\w+\.\w+)", ptx)) == {"k32.s32.s8.s8"}
    loads = re.findall(r"ld\.global(\.\S+)", ptx)
    assert "ld.global.b8" not in ptx and ("cp.async" in ptx) and ck.metadata["spills"] == 0
    assert loads == ([] if b_k_major else [".v4.b32"] * len(loads)) and (b_k_major or loads)


@needs_ptxas
@pytest.mark.parametrize("b_k_major", [True, False])
def test_where_wgmma_cannot_an_int8_dot_is_an_s8_mma_sync(b_k_major):
    ck = compile_i8(32, 64, 64, 4, 3, b_k_major)
    assert [type(op) for op in dots(ck)] == [DotOp]
    shapes = set(re.findall(r"mma\.sync\.aligned\.(\S+)", ck.asm["ptx"]))
    assert shapes == {"m16n8k32.row.col.satfinite.s32.s8.s8.s32"} and ck.metadata["spills"] == 0


@pytest.mark.parametrize("b_k_major", [True, False])
@pytest.mark.parametrize("num_stages", [1, 3])
@pytest.mark.parametrize("bm, kind", [(64, WarpGroupDotOp), (32, DotOp)])  # wgmma; mma.sync (32 rows)
def test_the_int8_pipelined_ir_computes_the_exact_product(rng, b_k_major, num_stages, bm, kind):
    ck = compile_i8(bm, 64, 32, 4, num_stages, b_k_major)
    assert [type(op) for op in dots(ck)] == [kind]
    m, n, k = 100, 72, 72
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    c = np.full((m, n), -(2**31) + 7, np.int32)
    stored = np.ascontiguousarray(b.T) if b_k_major else b
    run_kernel(ck.module, (-(-m // bm), -(-n // 64)), [a, stored, c, *i8_args(a, b, b_k_major)])
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))


@pytest.mark.gpu
@pytest.mark.parametrize("b_k_major", [True, False])
@pytest.mark.parametrize(
    "m, n, k, bm, bn, bk, num_warps",
    [
        (256, 256, 256, 128, 128, 64, 8),
        (200, 136, 100, 64, 64, 32, 4),  # ragged
        (256, 512, 128, 128, 256, 128, 8),
        (100, 72, 72, 32, 64, 32, 4),  # 32 rows: mma.sync m16n8k32
        (96, 96, 128, 32, 32, 64, 2),  # two warps, two K steps: mma.sync
    ],
)
@pytest.mark.parametrize("num_stages", [1, 3])
def test_int8_matmul_values_on_the_gpu(rng, b_k_major, m, n, k, bm, bn, bk, num_warps, num_stages):
    """Launched as users launch it (the jit specializes), B given as a ``(K, N)`` view either way."""
    torch = pytest.importorskip("torch")
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    a_d = torch.from_numpy(a).cuda()
    b_d = torch.from_numpy(np.ascontiguousarray(b.T)).cuda().t() if b_k_major else torch.from_numpy(b).cuda()
    c_d = torch.full((m, n), -(2**31) + 7, dtype=torch.int32, device="cuda")
    tc_matmul_kernel[(-(-m // bm), -(-n // bn))](
        a_d, b_d, c_d, m, n, k, a_d.stride(0), a_d.stride(1), b_d.stride(0), b_d.stride(1), c_d.stride(0),
        c_d.stride(1), BM=bm, BN=bn, BK=bk, ACC=tl.int32, PRECISION="ieee", num_warps=num_warps,
        num_stages=num_stages,
    )  # fmt: skip
    np.testing.assert_array_equal(c_d.cpu().numpy(), a.astype(np.int32) @ b.astype(np.int32))
