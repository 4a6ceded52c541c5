"""``tt.histogram`` through shared memory: the bins zeroed, one atomic add per element, the bins read back.

For ``tl.histogram(x, 256)`` with 1,024 values over 128 threads (8 registers each)::

    bins[i] = 0                                  each thread: the bins its result registers hold
    bar.sync
    @keep red.shared.add.u32 [bins + 4 * x[r]], 1     each of the 8 registers: keep = 0 <= x[r] < 256,
                                                 the mask, and the register's owner
    bar.sync
    result[r] = bins[i]                          each result register: its bin
    bar.sync                                     the scratch is free again

One atomic per element (a copy held in several threads is counted by its owner only), whatever the
number of bins: 8 atomics a thread here, where comparing every element with every bin would take
1,024 x 256 compares. Equal values within a warp serialize on their bin; Triton counts with warp
ballots instead (log2(bins) votes per register), contention-free but with work that grows with the bins.
"""

from __future__ import annotations

from llvmlite import ir

from tilelab.compiler.ir.ops import HistogramOp
from tilelab.compiler.layouts import LANE, REGISTER, WARP, vector_run

from ..common.types import I32
from .context import GTile, broadcast_mask, const_i32, lower, reg_indices
from .lower_shape import load_run, store_run, xor_const


def _bin_runs(layout):
    """``(first bin's constant part, width)`` of each run of the result's registers that one vector access
    moves, and the bases of the per-thread part (a thread's bins are ``per_thread ^ constant``)."""
    consts = reg_indices(layout)
    flats = [layout.flatten(v) for d in (LANE, WARP) for v in layout.in_bases(d)]
    v = vector_run(consts, flats, 32)
    return [(consts[r], v) for r in range(0, len(consts), v)], flats


@lower(HistogramOp)
def lower_histogram(lw, op):
    b = lw.b
    t = op.result.type
    bins = t.shape[0]
    src = lw.get(op.src)
    keep_regs = None if op.mask is None else lw.get(op.mask).regs
    smem = lw.shared(I32, bins * 4)
    runs, flats = _bin_runs(t.layout)
    per_thread = lw.thread_index(t.layout)

    lw.barrier()  # the scratch may still be read by an op before
    for const, v in runs:
        store_run(lw, smem, xor_const(b, per_thread, flats, const), I32, [const_i32(0)] * v)
    lw.barrier()

    owner = lw.is_owner(src.layout)
    signed = op.src.type.element.is_signed
    seen, repeated = set(), broadcast_mask(src.layout, REGISTER)
    for r, (x, flat) in enumerate(zip(src.regs, reg_indices(src.layout))):
        if r & repeated or flat in seen:  # a register holding an element another register holds
            continue
        seen.add(flat)
        if x.type.width > 32:  # in range only if its high word is zero: compare the whole value
            keep = b.icmp_unsigned("<", x, ir.Constant(x.type, bins))
            x = b.trunc(x, I32)
        else:
            x = (b.sext if signed else b.zext)(x, I32) if x.type.width < 32 else x
            keep = b.icmp_unsigned("<", x, const_i32(bins))  # unsigned: negative values are out of range
        keep = b.and_(keep, owner)
        if keep_regs is not None:
            keep = b.and_(keep, keep_regs[r])
        lw.hooks.shared_increment(lw, lw.smem_elem(smem, x, I32), keep)
    lw.barrier()

    regs = []
    for const, v in runs:
        regs += load_run(lw, smem, xor_const(b, per_thread, flats, const), I32, v)
    lw.barrier()
    lw.set(op.result, GTile(t.layout, t.element, regs))
