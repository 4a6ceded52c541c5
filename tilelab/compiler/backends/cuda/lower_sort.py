"""GPU lowering of ``tt.sort`` by ranking, through shared memory: simple and correct.

Every thread writes its elements; then for each element ``x[p]`` of its line it counts
the elements that sort before it (smaller, or equal and earlier: a stable sort) and
writes ``x[p]`` at that rank in a second buffer; a barrier; each thread reads its
elements back in order. Quadratic in the line length, as the scan: a bitonic network
over registers and shuffles is the fast version. Descending order writes ranks from
the end (NaNs, as numpy, sort last ascending).
"""

from __future__ import annotations

from llvmlite import ir

from tilelab.compiler.ir.ops import SortOp

from ..common import to_arith
from ..common.types import I32
from .context import GTile, const_i32, lower, reg_indices
from .lower_memory import from_bits, memory_bits, to_bits


def _before(lw, elem, other, mine, other_first):
    """Whether ``other`` sorts before ``mine`` (ties: the earlier position first)."""
    b = lw.b
    if elem.is_float:
        o, m = to_arith(lw, other, elem), to_arith(lw, mine, elem)
        less = b.fcmp_ordered("<", o, m)
        equal = b.fcmp_ordered("==", o, m)
        nan_mine = b.fcmp_unordered("uno", m, m)
        nan_other = b.fcmp_unordered("uno", o, o)
        less = b.or_(less, b.and_(nan_mine, b.not_(nan_other)))
        equal = b.or_(equal, b.and_(nan_mine, nan_other))
    else:
        cmp = b.icmp_signed if elem.is_signed else b.icmp_unsigned
        less, equal = cmp("<", other, mine), b.icmp_unsigned("==", other, mine)
    return b.or_(less, b.and_(equal, other_first))


@lower(SortOp)
def lower_sort(lw, op):
    b = lw.b
    tile = lw.get(op.src)
    layout, elem = tile.layout, tile.elem
    dim = op.attrs.get("dim", -1) % layout.rank
    n, numel = layout.shape[dim], layout.num_elements
    stride = layout.flatten([1 if d == dim else 0 for d in range(layout.rank)])
    width = memory_bits(elem)
    it = ir.IntType(width)
    smem = lw.shared(it, 2 * numel * width // 8)
    base = lw.thread_index(layout)
    lw.barrier()
    for r, value in zip(reg_indices(layout), tile.regs):
        b.store(to_bits(b, value, elem), lw.smem_elem(smem, b.xor(base, const_i32(r)), it))
    lw.barrier()
    for r, value in zip(reg_indices(layout), tile.regs):
        lin = b.xor(base, const_i32(r))
        pos = b.and_(b.udiv(lin, const_i32(stride)), const_i32(n - 1))
        start = b.sub(lin, b.mul(pos, const_i32(stride)))
        rank = _rank(lw, smem, it, elem, value, start, pos, stride, n)
        if op.attrs.get("descending"):
            rank = b.sub(const_i32(n - 1), rank)
        dst = b.add(start, b.mul(rank, const_i32(stride)))
        b.store(to_bits(b, value, elem), lw.smem_elem(smem, dst, it, numel * width // 8))
    lw.barrier()
    regs = []
    for r in reg_indices(layout):
        index = b.xor(base, const_i32(r))
        regs.append(from_bits(b, b.load(lw.smem_elem(smem, index, it, numel * width // 8)), elem))
    lw.barrier()
    lw.set(op.result, GTile(layout, elem, regs))


def _rank(lw, smem, it, elem, value, start, pos, stride, n):
    """How many elements of the line sort before ``value`` (at ``pos``)."""
    b = lw.b
    pre = b.block
    loop = b.append_basic_block("sort.loop")
    done = b.append_basic_block("sort.done")
    b.branch(loop)
    b.position_at_end(loop)
    j = b.phi(I32)
    count = b.phi(I32)
    j.add_incoming(const_i32(0), pre)
    count.add_incoming(const_i32(0), pre)
    other = from_bits(b, b.load(lw.smem_elem(smem, b.add(start, b.mul(j, const_i32(stride))), it)), elem)
    before = _before(lw, elem, other, value, b.icmp_unsigned("<", j, pos))
    new_count = b.add(count, b.zext(before, I32))
    nxt = b.add(j, const_i32(1))
    j.add_incoming(nxt, b.block)
    count.add_incoming(new_count, b.block)
    b.cbranch(b.icmp_unsigned("<", nxt, const_i32(n)), loop, done)
    b.position_at_end(done)
    return new_count
