"""The CUDA pipeline's explicit shared memory: real buffers, their offsets and barriers, through ptxas."""

from __future__ import annotations

import pytest

import tilelab
import tilelab.language as tl
from tilelab.compiler.backends.cuda import find_tool

HAS_PTXAS = find_tool("ptxas") is not None


@tilelab.jit
def column_store_kernel(x_ptr, out_ptr, N: tl.constexpr, B: tl.constexpr):
    rows = tl.program_id(0) * B + tl.arange(0, B)
    cols = tl.program_id(1) * B + tl.arange(0, B)
    tile = tl.load(x_ptr + rows[:, None] * N + cols[None, :])
    tl.store(out_ptr + cols[None, :] * N + rows[:, None], tile)  # contiguous along dim 0
    tl.store(out_ptr + N * N + cols[None, :] * N + rows[:, None], tile + 1.0)  # a second data tile, same trip


def compile_cuda(kernel, signature, constants):
    return tilelab.compile(kernel, signature=signature, constants=constants, target="cuda:sm_90a", cache=False)


@pytest.mark.skipif(not HAS_PTXAS, reason="ptxas not found")
def test_column_store_moves_through_allocated_buffers_with_planned_barriers():
    ck = compile_cuda(column_store_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"N": 1024, "B": 64})
    ops = [op.name for op in ck.module.walk()]
    assert "ttg.convert_layout" not in ops and ops.count("ttg.local_alloc") == 2
    assert ck.module.attrs["shared_bytes"] == 64 * 64 * 4  # one data tile's bytes, reused by the second one
    assert ck.metadata["shared"] >= ck.module.attrs["shared_bytes"]  # private scratch, if any, goes after
    assert ops.count("gpu.barrier") == 3  # each store before its load, and the second store over the first load
    assert ck.asm["ptx"].count("bar.sync") >= 2
