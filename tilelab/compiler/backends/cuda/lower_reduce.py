"""GPU lowering of reductions and scans.

A reduction along ``axis`` goes in three steps, each read off the layout's basis vectors:

1. in each thread, registers that differ only along ``axis`` are combined;
2. lane bits that step along ``axis`` are combined with butterfly shuffles
   (``llvm.nvvm.shfl.sync.bfly``, ``hooks.shuffle_xor32``): after ``log2`` steps every lane holds the result;
3. warp bits that step along ``axis`` go through shared memory: each warp writes its
   partial results, a barrier, then the partials of all warps are combined. For a reduction to one
   value, lane ``l`` of every warp loads warp ``l``'s partial and the warp combines them with
   butterfly shuffles (one shared load and ``log2(warps)`` shuffles per thread, as Triton does);
   otherwise each thread loads and combines the partials of its output elements.

The result's layout is the slice of the operand's: its register ``k`` is the group
of step 1 whose coordinates (``axis`` removed) are ``REG_out[k]``. The combine region
is lowered inline on scalars each time two values meet.

A scan goes through shared memory: each thread combines, for each of its elements,
the elements before it along ``axis`` (simple and correct; not yet work-efficient).
"""

from __future__ import annotations

from llvmlite import ir

from tilelab.compiler.ir.ops import ReduceOp, ScanOp
from tilelab.compiler.layouts import LANE, REGISTER, WARP, slice_layout

from ..common.types import I32
from .context import GTile, LoweringBug, const_i32, lower, reg_indices
from .lower_control import lower_body
from .lower_memory import from_bits, memory_bits, to_bits


def combine(lw, op, a: list, c: list) -> list:
    """The op's combine region applied to the tuples ``a`` (accumulated) and ``c`` (new)."""
    return lower_body(lw, op.combine, [*a, *c])


def _axis_steps(layout, in_dim, axis):
    """Bits of ``in_dim`` that move along ``axis`` (they must move along it only)."""
    bits = []
    for i, v in enumerate(layout.in_bases(in_dim)):
        if v[axis]:
            if any(c for d, c in enumerate(v) if d != axis):
                raise LoweringBug(f"a reduction over a layout mixing dims is not supported: {layout}")
            bits.append(i)
    return bits


def shuffle_xor(lw, value, elem, lane_mask: int):
    """``value`` of the lane ``lane ^ lane_mask`` (any element type, 32 bits at a time)."""
    b = lw.b
    bits = to_bits(b, value, elem)
    width = bits.type.width
    shfl = lw.hooks.shuffle_xor32
    if width <= 32:
        wide = b.zext(bits, I32) if width < 32 else bits
        got = shfl(lw, wide, lane_mask)
        return from_bits(b, b.trunc(got, bits.type) if width < 32 else got, elem)
    i64 = ir.IntType(64)
    lo, hi = b.trunc(bits, I32), b.trunc(b.lshr(bits, ir.Constant(i64, 32)), I32)
    lo, hi = shfl(lw, lo, lane_mask), shfl(lw, hi, lane_mask)
    return from_bits(b, b.or_(b.zext(lo, i64), b.shl(b.zext(hi, i64), ir.Constant(i64, 32))), elem)


def _within_threads(lw, op, tiles, axis) -> dict[tuple, list]:
    """Step 1: combine registers that differ only along ``axis``, in order along it."""
    layout = tiles[0].layout
    groups: dict[tuple, list] = {}
    for r in sorted(range(len(tiles[0].regs)), key=lambda r: layout.unflatten(reg_indices(layout)[r])[axis]):
        coords = list(layout.unflatten(reg_indices(layout)[r]))
        key = tuple(c for d, c in enumerate(coords) if d != axis)
        values = [t.regs[r] for t in tiles]
        groups[key] = combine(lw, op, groups[key], values) if key in groups else values
    return groups


def _across_lanes(lw, op, groups, elems, bits) -> None:
    b = lw.b
    for bit in bits:
        is_high = b.icmp_unsigned("!=", b.and_(lw.lane, const_i32(1 << bit)), const_i32(0))
        for key, values in groups.items():
            other = [shuffle_xor(lw, v, e, 1 << bit) for v, e in zip(values, elems)]
            lo = [b.select(is_high, o, v) for v, o in zip(values, other)]
            hi = [b.select(is_high, v, o) for v, o in zip(values, other)]
            groups[key] = combine(lw, op, lo, hi)


