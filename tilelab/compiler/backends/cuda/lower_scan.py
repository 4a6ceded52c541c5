"""GPU lowering of ``tt.scan`` through shared memory: correct first, simple to read.

Every thread writes its elements at their row-major indices; then, for each element
it holds at position ``p`` along ``axis``, it combines the elements ``0 .. p`` of its
line (``p .. n-1`` for a reverse scan) in a loop. The work is quadratic in the line
length: layouts that walk the axis register-, lane-, then warp-first (the usual case)
take the work-efficient scan of ``lower_scan_fast.py`` instead.
"""

from __future__ import annotations

from llvmlite import ir

from ..common.types import I32
from .context import GTile, const_i32, reg_indices
from .lower_memory import from_bits, memory_bits, to_bits
from .lower_reduce import combine, packed_arrays
from .lower_scan_fast import axis_bits, emit_fast_scan


def emit_scan(lw, op) -> None:
    b = lw.b
    tiles = [lw.get(v) for v in op.operands]
    layout = tiles[0].layout
    axis, reverse = op.attrs["axis"], op.attrs.get("reverse", False)
    bits = axis_bits(layout, axis)
    if bits is not None:
        for r, t in zip(op.results, emit_fast_scan(lw, op, tiles, axis, bits, reverse)):
            lw.set(r, t)
        return
    n = layout.shape[axis]
    stride = layout.flatten([1 if d == axis else 0 for d in range(layout.rank)])
    widths = [memory_bits(t.elem) // 8 for t in tiles]
    numel = layout.num_elements
    offsets, nbytes = packed_arrays(widths, numel)
    smem = lw.shared(ir.IntType(8), nbytes)
    base = lw.thread_index(layout)
    lw.barrier()
    for t, off, w in zip(tiles, offsets, widths):
        for r, value in zip(reg_indices(layout), t.regs):
            b.store(to_bits(b, value, t.elem), lw.smem_elem(smem, b.xor(base, const_i32(r)), ir.IntType(8 * w), off))
    lw.barrier()
    results = [[] for _ in tiles]
    for r in reg_indices(layout):
        lin = b.xor(base, const_i32(r))
        pos = b.and_(b.udiv(lin, const_i32(stride)), const_i32(n - 1))
        start = b.sub(lin, b.mul(pos, const_i32(stride)))
        values = _scan_line(lw, op, tiles, smem, offsets, widths, start, pos, stride, n, reverse)
        for res, v in zip(results, values):
            res.append(v)
    lw.barrier()
    for r, t, regs in zip(op.results, tiles, results):
        lw.set(r, GTile(layout, t.elem, regs))


def _read(lw, tiles, smem, offsets, widths, index):
    b = lw.b
    return [
        from_bits(b, b.load(lw.smem_elem(smem, index, ir.IntType(8 * w), off)), t.elem)
        for t, off, w in zip(tiles, offsets, widths)
    ]


def _scan_line(lw, op, tiles, smem, offsets, widths, start, pos, stride, n, reverse):
    """Combine the line's elements from its first (last, when reverse) up to ``pos``."""
    b = lw.b
    first = const_i32(n - 1) if reverse else const_i32(0)
    init = _read(lw, tiles, smem, offsets, widths, b.add(start, b.mul(first, const_i32(stride))))
    pre = b.block
    loop = b.append_basic_block("scan.loop")
    body = b.append_basic_block("scan.body")
    done = b.append_basic_block("scan.done")
    b.branch(loop)
    b.position_at_end(loop)
    j = b.phi(I32)
    j.add_incoming(first, pre)
    accs = [b.phi(v.type) for v in init]
    for phi, v in zip(accs, init):
        phi.add_incoming(v, pre)
    b.cbranch(b.icmp_unsigned("!=", j, pos), body, done)
    b.position_at_end(body)
    nxt = b.sub(j, const_i32(1)) if reverse else b.add(j, const_i32(1))
    new = _read(lw, tiles, smem, offsets, widths, b.add(start, b.mul(nxt, const_i32(stride))))
    combined = combine(lw, op, list(accs), new)  # reverse too: the scan of the flipped line, as Triton's
    j.add_incoming(nxt, b.block)
    for phi, v in zip(accs, combined):
        phi.add_incoming(v, b.block)
    b.branch(loop)
    b.position_at_end(done)
    return list(accs)
