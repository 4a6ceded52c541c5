"""critical-sections on the probe's spin-locked layer norm backward, as its users write it (sm_90a, no GPU): inside
the lock, the PTX loads both partial rows before its first add; a kernel without a lock is compiled as before."""

from __future__ import annotations

import pytest

import tilelab
from benchmarks.probe.kernels import layernorm_bwd_locked_kernel

SIG = {"dx_ptr": "*fp16", "dy_ptr": "*fp16", "dw_ptr": "*fp32", "db_ptr": "*fp32", "x_ptr": "*fp16", "w_ptr": "*fp16",
       "mean_ptr": "*fp32", "rstd_ptr": "*fp32", "locks": "*i32", "stride": "i32", "n_cols": "i32"}  # fmt: skip


def compiled(n_cols_divisibility: int):
    div = {name: 16 for name in SIG if name != "n_cols"} | {"n_cols": n_cols_divisibility}
    return tilelab.compile(tilelab.jit(layernorm_bwd_locked_kernel), SIG, {"GROUP_M": 64, "BLOCK": 8192},
                           target="cuda:sm_90a", num_warps=8, divisibility=div, cache=False)  # fmt: skip


@pytest.mark.parametrize("divisibility,per_row", [(16, 8), (1, 32)], ids=["v4", "scalar"])
def test_both_partial_rows_are_in_flight_before_the_first_add(divisibility, per_row):
    """8192 f32 a row over 256 threads: 8 16-byte loads a thread a row (32 scalar ones where the row's length may
    be odd); after the lock is taken, the counter's load and both rows' loads come before any add."""
    ck = compiled(divisibility)
    assert any(r.name == "critical-sections" and r.changed for r in ck.passes)
    ptx = ck.asm["ptx"]
    section = ptx[ptx.index("atom.acq_rel.gpu.global.cas.b32") :]  # from the lock's acquire on
    lines = [line for line in section.splitlines() if "ld.global" in line or "add.f32" in line]
    first_add = next(i for i, line in enumerate(lines) if "add.f32" in line)
    assert first_add == 1 + 2 * per_row, lines[: first_add + 1]
