"""A work-efficient inclusive scan in layouts that walk the scanned dim by register, lane, warp, then register.

A blocked layout steps along the scanned dim through its own registers (``sizePerThread``),
then lanes, then warps, and when the tile is longer than one pass of the CTA, through
further registers: *chunks*. ``x[1024]`` over 4 warps, one element per thread (a load of
unaligned rows gives that), is 8 chunks of 128 elements: register ``r`` of lane ``l`` of
warp ``w`` holds element ``128 * r + 32 * w + l``. The scan runs in that layout (no
conversion, so the loads and stores around it stay coalesced):

1. in each thread, a running combine over the registers of each chunk (in axis order);
2. across lanes, per chunk, Hillis-Steele with ``shfl.sync.up``: after ``log2`` steps each
   lane holds the combine of its own and all earlier lanes' totals (with one register per
   lane, its result); else one more ``shfl.up`` gives the earlier lanes' part, which is
   combined in front of every register of the chunk;
3. across chunks and warps: where the dim has no warp steps, each chunk's total is the
   last lane's (``shfl.sync.idx``) and earlier chunks go in front, with no shared memory
   and no barrier; else each warp's chunk totals go to shared memory and each thread
   combines, in axis order, the totals of all earlier chunks and of the earlier warps of
   its own chunk in front of its registers.

A reverse scan (``result[i] = combine(result[i + 1], x[i])``, the scan of the flipped line
flipped back, as Triton defines it) is the same walk with the axis read backwards: each
thread's registers from its last, lanes and warps by their index mirrored (``index ^ (n - 1)``,
so that "earlier" means a higher position), ``shfl.sync.down`` for ``up``, a chunk's total from
its first lane, chunks from the last. No data moves to flip the tile: the loads and stores
around it stay as they are, and the barriers are the forward scan's.

Other layouts take the shared-memory scan of ``lower_scan.py``.
"""

from __future__ import annotations

from contextlib import nullcontext

from llvmlite import ir

from tilelab.compiler.layouts import LANE, REGISTER, WARP

from ..common.types import I32
from .context import GTile, const_i32, reg_indices
from .lower_memory import from_bits, memory_bits, to_bits
from .lower_reduce import combine

#: Totals a thread would read (its lines x chunks x warps x operands) above which the shared totals are first
#: turned into prefixes in place (``_prefix_in_place``: one more barrier, a serial pass a line) so that each
#: thread reads one a chunk and line. Below it the reads are cheap and held briefly (a row cumsum over 4 warps
#: in 8 chunks: 32); above, they are registers held at once (a 64-row tile down its rows: 4 lines, 128).
PREFIX_IN_PLACE_ABOVE = 64

#: the key of ``axis_bits`` for the register steps above the lanes and warps (the chunks)
CHUNK = "chunk"


def axis_bits(layout, axis):
    """``{register: bits, lane: bits, warp: bits, chunk: bits}`` stepping along ``axis`` in that order, or None.

    Each step must move one power of two along ``axis`` only; together they must cover the
    dim once; lane steps must be consecutive lane bits (``shfl.up`` by a power of two).
    """
    if any(not any(v) for v in layout.in_bases(REGISTER)):
        return None  # a register copy would be combined twice
    steps = []
    for in_dim in (REGISTER, LANE, WARP):
        for i, v in enumerate(layout.in_bases(in_dim)):
            if not v[axis]:
                continue
            if v[axis] & (v[axis] - 1) or any(c for d, c in enumerate(v) if d != axis):
                return None
            steps.append((v[axis], in_dim, i))
    steps.sort()
    if [s[0] for s in steps] != [1 << k for k in range(len(steps))] or 1 << len(steps) != layout.shape[axis]:
        return None
    found = {REGISTER: [], LANE: [], WARP: [], CHUNK: []}
    rank = {REGISTER: 0, LANE: 1, WARP: 2, CHUNK: 3}
    last = 0
    for _, in_dim, bit in steps:
        key = CHUNK if in_dim == REGISTER and last > 0 else in_dim
        if rank[key] < last:
            return None
        last = rank[key]
        found[key].append(bit)
    lanes = found[LANE]
    if lanes and lanes != list(range(lanes[0], lanes[0] + len(lanes))):
        return None
    return found


