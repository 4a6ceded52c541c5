"""prefetch-loads on kernels spelled as Triton users write them (sm_90a, no GPU): the row index recomputed
every trip or the pointers advanced with ``+=``, both get their tiles one trip ahead; a loop that also
stores, or one with a single stage, keeps its loads in their trip."""

from __future__ import annotations

import pytest

import tilelab
import tilelab.language as tl
from benchmarks.probe.kernels import col_sum_kernel


@tilelab.jit
def col_sum_pointer_steps(x_ptr, out_ptr, M, N, stride_m, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rows = tl.arange(0, BLOCK_M)
    ptrs = x_ptr + rows[:, None] * stride_m + cols[None, :]
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in range(0, M, BLOCK_M):
        mask = ((start + rows)[:, None] < M) & (cols[None, :] < N)
        acc += tl.sum(tl.load(ptrs, mask=mask, other=0.0), axis=0)
        ptrs += BLOCK_M * stride_m
    tl.store(out_ptr + cols, acc, mask=cols < N)


@tilelab.jit
def scale_rows_in_place(x_ptr, M, N, stride_m, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    for start in range(0, M, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        ptrs = x_ptr + rows[:, None] * stride_m + cols[None, :]
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        tl.store(ptrs, tl.load(ptrs, mask=mask) * 2.0, mask=mask)  # a later trip may read what this one wrote


SIG = {"x_ptr": "*fp32", "out_ptr": "*fp32", "M": "i32", "N": "i32", "stride_m": "i32"}
DIV = {"x_ptr": 16, "out_ptr": 16, "N": 16, "stride_m": 16}


def prefetched(kernel, sig, stages=3) -> bool:
    div = {k: v for k, v in DIV.items() if k in sig}
    ck = tilelab.compile(kernel, sig, {"BLOCK_M": 128, "BLOCK_N": 32}, target="cuda:sm_90a", num_warps=4,
                         num_stages=stages, divisibility=div, cache=False)  # fmt: skip
    return any(r.name == "prefetch-loads" and r.changed for r in ck.passes)


@pytest.mark.parametrize("kernel", [tilelab.jit(col_sum_kernel), col_sum_pointer_steps], ids=["index", "pointer_steps"])
def test_both_spellings_load_one_trip_ahead(kernel):
    assert prefetched(kernel, SIG)
    assert not prefetched(kernel, SIG, stages=1)


def test_negative_a_loop_that_stores_keeps_its_loads():
    assert not prefetched(scale_rows_in_place, {k: v for k, v in SIG.items() if k != "out_ptr"})