def _across_warps(lw, op, groups, elems, bits, out_layout) -> None:
    """Step 3: partials of the warps along ``axis`` meet in shared memory."""
    b = lw.b
    n_out = out_layout.num_elements if out_layout is not None else 1
    widths = [memory_bits(e) for e in elems]
    slots = (1 << len(bits)) * n_out
    offsets, nbytes = packed_arrays([w // 8 for w in widths], slots)
    smem = lw.shared(ir.IntType(8), nbytes)
    wa = const_i32(0)
    for j, bit in enumerate(bits):
        wa = b.or_(wa, b.shl(b.and_(b.lshr(lw.warp, const_i32(bit)), const_i32(1)), const_i32(j)))
    base = lw.thread_index(out_layout) if out_layout is not None else const_i32(0)
    out_regs = _out_register_of(out_layout)
    lw.barrier()
    for key, values in groups.items():
        index = b.add(b.mul(wa, const_i32(n_out)), b.xor(base, const_i32(out_regs[key])))
        for v, e, off, w in zip(values, elems, offsets, widths):
            b.store(to_bits(b, v, e), lw.smem_elem(smem, index, ir.IntType(w), off))
    lw.barrier()
    if out_layout is None and len(bits) <= lw.warp_size.bit_length() - 1:
        _partials_by_lanes(lw, op, groups, elems, len(bits), smem, offsets, widths)
        lw.barrier()
        return
    for key in groups:
        out_index = b.xor(base, const_i32(out_regs[key]))
        acc = None
        for k in range(1 << len(bits)):
            index = b.add(out_index, const_i32(k * n_out))
            loaded = [
                from_bits(b, b.load(lw.smem_elem(smem, index, ir.IntType(w), off)), e)
                for e, off, w in zip(elems, offsets, widths)
            ]
            acc = loaded if acc is None else combine(lw, op, acc, loaded)
        groups[key] = acc
    lw.barrier()


def _partials_by_lanes(lw, op, groups, elems, nbits, smem, offsets, widths) -> None:
    """Step 3 for one output value: lane ``l`` loads partial ``l mod 2**nbits``, shuffles combine them.

    Every warp does the same work, so every thread ends with the result: one shared load and
    ``nbits`` shuffles per thread instead of ``2**nbits`` loads held in registers at once.
    """
    b = lw.b
    slot = b.and_(lw.lane, const_i32((1 << nbits) - 1))
    values = [
        from_bits(b, b.load(lw.smem_elem(smem, slot, ir.IntType(w), off)), e)
        for e, off, w in zip(elems, offsets, widths)
    ]
    partials = {(): values}
    _across_lanes(lw, op, partials, elems, list(range(nbits)))
    groups[()] = partials[()]


def packed_arrays(sizes: list[int], count: int) -> tuple[list[int], int]:
    """Byte offsets of arrays of ``count`` elements of ``sizes`` bytes each, laid one after the other,
    each aligned to its element size; and the bytes they take.

    An argmax over an i8 tile keeps i8 values then i32 indices: two warps' values take 2 bytes, so the
    indices start at byte 4, not 2 (a misaligned ``st.shared.b32`` stops the kernel).

        packed_arrays([1, 4], 2)  ->  ([0, 4], 12)
    """
    offsets, end = [], 0
    for size in sizes:
        end = -(-end // size) * size
        offsets.append(end)
        end += size * count
    return offsets, end


def _out_register_of(out_layout) -> dict[tuple, int]:
    """The row-major index of each output register's coordinates, keyed by those coordinates."""
    if out_layout is None:
        return {(): 0}
    return {tuple(out_layout.unflatten(i)): i for i in reg_indices(out_layout)}


@lower(ReduceOp)
def lower_reduce(lw, op):
    tiles = [lw.get(v) for v in op.operands]
    axis = op.attrs["axis"]
    layout = tiles[0].layout
    elems = [t.elem for t in tiles]
    first = op.results[0].type
    out_layout = first.layout if first.is_tensor else None
    groups = _within_threads(lw, op, tiles, axis)
    _across_lanes(lw, op, groups, elems, _axis_steps(layout, LANE, axis))
    warp_bits = _axis_steps(layout, WARP, axis)
    if warp_bits:
        _across_warps(lw, op, groups, elems, warp_bits, out_layout)
    if out_layout is None:
        for r, v in zip(op.results, groups[()]):
            lw.set(r, v)
        return
    if out_layout != slice_layout(layout, axis):
        raise LoweringBug(f"reduce result layout {out_layout} is not the slice of {layout}")
    order = [tuple(out_layout.unflatten(i)) for i in reg_indices(out_layout)]
    for n, r in enumerate(op.results):
        lw.set(r, GTile(out_layout, elems[n], [groups[k][n] for k in order]))


@lower(ScanOp)
def lower_scan(lw, op):
    from .lower_scan import emit_scan  # here: lower_scan.py builds on this module (combine)

    emit_scan(lw, op)


__all__ = ["combine", "shuffle_xor", "REGISTER"]
