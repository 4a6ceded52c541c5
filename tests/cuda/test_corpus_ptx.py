"""PTX of corpus kernels for sm_90a (no GPU): fp8 dots on wgmma k32, one-cvt bf16 rounding, unaligned rows."""

from __future__ import annotations

import re

import tilelab
import tilelab.language as tl
from benchmarks.corpus import kernels
from benchmarks.corpus.run import STEPS, compile_time
from tilelab.compiler.ir.ops import ConvertLayoutOp, LoadOp
from tilelab.compiler.layouts import LANE

MM = ["M", "N", "K", "stride_am", "stride_bn", "stride_cm"]


def test_fp8_matmul_runs_on_wgmma_e4m3():
    sig = {"a_ptr": "*fp8e4nv", "b_ptr": "*fp8e4nv", "c_ptr": "*fp32", **{n: "i32" for n in MM}}
    meta = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "HINTS": False}
    meta |= {"stride_ak": 1, "stride_bk": 1, "stride_cn": 1}  # B stored K-contiguous (``w.T``)
    ck = tilelab.compile(tilelab.jit(kernels.matmul_kernel), sig, meta, target="cuda:sm_90a", num_warps=4,
                         num_stages=2, divisibility={n: 16 for n in sig}, snapshots=False, cache=False)  # fmt: skip
    ptx = ck.asm["ptx"]
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3") == 2  # K 64 = 2 x 32
    assert "wgmma.wait_group.sync.aligned 1" in ptx and "fma.rn.f32" not in ptx


def test_bf16_results_round_and_multiply_in_pairs():
    sig = {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*bf16", "stride": "i32", "n_cols": "i32"}
    ck = tilelab.compile(tilelab.jit(kernels.swiglu_kernel), sig, {"BLOCK_SIZE": 1024}, target="cuda:sm_90a",
                         num_warps=4, divisibility={n: 16 for n in sig}, snapshots=False, cache=False)  # fmt: skip
    ptx = ck.asm["ptx"]
    # 8 bf16 per thread, in pairs: silu(a) rounded two at a time into one word, the product of
    # two words in one instruction (exact in f32: one rounding), the word stored as it is
    assert ptx.count("cvt.rn.bf16x2.f32") == 4 and ptx.count("mul.rn.bf16x2") == 4
    assert "cvt.rn.bf16.f32" not in ptx and "mul.rn.f32" in ptx  # (silu's own product stays f32)
    assert "cvt.u32.u16" not in ptx and "or.b32" not in ptx and not re.search(r"mov\.b32\s+%r\d+, \{", ptx)
    assert "setp.nan" not in ptx


def test_layernorm_bwd_rows_of_unaligned_length_are_read_lane_by_lane():
    # N = 5000 halves: rows start 2-byte aligned only, every access moves one element; with one
    # element per thread a warp's ld.global.b16 reads 64 contiguous bytes (8 elements per thread:
    # 16 sectors for the same 64 bytes, and stores of 2 bytes into 16 sectors)
    names = ["DX", "DY", "DW_partial", "DB_partial", "X", "W", "Mean", "Rstd", "stride", "M", "N"]
    types = ["*fp16", "*fp16", "*fp32", "*fp32", "*fp16", "*fp16", "*fp32", "*fp32", "i32", "i32", "i32"]
    div = {n: (16 if t.startswith("*") else 1) for n, t in zip(names, types)} | {"M": 16}
    ck = tilelab.compile(tilelab.jit(kernels.layernorm_bwd_kernel), dict(zip(names, types)),
                         {"ROWS_PER_PROGRAM": 16, "BLOCK_N": 8192}, target="cuda:sm_90a", num_warps=8,
                         num_stages=1, divisibility=div, snapshots=False, cache=False)  # fmt: skip
    loads = [op for op in ck.module.walk() if isinstance(op, LoadOp) and op.result.type.is_tensor]
    assert loads and all([v[0] for v in op.result.type.layout.in_bases(LANE)] == [1, 2, 4, 8, 16] for op in loads)
    assert not [op for op in ck.module.walk() if isinstance(op, ConvertLayoutOp)]
    ptx = ck.asm["ptx"]
    assert ptx.count("ld.global.b16 ") == 3 * 32 and ptx.count("st.global.b16 ") == 32  # w, x, dy; dx


@tilelab.jit
def bf16_scale_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    prod = tl.load(x_ptr + offs) * tl.load(y_ptr + offs)  # bf16 * bf16
    first = tl.load(x_ptr) * tl.load(y_ptr)  # a scalar product
    tl.store(out_ptr + offs, (prod.to(tl.float32) * 0.5).to(tl.bfloat16) + first)


def test_bf16_products_of_one_register_and_scalars_take_the_single_instruction():
    sig = {"x_ptr": "*bf16", "y_ptr": "*bf16", "out_ptr": "*bf16"}
    ck = tilelab.compile(bf16_scale_kernel, sig, {"BLOCK": 128}, target="cuda:sm_90a", num_warps=4,
                         snapshots=False, cache=False)  # fmt: skip
    ptx = ck.asm["ptx"]  # one element per thread: no pair to pack
    assert ptx.count("mul.rn.bf16 ") == 2 and "mul.rn.bf16x2" not in ptx and "cvt.rn.bf16x2.f32" not in ptx
    assert ck.metadata["registers"]  # ptxas took it


def test_compile_time_mode_splits_each_compile_by_step(capsys):
    compile_time(["add 2^28-3 f32"], configs=1, repeat=1)
    header, _, row = capsys.readouterr().out.strip().splitlines()
    assert header.split(" | ")[3 : 3 + len(STEPS)] == list(STEPS)
    cells = row.strip("| ").split(" | ")
    total, steps = float(cells[2]), [float(c) for c in cells[3 : 3 + len(STEPS)]]
    assert cells[0] == "add 2^28-3 f32" and 0 < sum(steps) <= total + 0.0005 * len(STEPS)  # each cell rounded
    hit_ms = float(cells[-1].split(" / ")[0])  # a compile the disk cache answers: well under a compile
    assert 0 < hit_ms / 1e3 < total / 2