def _shfl(lw, value, elem, move):
    """``move`` (a 32-bit lane exchange: ``shfl.sync.up`` / ``.idx``) of any element type, 32 bits at a time."""
    b = lw.b
    bits = to_bits(b, value, elem)
    width = bits.type.width
    if width > 32:
        i64 = ir.IntType(64)
        lo = move(b.trunc(bits, I32))
        hi = move(b.trunc(b.lshr(bits, ir.Constant(i64, 32)), I32))
        return from_bits(b, b.or_(b.zext(lo, i64), b.shl(b.zext(hi, i64), ir.Constant(i64, 32))), elem)
    wide = b.zext(bits, I32) if width < 32 else bits
    got = move(wide)
    return from_bits(b, b.trunc(got, bits.type) if width < 32 else got, elem)


def _shfl_back(lw, value, elem, delta: int, reverse: bool):
    """``value`` of the lane ``delta`` positions earlier along the scan: below it, or above for a reverse scan."""
    if reverse:
        return _shfl(lw, value, elem, lambda x: lw.hooks.shuffle_down32(lw, x, delta))
    return _shfl(lw, value, elem, lambda x: lw.hooks.shuffle_up32(lw, x, delta))


def _position(lw, index: ir.Value, bits: int, reverse: bool) -> ir.Value:
    """A lane's or warp's ``bits``-bit ``index`` along the axis in scan order (mirrored for a reverse scan)."""
    return lw.b.xor(index, const_i32((1 << bits) - 1)) if reverse and bits else index


def _select(lw, cond, a: list, c: list) -> list:
    return [lw.b.select(cond, x, y) for x, y in zip(a, c)]


def _groups(layout, axis, bits) -> dict[tuple, list[int]]:
    """Registers per (line, chunk): the other dims' coordinates and the chunk's axis offset, in axis order."""
    regs = reg_indices(layout)
    chunk_mask = sum(layout.in_bases(REGISTER)[i][axis] for i in bits[CHUNK])
    groups: dict[tuple, list[int]] = {}
    for r in sorted(range(len(regs)), key=lambda r: layout.unflatten(regs[r])[axis]):
        coords = layout.unflatten(regs[r])
        line = tuple(c for d, c in enumerate(coords) if d != axis)
        groups.setdefault((line, coords[axis] & chunk_mask), []).append(r)
    return groups


def emit_fast_scan(lw, op, tiles, axis, bits, reverse: bool = False) -> list[GTile]:
    """The inclusive scan of ``tiles`` along ``axis`` (backwards with ``reverse``), one tile per operand."""
    b = lw.b
    layout = tiles[0].layout
    elems = [t.elem for t in tiles]
    groups = _groups(layout, axis, bits)
    if reverse:  # each thread's registers from its last (the chunks: ``_by_line``)
        groups = {key: members[::-1] for key, members in groups.items()}
    values = [[t.regs[r] for t in tiles] for r in range(len(tiles[0].regs))]
    for members in groups.values():  # 1. in thread
        for prev, r in zip(members, members[1:]):
            values[r] = combine(lw, op, values[prev], values[r])
    totals = {key: values[members[-1]] for key, members in groups.items()}
    lane_bits = bits[LANE]
    if lane_bits:  # 2. across lanes
        low = lane_bits[0]
        index = b.and_(b.lshr(lw.lane, const_i32(low)), const_i32((1 << len(lane_bits)) - 1))
        index = _position(lw, index, len(lane_bits), reverse)
        for key, members in groups.items():
            total = totals[key]
            for k in range(len(lane_bits)):
                got = [_shfl_back(lw, v, e, (1 << k) << low, reverse) for v, e in zip(total, elems)]
                ok = b.icmp_unsigned(">=", index, const_i32(1 << k))
                total = _select(lw, ok, combine(lw, op, got, total), total)
            totals[key] = total
            if len(members) == 1:  # one register per lane: its inclusive scan is the lanes' one
                values[members[0]] = total
                continue
            before = [_shfl_back(lw, v, e, 1 << low, reverse) for v, e in zip(total, elems)]
            has = b.icmp_unsigned(">=", index, const_i32(1))
            for r in members:
                values[r] = _select(lw, has, combine(lw, op, before, values[r]), values[r])
    if bits[WARP]:
        _across_warps(lw, op, layout, elems, groups, values, totals, bits, axis, reverse)
    elif bits[CHUNK]:
        _across_chunks(lw, op, elems, groups, values, totals, lane_bits, reverse)
    return [GTile(layout, t.elem, [values[k][i] for k in range(len(values))]) for i, t in enumerate(tiles)]


