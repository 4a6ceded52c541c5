"""A work-efficient inclusive scan for layouts that walk the scanned dim register-, lane-, then warp-first.

When the axis coordinate of an element is ``register bits | lane bits | warp bits`` in
that order (what a blocked layout along the scanned dim gives), the scan is:

1. in each thread, a running combine over its registers (in axis order);
2. across lanes, Hillis-Steele with ``shfl.sync.up``: after ``log2`` steps each lane holds
   the combine of its own and all earlier lanes' totals; one more ``shfl.up`` gives the
   earlier lanes' part, which is combined in front of every register;
3. across warps, each warp's total goes to shared memory and each thread combines the
   totals of the warps before its own in front of its registers.

Other layouts (and reverse scans) take the shared-memory scan of ``lower_scan.py``.
"""

from __future__ import annotations

from llvmlite import ir

from tilelab.compiler.layouts import LANE, REGISTER, WARP

from ..common.types import I32
from .context import GTile, const_i32, reg_indices
from .lower_memory import from_bits, memory_bits, to_bits
from .lower_reduce import combine


def axis_bits(layout, axis):
    """``(register bits, lane bits, warp bits)`` stepping along ``axis`` in order, or None."""
    expected, found = 1, {}
    for in_dim in (REGISTER, LANE, WARP):
        bits = []
        for i, v in enumerate(layout.in_bases(in_dim)):
            if not v[axis]:
                continue
            if v[axis] != expected or any(c for d, c in enumerate(v) if d != axis):
                return None
            bits.append(i)
            expected *= 2
        found[in_dim] = bits
    if expected != layout.shape[axis]:
        return None
    lanes = found[LANE]
    if lanes and lanes != list(range(lanes[0], lanes[0] + len(lanes))):
        return None
    return found


def _shfl_up(lw, value, elem, delta: int):
    b = lw.b
    bits = to_bits(b, value, elem)
    up = lw.hooks.shuffle_up32
    width = bits.type.width
    if width > 32:
        i64 = ir.IntType(64)
        lo = up(lw, b.trunc(bits, I32), delta)
        hi = up(lw, b.trunc(b.lshr(bits, ir.Constant(i64, 32)), I32), delta)
        return from_bits(b, b.or_(b.zext(lo, i64), b.shl(b.zext(hi, i64), ir.Constant(i64, 32))), elem)
    wide = b.zext(bits, I32) if width < 32 else bits
    got = up(lw, wide, delta)
    return from_bits(b, b.trunc(got, bits.type) if width < 32 else got, elem)


def _select(lw, cond, a: list, c: list) -> list:
    return [lw.b.select(cond, x, y) for x, y in zip(a, c)]


def emit_fast_scan(lw, op, tiles, axis, bits) -> None:
    b = lw.b
    layout = tiles[0].layout
    elems = [t.elem for t in tiles]
    regs = reg_indices(layout)
    groups: dict[tuple, list[int]] = {}
    for r in sorted(range(len(regs)), key=lambda r: layout.unflatten(regs[r])[axis]):
        key = tuple(c for d, c in enumerate(layout.unflatten(regs[r])) if d != axis)
        groups.setdefault(key, []).append(r)
    values = [[t.regs[r] for t in tiles] for r in range(len(regs))]
    for members in groups.values():  # 1. in thread
        for prev, r in zip(members, members[1:]):
            values[r] = combine(lw, op, values[prev], values[r])
    lane_bits = bits[LANE]
    if lane_bits:  # 2. across lanes
        low = lane_bits[0]
        index = b.and_(b.lshr(lw.lane, const_i32(low)), const_i32((1 << len(lane_bits)) - 1))
        for members in groups.values():
            total = values[members[-1]]
            for k in range(len(lane_bits)):
                got = [_shfl_up(lw, v, e, (1 << k) << low) for v, e in zip(total, elems)]
                ok = b.icmp_unsigned(">=", index, const_i32(1 << k))
                total = _select(lw, ok, combine(lw, op, got, total), total)
            before = [_shfl_up(lw, v, e, 1 << low) for v, e in zip(total, elems)]
            has = b.icmp_unsigned(">=", index, const_i32(1))
            for r in members:
                values[r] = _select(lw, has, combine(lw, op, before, values[r]), values[r])
    if bits[WARP]:
        _across_warps(lw, op, layout, elems, groups, values, bits, axis)
    for i, (r, t) in enumerate(zip(op.results, tiles)):
        lw.set(r, GTile(layout, t.elem, [values[k][i] for k in range(len(regs))]))


def _across_warps(lw, op, layout, elems, groups, values, bits, axis) -> None:
    """3. each warp's line totals go to shared memory; earlier warps' totals go in front."""
    b = lw.b
    warp_bits, lane_bits = bits[WARP], bits[LANE]
    n_warps, numel = 1 << len(warp_bits), layout.num_elements
    stride = layout.flatten([1 if d == axis else 0 for d in range(layout.rank)])
    axis_mask = stride * (layout.shape[axis] - 1)
    widths = [memory_bits(e) // 8 for e in elems]
    smem = lw.shared(ir.IntType(8), sum(widths) * n_warps * numel)
    widx = const_i32(0)
    for j, bit in enumerate(warp_bits):
        widx = b.or_(widx, b.shl(b.and_(b.lshr(lw.warp, const_i32(bit)), const_i32(1)), const_i32(j)))
    last_lane = const_i32(1)
    if lane_bits:
        lane_index = b.and_(b.lshr(lw.lane, const_i32(lane_bits[0])), const_i32((1 << len(lane_bits)) - 1))
        last_lane = b.icmp_unsigned("==", lane_index, const_i32((1 << len(lane_bits)) - 1))
    else:
        last_lane = ir.Constant(ir.IntType(1), 1)
    base = lw.thread_index(layout)
    regs = reg_indices(layout)

    def slot(w, line, e):
        index = b.add(b.mul(w, const_i32(numel)), line)
        return lw.smem_elem(smem, index, ir.IntType(8 * widths[e]), sum(widths[:e]) * n_warps * numel)

    lines = {key: b.and_(b.xor(base, const_i32(regs[m[-1]])), const_i32(~axis_mask)) for key, m in groups.items()}
    lw.barrier()
    with b.if_then(last_lane):
        for key, members in groups.items():
            for e, v in enumerate(values[members[-1]]):
                b.store(to_bits(b, v, elems[e]), slot(widx, lines[key], e))
    lw.barrier()
    for key, members in groups.items():
        acc = None
        for w in range(n_warps - 1):
            got = [from_bits(b, b.load(slot(const_i32(w), lines[key], e)), elems[e]) for e in range(len(elems))]
            use = b.icmp_unsigned("<", const_i32(w), widx)
            acc = got if acc is None else _select(lw, use, combine(lw, op, acc, got), acc)
        has = b.icmp_unsigned(">", widx, const_i32(0))
        for r in members:
            values[r] = _select(lw, has, combine(lw, op, acc, values[r]), values[r])
    lw.barrier()
