"""Loop-invariant byte offsets of wgmma kernels stay 64-bit values (``cvt`` + ``shl``), not ``mul.wide`` (no GPU)."""

from __future__ import annotations

import re

import pytest

import tilelab
from benchmarks.corpus import kernels
from tilelab.compiler.backends.cuda import find_tool, wide_offsets
from tilelab.compiler.backends.cuda.emit import ptx_to_cubin
from tilelab.compiler.backends.cuda.wide_offsets import keep_offsets_wide

HAS_PTXAS = find_tool("ptxas") is not None
MM = ["M", "N", "K", "stride_am", "stride_bk", "stride_cm"]
WGMMA = "\twgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%r1}, %rd1, %rd2, p, 1, 1, 0, 1;\n"


def _docstring_example() -> tuple[str, str]:
    doc = wide_offsets.__doc__
    before = re.search(r"before:\s+(.*)", doc).group(1)
    after = re.findall(r"(?:after:)?\s{2,}((?:cvt|shl)\.\S+\s+.*;)", doc)
    return before, after


def test_the_docstring_example():
    before, after = _docstring_example()
    out = keep_offsets_wide(WGMMA + "\t" + re.sub(r"\s+", " \t", before, count=1) + "\n")
    lines = [re.sub(r"\s+", " ", line.strip()) for line in out.splitlines()[1:]]
    assert lines == [re.sub(r"\s+", " ", a) for a in after]


@pytest.mark.parametrize(
    "line, want",
    [
        ("\tmul.wide.s32 \t%rd7, %r9, 4;", ["cvt.s64.s32 \t%rd7, %r9;", "shl.b64 \t%rd7, %rd7, 2;"]),
        ("\tmul.wide.s32 \t%rd7, %r9, 1;", ["cvt.s64.s32 \t%rd7, %r9;", "shl.b64 \t%rd7, %rd7, 0;"]),
        ("\tmul.wide.s32 \t%rd7, %r9, 6;", ["mul.wide.s32 \t%rd7, %r9, 6;"]),  # not a shift: kept
        ("\tmul.wide.u32 \t%rd7, %r9, 4;", ["mul.wide.u32 \t%rd7, %r9, 4;"]),  # zero-extended: kept
        ("\tmul.wide.s32 \t%rd7, %r9, %r10;", ["mul.wide.s32 \t%rd7, %r9, %r10;"]),  # two registers: kept
    ],
)
def test_power_of_two_factors_become_shifts(line, want):
    out = keep_offsets_wide(WGMMA + line + "\n").splitlines()[1:]
    assert [o.strip() for o in out] == want


def test_kernels_without_wgmma_are_unchanged():
    ptx = "\tmul.wide.s32 \t%rd7, %r9, 4;\n\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {...};\n"
    assert keep_offsets_wide(ptx) is ptx


def _matmul_ptx(arch: str) -> str:
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", **{n: "i32" for n in MM}}
    meta = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "HINTS": False}
    meta |= {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1}
    ck = tilelab.compile(tilelab.jit(kernels.matmul_kernel), sig, meta, target=f"cuda:{arch}", num_warps=8,
                         num_stages=3, divisibility={n: 16 for n in sig}, snapshots=False, cache=False)  # fmt: skip
    return ck.asm["ptx"]


def test_the_tutorial_matmul_keeps_its_offsets_wide_on_hopper():
    ptx = _matmul_ptx("sm_90a")
    assert "wgmma.mma_async" in ptx
    assert not re.search(r"mul\.wide\.s32\s+%rd\d+, %r\d+, (1|2|4|8|16);", ptx)
    assert re.search(r"cvt\.s64\.s32\s+(%rd\d+), %r\d+;\s+shl\.b64\s+\1, \1, 1;", ptx)  # f16: 2-byte elements
    if HAS_PTXAS:
        result = ptx_to_cubin(ptx, "sm_90a", sass=False)
        assert result.cubin is not None and result.spill_stores == 0


def test_mma_sync_kernels_keep_mul_wide():
    assert "mul.wide.s32" in _matmul_ptx("sm_80")  # no wgmma: the 32-bit sources cost fewer registers
