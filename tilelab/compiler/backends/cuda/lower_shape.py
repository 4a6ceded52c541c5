"""GPU lowering of layout conversions and shape ops: each is a *gather* of source elements.

Every op here says, for each element of its result, which element of its source(s)
it is: ``broadcast`` drops coordinates, ``expand_dims`` and ``reshape`` keep the
row-major index, ``trans`` permutes coordinates, ``flip`` XORs them, ``join``/``split``
and ``cat`` interleave or stack two tiles. As sizes are powers of two, that map is
affine over GF(2) on the bits of the row-major index, so in each thread the source
index of result register ``r`` is a constant XOR a per-thread part.

The gather first asks the layouts (at compile time, with numpy: ``layouts/indexing.py``)
whether every result register is a register the same thread already holds (of one of the
sources, for ``join`` and ``cat``): then it is free. Otherwise the elements go through
shared memory: each thread writes what it holds at its row-major index, a barrier, each
thread reads what it needs, a barrier.

``tt.gather`` is the one whose map is data: its source always goes through shared memory,
and each result element reads at its own coordinates (an XOR of constants and lane and warp
bits, as above) plus its index's value times the source's row-major stride along ``axis``.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from tilelab.compiler.ir.ops import (
    BroadcastOp,
    CatOp,
    ConvertLayoutOp,
    ExpandDimsOp,
    FlipOp,
    GatherOp,
    JoinOp,
    ReshapeOp,
    SplitOp,
    TransOp,
)
from tilelab.compiler.layouts import (
    LANE,
    WARP,
    LinearLayout,
    broadcast_index,
    coords_of,
    flat_of,
    needed_indices,
    permute_index,
    registers_holding,
    vector_run,
)

from ..common.types import I32
from .context import GTile, const_i32, lower, reg_indices, xor_flat
from .lower_memory import from_bits, memory_bits, to_bits


def gather(lw, sources: list[GTile], dst: LinearLayout, elem, source_index) -> GTile:
    """A tile of layout ``dst`` whose element ``i`` is element ``source_index(i)`` of the sources.

    Several sources are one index space, stacked in order (``cat``, ``join``).
    """
    return gather_each(lw, sources, elem, [(dst, source_index)])[0]


def gather_each(lw, sources: list[GTile], elem, wanted: list) -> list[GTile]:
    """``gather`` of each ``(dst, source_index)`` of ``wanted`` from the same sources: those the threads
    do not hold in registers share one trip through shared memory (``split``'s two halves)."""
    tiles = []
    for dst, source_index in wanted:
        held = registers_of_sources(sources, needed_indices(dst, lw.num_warps, source_index), lw.num_warps)
        tiles.append(None if held is None else GTile(dst, elem, held))
    missing = [i for i, t in enumerate(tiles) if t is None]
    if missing:
        read = through_shared(lw, sources, elem, [wanted[i] for i in missing])
        for i, regs in zip(missing, read):
            tiles[i] = GTile(wanted[i][0], elem, regs)
    return tiles


def registers_of_sources(sources: list[GTile], needed: np.ndarray, num_warps: int) -> list | None:
    """Each result register as a register the same thread holds in one of the stacked ``sources``, or None.

    ``needed[w, l, r]`` indexes the sources stacked in order (``join``: the two tiles' elements, the
    first's then the second's); each result register must come from one source, at one register of it
    in every thread (``registers_holding``).
    """
    if len(sources) == 1:
        regs = registers_holding(sources[0].layout, needed, num_warps)
        return None if regs is None else [sources[0].regs[r] for r in regs]
    starts = np.cumsum([0] + [s.layout.num_elements for s in sources])
    which = np.searchsorted(starts, needed, side="right") - 1
    per_register = which[0, 0]
    if not np.array_equal(which, np.broadcast_to(per_register, which.shape)):
        return None
    out = [None] * needed.shape[-1]
    for k, src in enumerate(sources):
        cols = np.flatnonzero(per_register == k)
        if not len(cols):
            continue
        regs = registers_holding(src.layout, needed[..., cols] - starts[k], num_warps)
        if regs is None:
            return None
        for c, r in zip(cols, regs):
            out[c] = src.regs[r]
    return out


def through_shared(lw, sources, elem, reads: list) -> list[list]:
    """Write every source at its row-major index, read back what each ``(dst, source_index)`` needs.

    Runs of registers that sit side by side in shared memory move as one vector
    (``st.shared.v4.b32``, ``ld.shared.b32`` for two halves...): fewer instructions and
    fewer live addresses than one access per element.
    """
    b = lw.b
    smem, it = write_shared(lw, sources, elem)
    out = []
    for dst, source_index in reads:
        const_part, per_thread, flats = _affine_split(lw, dst, source_index)
        v = vector_run(const_part, flats, it.width)
        regs = []
        for r in range(0, len(const_part), v):
            run = load_run(lw, smem, xor_const(b, per_thread, flats, const_part[r]), it, v)
            regs += [from_bits(b, x, elem) for x in run]
        out.append(regs)
    lw.barrier()
    return out


def write_shared(lw, sources, elem):
    """Every source written at its row-major index (stacked in order) between two barriers: ``(smem, it)``,
    the scratch buffer and the integer type of its elements. The caller reads, then ends with a barrier."""
    b = lw.b
    bits = memory_bits(elem)
    it = ir.IntType(bits)
    total = sum(s.layout.num_elements for s in sources)
    smem = lw.shared(it, total * bits // 8)
    lw.barrier()
    offset = 0
    for src in sources:
        base = lw.thread_index(src.layout)
        consts = reg_indices(src.layout)
        flats = [src.layout.flatten(v) for d in (LANE, WARP) for v in src.layout.in_bases(d)] + [offset]
        v = vector_run(consts, flats, bits)
        for r in range(0, len(consts), v):
            values = [to_bits(b, x, elem) for x in src.regs[r : r + v]]
            store_run(lw, smem, b.add(xor_const(b, base, flats[:-1], consts[r]), const_i32(offset)), it, values)
        offset += src.layout.num_elements
    lw.barrier()
    return smem, it


def _vector_pointer(lw, smem, index, it, v):
    p = lw.smem_elem(smem, index, it)
    return p if v == 1 else lw.b.bitcast(p, ir.VectorType(it, v).as_pointer(3))


def store_run(lw, smem, index, it, values) -> None:
    """Store ``values`` (bits of type ``it``) at elements ``index, index+1, ...`` of shared memory."""
    b = lw.b
    if len(values) == 1:
        b.store(values[0], lw.smem_elem(smem, index, it))
        return
    vec = ir.Constant(ir.VectorType(it, len(values)), None)
    for j, x in enumerate(values):
        vec = b.insert_element(vec, x, const_i32(j))
    b.store(vec, _vector_pointer(lw, smem, index, it, len(values)), align=len(values) * it.width // 8)


def load_run(lw, smem, index, it, v) -> list:
    """Load ``v`` elements of type ``it`` at ``index, index+1, ...`` of shared memory."""
    b = lw.b
    if v == 1:
        return [b.load(lw.smem_elem(smem, index, it))]
    vec = b.load(_vector_pointer(lw, smem, index, it, v), align=v * it.width // 8)
    return [b.extract_element(vec, const_i32(j)) for j in range(v)]


def xor_const(b, per_thread: ir.Value, thread_flats, const: int) -> ir.Value:
    """``per_thread ^ const``, ``per_thread`` an XOR of ``thread_flats``: constant bits no thread sets are added.

    A bit of ``const`` outside every per-thread basis is never set in ``per_thread``, so XOR
    and ADD agree on it: ``(per_thread ^ overlap) + rest``. The addresses of a thread's
    registers then differ by an added constant (``[r + 4096]`` in PTX, an immediate in SASS)
    instead of each being its own XOR, held in its own register (through a loop, when LLVM
    hoists the epilogue's addresses out of a persistent kernel's tile loop).
    """
    thread_bits = 0
    for flat in thread_flats:
        thread_bits |= int(flat)
    overlap, rest = const & thread_bits, const & ~thread_bits
    base = b.xor(per_thread, const_i32(overlap)) if overlap else per_thread
    return b.add(base, const_i32(rest)) if rest else base


def _affine_split(lw, dst: LinearLayout, source_index):
    """``source_index(REG[r] ^ T) == const[r] ^ g(T)``: the constants, the per-thread ``g(T)`` and its bases."""
    f0 = int(source_index(np.array(0)))
    const_part = [int(source_index(np.array(r))) for r in reg_indices(dst)]

    def g(vectors):
        return [int(source_index(np.array(dst.flatten(v)))) ^ f0 for v in vectors]

    lanes, warps = g(dst.in_bases(LANE)), g(dst.in_bases(WARP))
    per_thread = xor_flat(lw.b, [(lw.lane, lanes), (lw.warp, warps)])
    return const_part, per_thread, lanes + warps


# ------------------------------------------------------------------ ops


def _tile(lw, v) -> GTile:
    return lw.get(v)


@lower(ConvertLayoutOp, ExpandDimsOp, ReshapeOp)
def lower_same_index(lw, op):
    t = op.result.type
    lw.set(op.result, gather(lw, [_tile(lw, op.operands[0])], t.layout, t.element, lambda i: i))


@lower(BroadcastOp)
def lower_broadcast(lw, op):
    t, src = op.result.type, _tile(lw, op.src)
    index = broadcast_index(src.layout, t.shape, op.src.type.shape)
    lw.set(op.result, gather(lw, [src], t.layout, t.element, index))


@lower(TransOp)
def lower_trans(lw, op):
    t, src = op.result.type, _tile(lw, op.src)
    index = permute_index(src.layout, t.shape, op.attrs["order"])
    lw.set(op.result, gather(lw, [src], t.layout, t.element, index))


def flipped(lw, src: GTile, dim: int, dst: LinearLayout | None = None) -> GTile:
    """``src`` reversed along ``dim``, in layout ``dst`` (``src``'s own by default)."""
    flip = np.zeros(len(src.layout.shape), np.int64)
    flip[dim] = src.layout.shape[dim] - 1

    def index(lin):
        return flat_of(src.layout, coords_of(src.layout.shape, np.asarray(lin)) ^ flip)

    return gather(lw, [src], src.layout if dst is None else dst, src.elem, index)


@lower(FlipOp)
def lower_flip(lw, op):
    t = op.result.type
    lw.set(op.result, flipped(lw, _tile(lw, op.src), op.attrs["dim"] % len(t.shape), t.layout))


@lower(GatherOp)
def lower_gather(lw, op):
    """Through shared memory: the source written at its row-major index, then each result element read at
    its own coordinates but along ``axis``, where the index's value (mod the extent) goes. The index is in
    the result's layout (``assign-layouts``), so its register ``r`` addresses result register ``r``."""
    b = lw.b
    t, axis = op.result.type, op.attrs["axis"]
    src = _tile(lw, op.src)
    index = gather(lw, [_tile(lw, op.index)], t.layout, op.index.type.element, lambda i: i)
    size, shape = op.src.type.shape[axis], op.src.type.shape
    step = src.layout.flatten([1 if d == axis else 0 for d in range(len(shape))])

    def on_axis_zero(lin):  # the source's row-major index of the result element's coordinates, axis set to 0
        coords = coords_of(t.shape, np.asarray(lin))
        coords[..., axis] = 0
        return flat_of(src.layout, coords)

    const_part, per_thread, flats = _affine_split(lw, t.layout, on_axis_zero)
    smem, it = write_shared(lw, [src], t.element)
    regs = []
    for const, at in zip(const_part, index.regs):
        if at.type.width > 32:
            at = b.trunc(at, I32)
        elif at.type.width < 32:  # a narrow index: its value, signed or not, before the modulo
            at = (b.sext if op.index.type.element.is_signed else b.zext)(at, I32)
        along = b.shl(b.and_(at, const_i32(size - 1)), const_i32(step.bit_length() - 1))
        where = b.add(xor_const(b, per_thread, flats, const), along)
        regs.append(from_bits(b, b.load(lw.smem_elem(smem, where, it)), t.element))
    lw.barrier()
    lw.set(op.result, GTile(t.layout, t.element, regs))


@lower(JoinOp)
def lower_join(lw, op):
    t = op.result.type
    if not op.operands[0].type.is_tensor:  # two scalars (reductions'): each thread picks by the element it holds
        first, second = (lw.get(v) for v in op.operands)
        base, zero = lw.thread_index(t.layout), const_i32(0)
        flats = [lw.b.xor(base, const_i32(c)) for c in reg_indices(t.layout)]
        regs = [lw.b.select(lw.b.icmp_unsigned("==", flat, zero), first, second) for flat in flats]
        lw.set(op.result, GTile(t.layout, t.element, regs))
        return
    n = op.operands[0].type.layout.num_elements
    sources = [_tile(lw, v) for v in op.operands]

    def index(lin):
        lin = np.asarray(lin)
        return (lin & 1) * n + (lin >> 1)

    lw.set(op.result, gather(lw, sources, t.layout, t.element, index))


@lower(SplitOp)
def lower_split(lw, op):
    src = _tile(lw, op.operands[0])
    wanted = [(r.type.layout, lambda lin, k=k: (np.asarray(lin) << 1) | k) for k, r in enumerate(op.results)]
    for r, tile in zip(op.results, gather_each(lw, [src], op.results[0].type.element, wanted)):
        lw.set(r, tile)


@lower(CatOp)
def lower_cat(lw, op):
    t = op.result.type
    sources = [_tile(lw, v) for v in op.operands]
    lw.set(op.result, gather(lw, sources, t.layout, t.element, lambda lin: np.asarray(lin)))


__all__ = ["gather"]
