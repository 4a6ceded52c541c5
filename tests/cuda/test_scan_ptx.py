"""Scans on sm_90a, read from PTX (no GPU): the scan runs in the layout of the loads around it.

``tl.cumsum`` over rows: the loads and stores keep their coalesced layout (16-byte vectors
where the rows are aligned, one element per lane where they are not) and the scan runs in
it, chunk by chunk; a scanned dim inside one warp needs no shared memory and no barrier.
"""

from __future__ import annotations

import re

import tilelab
import tilelab.language as tl
from benchmarks.corpus import kernels
from tilelab.compiler.ir.ops import ConvertLayoutOp, LoadOp
from tilelab.compiler.layouts import LANE

SIG = {"x_ptr": "*fp32", "out_ptr": "*fp32", "stride": "i32", "n_cols": "i32"}


def compile_cumsum(stride_divisibility: int, num_warps: int = 4):
    div = {"x_ptr": 16, "out_ptr": 16, "stride": stride_divisibility, "n_cols": stride_divisibility}
    return tilelab.compile(tilelab.jit(kernels.cumsum_kernel), SIG, {"BLOCK_SIZE": 1024}, target="cuda:sm_90a",
                           num_warps=num_warps, divisibility=div, snapshots=False, cache=False)  # fmt: skip


def count(ptx: str, instruction: str) -> int:
    return len(re.findall(re.escape(instruction) + r"\s", ptx))


def test_aligned_rows_scan_in_their_16_byte_vectors():
    ck = compile_cumsum(16)
    ptx = ck.asm["ptx"]
    # 1024 floats over 128 threads: two 4-float vectors each, two chunks of the scan
    assert count(ptx, "ld.global.v4.b32") == 2 and count(ptx, "st.global.v4.b32") == 2
    assert count(ptx, "ld.global.b32") == 0 and count(ptx, "st.global.b32") == 0
    assert count(ptx, "shfl.sync.up.b32") == 2 * 6  # per chunk: 5 Hillis-Steele steps and the lanes before
    assert not [op for op in ck.module.walk() if isinstance(op, ConvertLayoutOp)]


def test_unaligned_rows_load_one_element_per_lane_and_scan_in_that_layout():
    ck = compile_cumsum(1)  # 1000-float rows: only 4-byte aligned, every access is scalar
    ptx = ck.asm["ptx"]
    assert count(ptx, "ld.global.b32") == 8 and count(ptx, "st.global.b32") == 8
    assert count(ptx, "shfl.sync.up.b32") == 8 * 5  # per chunk, the 5 steps of the lanes' scan only
    load = next(op for op in ck.module.walk() if isinstance(op, LoadOp))
    layout = load.result.type.layout
    assert [v[0] for v in layout.in_bases(LANE)] == [1, 2, 4, 8, 16]  # lanes read consecutive floats
    assert not [op for op in ck.module.walk() if isinstance(op, ConvertLayoutOp)]
    # across 4 warps and 8 chunks: each warp's 8 chunk totals, one round trip, reads of 16 bytes
    assert count(ptx, "st.shared.b32") == 8 and count(ptx, "ld.shared.v4.b32") == 8
    assert ck.metadata["shared"] == 4 * 8 * 4 and not ck.metadata["spills"]


@tilelab.jit
def row_cumsum_kernel(x_ptr, out_ptr, BLOCK_N: tl.constexpr):
    offs = tl.arange(0, 8)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    tl.store(out_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), axis=1))


def test_a_scan_within_one_warp_needs_no_barrier():
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32"}
    ck = tilelab.compile(row_cumsum_kernel, sig, {"BLOCK_N": 256}, target="cuda:sm_90a", num_warps=8,
                         snapshots=False, cache=False)  # fmt: skip
    ptx = ck.asm["ptx"]
    # one row per warp, two chunks of 128: the first chunk's total comes from the last lane
    assert "bar.sync" not in ptx and "st.shared" not in ptx
    assert count(ptx, "shfl.sync.idx.b32") == 1 and count(ptx, "ld.global.v4.b32") == 2


@tilelab.jit
def cumsum_1d_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), axis=0, reverse=REVERSE))


def test_a_reverse_scan_is_the_shuffle_scan_read_backwards():
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32"}
    options = {"target": "cuda:sm_90a", "num_warps": 4, "snapshots": False, "cache": False}
    forward, reverse = (
        tilelab.compile(cumsum_1d_kernel, sig, {"BLOCK": 1024, "REVERSE": r}, **options).asm["ptx"]
        for r in (False, True)
    )
    # the forward scan's shuffles (two chunks of 5 steps and the lanes before), taken from the lanes above
    assert count(reverse, "shfl.sync.down.b32") == count(forward, "shfl.sync.up.b32") == 2 * 6
    assert count(reverse, "shfl.sync.up.b32") == 0
    # and no trip through shared memory to flip the tile: the same barriers as the forward scan
    assert count(reverse, "bar.sync") == count(forward, "bar.sync")