def _by_line(groups, reverse: bool = False) -> dict[tuple, list[tuple]]:
    """Each line's group keys, chunks in scan order (axis order, or from the last chunk with ``reverse``)."""
    lines: dict[tuple, list[tuple]] = {}
    for key in sorted(groups, key=lambda k: k[1], reverse=reverse):
        lines.setdefault(key[0], []).append(key)
    return lines


def _across_chunks(lw, op, elems, groups, values, totals, lane_bits, reverse: bool = False) -> None:
    """3. (one warp along the dim) each chunk's total is its last lane's (first, reverse); earlier chunks go
    in front."""
    b = lw.b
    field = ((1 << len(lane_bits)) - 1) << lane_bits[0]
    last = b.and_(lw.lane, const_i32(~field)) if reverse else b.or_(lw.lane, const_i32(field))
    for keys in _by_line(groups, reverse).values():
        running = None
        for key in keys:
            if running is not None:
                for r in groups[key]:
                    values[r] = combine(lw, op, running, values[r])
            if key is keys[-1]:
                break
            chunk = [_shfl(lw, v, e, lambda x: lw.hooks.shuffle_idx32(lw, x, last)) for v, e in zip(totals[key], elems)]
            running = chunk if running is None else combine(lw, op, running, chunk)


def _across_warps(lw, op, layout, elems, groups, values, totals, bits, axis, reverse: bool = False) -> None:
    """3. each warp's chunk totals go to shared memory; earlier chunks' and warps' totals go in front.

    Shared memory holds them in scan order (chunk, then warp; mirrored for a reverse scan), so that what follows
    is the same either way."""
    b = lw.b
    warp_bits, lane_bits = bits[WARP], bits[LANE]
    n_warps, n = 1 << len(warp_bits), layout.shape[axis]
    n_chunks = 1 << len(bits[CHUNK])
    stride = layout.flatten([1 if d == axis else 0 for d in range(layout.rank)])
    n_lines = layout.num_elements // n
    widths = [memory_bits(e) // 8 for e in elems]
    smem = lw.shared(ir.IntType(8), sum(widths) * n_chunks * n_warps * n_lines)
    widx = const_i32(0)
    for j, bit in enumerate(warp_bits):
        widx = b.or_(widx, b.shl(b.and_(b.lshr(lw.warp, const_i32(bit)), const_i32(1)), const_i32(j)))
    widx = _position(lw, widx, len(warp_bits), reverse)
    if lane_bits:
        lane_index = b.and_(b.lshr(lw.lane, const_i32(lane_bits[0])), const_i32((1 << len(lane_bits)) - 1))
        lane_index = _position(lw, lane_index, len(lane_bits), reverse)
        last_lane = b.icmp_unsigned("==", lane_index, const_i32((1 << len(lane_bits)) - 1))
    else:
        last_lane = ir.Constant(ir.IntType(1), 1)
    base = lw.thread_index(layout)
    regs = reg_indices(layout)

    def line_of(members):  # the line's index among the tile's lines: the flat index without the axis bits
        flat = b.xor(base, const_i32(regs[members[-1]]))
        high = b.mul(b.udiv(flat, const_i32(stride * n)), const_i32(stride))
        return b.add(high, b.urem(flat, const_i32(stride)))

    def slot(chunk, w, line, e):
        index = b.add(b.mul(b.add(const_i32(chunk * n_warps), w), const_i32(n_lines)), line)
        return lw.smem_elem(smem, index, ir.IntType(8 * widths[e]), sum(widths[:e]) * n_chunks * n_warps * n_lines)

    by_line = _by_line(groups, reverse)
    lines = {line: line_of(groups[keys[0]]) for line, keys in by_line.items()}
    lw.barrier()
    with b.if_then(last_lane):
        for line, keys in by_line.items():
            for c, key in enumerate(keys):
                for e, v in enumerate(totals[key]):
                    b.store(to_bits(b, v, elems[e]), slot(c, widx, lines[line], e))
    lw.barrier()
    if len(by_line) * n_chunks * n_warps * len(elems) > PREFIX_IN_PLACE_ABOVE:
        _prefix_in_place(lw, op, elems, n_chunks, n_warps, n_lines, slot)
        lw.barrier()
        for line, keys in by_line.items():
            for c, key in enumerate(keys):
                front = [from_bits(b, b.load(slot(c, widx, lines[line], e)), elems[e]) for e in range(len(elems))]
                use = b.icmp_unsigned(">", widx, const_i32(0)) if c == 0 else None  # chunk 0 of warp 0: nothing
                for r in groups[key]:
                    both = combine(lw, op, front, values[r])
                    values[r] = both if use is None else _select(lw, use, both, values[r])
        lw.barrier()
        return
    for line, keys in by_line.items():
        running = None
        for c, key in enumerate(keys):
            got = [
                [from_bits(b, b.load(slot(c, const_i32(w), lines[line], e)), elems[e]) for e in range(len(elems))]
                for w in range(n_warps)
            ]
            acc = running
            for w in range(n_warps - 1):
                use = b.icmp_unsigned("<", const_i32(w), widx)
                acc = got[w] if acc is None else _select(lw, use, combine(lw, op, acc, got[w]), acc)
            if running is None:  # chunk 0: warp 0 has nothing in front
                has = b.icmp_unsigned(">", widx, const_i32(0))
                for r in groups[key]:
                    values[r] = _select(lw, has, combine(lw, op, acc, values[r]), values[r])
            else:
                for r in groups[key]:
                    values[r] = combine(lw, op, acc, values[r])
            for w in range(n_warps):
                running = got[w] if running is None else combine(lw, op, running, got[w])
    lw.barrier()


def _prefix_in_place(lw, op, elems, n_chunks: int, n_warps: int, n_lines: int, slot) -> None:
    """Each line's ``n_chunks * n_warps`` totals in shared memory (axis order: chunk, then warp) replaced by
    the combine of those before them (the first left as it is: nothing goes in front of it), a thread a line.

    With chunks, every thread would otherwise read all the totals of its lines (32 a line for a 64-row
    tile over 4 warps in 8 row chunks) and hold them at once; after this pass it reads one a chunk and line.
    """
    b = lw.b
    threads = lw.num_warps * lw.warp_size
    for first in range(0, n_lines, threads):
        line = b.add(lw.tid, const_i32(first))
        owned = b.icmp_unsigned("<", line, const_i32(n_lines)) if first + threads > n_lines else None
        with b.if_then(owned) if owned is not None else nullcontext():
            running = [from_bits(b, b.load(slot(0, const_i32(0), line, e)), elems[e]) for e in range(len(elems))]
            for k in range(1, n_chunks * n_warps):
                chunk, w = divmod(k, n_warps)
                here = [slot(chunk, const_i32(w), line, e) for e in range(len(elems))]
                total = [from_bits(b, b.load(p), elems[e]) for e, p in enumerate(here)]
                for e, p in enumerate(here):
                    b.store(to_bits(b, running[e], elems[e]), p)
                running = combine(lw, op, running, total)
