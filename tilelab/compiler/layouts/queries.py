"""Questions the backend and the layout views ask of a layout, answered by linear algebra.

* ``contiguous_elements`` -- how many consecutive elements along a dim one thread
  holds in consecutive registers: the widest vector load/store it can issue;
* ``conversion_kind`` -- what moving a tile from one layout to another costs:
  nothing, a register permutation, warp shuffles, or a trip through shared memory;
* ``bank_conflicts`` -- how many shared-memory wavefronts one warp-wide access of a
  shared buffer takes, given the register layout that reads or writes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .gf2 import XorBasis
from .indexing import vector_bits
from .linear import LANE, OFFSET, REGISTER, WARP, LinearLayout

BANKS = 32
BANK_BYTES = 4
MAX_ACCESS_BYTES = 16


def _aligned_run(steps: list[int], others: list[int], limit: int) -> int:
    """Longest ``2^k <= limit`` with ``steps[:k] == [1, 2, 4, ...]`` and ``others`` clear of the low ``k`` bits.

    ``steps`` are the images of register bits along one coordinate; ``others`` the
    images of every other input bit. Then registers ``0 .. 2^k-1`` hold
    ``base + 0 .. base + 2^k-1`` in order, ``base`` a multiple of ``2^k``.
    """
    k = 0
    while k < len(steps) and steps[k] == 1 << k and (2 << k) <= limit:
        k += 1
    while k and any(o & ((1 << k) - 1) for o in steps[k:] + others):
        k -= 1
    return 1 << k


def fastest_dim(layout: LinearLayout) -> int:
    """The dimension along which a thread's registers run first: the layout's ``order[0]``; for a layout
    without one (a ``tt.trans`` of a loaded tile: ``register=[[1, 0], [2, 0], ...]``) the dim its first
    register basis steps by one along; else the last."""
    order = layout.params.get("order")
    if order:
        return int(order[0])
    steps = [v for v in layout.in_bases(REGISTER) if any(v)]
    if steps and sorted(steps[0]) == [0] * (len(steps[0]) - 1) + [1]:
        return list(steps[0]).index(1)
    return layout.rank - 1


def contiguous_elements(layout: LinearLayout, dim: int = -1, in_dim: str = REGISTER) -> int:
    """Elements along ``dim`` that registers 0, 1, 2, ... of one thread hold in a row.

    The widest vector a thread can load or store along ``dim``: a thread of
    ``blocked([128], [4], [32], [1], [0])`` holds 4; of the mma accumulator, 2
    along N and 1 along M.
    """
    dim = dim % layout.rank
    steps = []
    for v in layout.in_bases(in_dim):
        if any(c for d, c in enumerate(v) if d != dim):
            break
        steps.append(v[dim])
    others = [v[dim] for d, vs in layout.bases for v in vs if d != in_dim]
    others += [v[dim] for v in layout.in_bases(in_dim)[len(steps) :]]
    return _aligned_run(steps, others, layout.shape[dim])


def _span(layout: LinearLayout, in_dims) -> XorBasis:
    basis = XorBasis()
    for d in in_dims:
        for v in layout.in_bases(d):
            basis.insert(layout.flatten(v))
    return basis


def _moves_within(src: LinearLayout, dst: LinearLayout, local: tuple[str, ...], fixed: tuple[str, ...]) -> bool:
    """Whether each index of ``dst`` finds its element in ``src`` without changing its ``fixed`` dims.

    The elements ``src`` gives one ``fixed`` index are ``src(fixed) ^ span(src.local)``:
    ``dst`` stays inside them when its ``local`` vectors lie in that span and its
    ``fixed`` vectors differ from ``src``'s by something in it.
    """
    span = _span(src, local)
    for d in local:
        if not all(span.contains(dst.flatten(v)) for v in dst.in_bases(d)):
            return False
    for d in fixed:
        a, b = src.in_bases(d), dst.in_bases(d)
        if len(a) != len(b):
            return False
        if not all(span.contains(src.flatten(u) ^ dst.flatten(v)) for u, v in zip(a, b)):
            return False
    return True


def conversion_kind(src: LinearLayout, dst: LinearLayout) -> str:
    """What ``convert_layout(src -> dst)`` needs: ``none``, ``register``, ``shuffle`` or ``shared``.

    ``register``: every thread already holds the elements it will own (a
    permutation of its registers). ``shuffle``: every warp does (``shfl.sync``
    moves them between lanes). Otherwise elements cross warps: ``shared``.
    """
    if src.shape != dst.shape:
        raise ValueError(f"cannot convert between shapes {list(src.shape)} and {list(dst.shape)}")
    if src == dst:
        return "none"
    if _moves_within(src, dst, (REGISTER,), (LANE, WARP)):
        return "register"
    if _moves_within(src, dst, (REGISTER, LANE), (WARP,)):
        return "shuffle"
    return "shared"


@dataclass
class BankConflicts:
    """Shared-memory traffic of reading/writing a buffer through a register layout.

    ``wavefronts``: the most wavefronts any warp-wide instruction takes; ``ideal``:
    the fewest its bytes allow (``vector_bytes * 32 / 128``); ``per_instruction``:
    wavefronts per (warp, instruction); ``vector_elems``: elements per thread access.
    """

    wavefronts: int
    ideal: int
    vector_elems: int
    vector_bytes: int
    per_instruction: np.ndarray = field(repr=False)

    @property
    def conflict_free(self) -> bool:
        return self.wavefronts <= self.ideal


def shared_vector_width(shared: LinearLayout, reg: LinearLayout, elem_bytes: int) -> int:
    """Elements a thread can move with one ``ld.shared``/``st.shared`` (16 bytes at most).

    The ``v`` registers must land on offsets ``+0 .. +v-1`` of an aligned block (``vector_bits``:
    registers ``0 .. v-1``, or any whose register bits the buffer puts first, as the CUDA
    lowering's ``vector_groups`` finds them): a swizzle finer than the vector breaks it.
    """
    return 1 << len(_vector_bits(_offset_images(shared, reg), elem_bytes))


def _vector_bits(images: dict[str, list[int]], elem_bytes: int) -> list[int]:
    """The register bits one access spans (``vector_bits``), from the buffer offsets of each register, lane
    and warp bit (``_offset_images``)."""
    return vector_bits(images[REGISTER], images[LANE] + images[WARP], max(1, MAX_ACCESS_BYTES // elem_bytes))


def bank_conflicts(shared: LinearLayout, reg: LinearLayout, elem_bytes: int) -> BankConflicts:
    """Wavefronts per warp-wide access when ``reg`` threads read or write ``shared``.

    Model: each thread moves ``vector_elems`` elements per instruction (contiguous
    in the buffer, 16 bytes at most: the registers ``vector_bits`` spans); instruction
    ``i`` of a warp touches the ``i``-th such group of registers of all 32 lanes. The hardware serves
    128 bytes per wavefront: 4-byte-or-smaller accesses are one phase of 32 lanes,
    8-byte accesses two phases of 16, 16-byte accesses four of 8. In a phase each
    bank (``(address // 4) % 32``) serves one distinct 4-byte word per wavefront;
    lanes reading the same word share it.
    """
    if shared.in_dims != (OFFSET,):
        raise ValueError("bank_conflicts needs a shared layout (input dim 'offset') first")
    images = _offset_images(shared, reg)  # the buffer offset of each register, lane and warp bit
    spanned = _vector_bits(images, elem_bytes)
    v = 1 << len(spanned)
    # an instruction's registers first: register order with the spanned bits lowest (the lowering's groups)
    images[REGISTER] = [images[REGISTER][i] for i in spanned] + [
        im for i, im in enumerate(images[REGISTER]) if i not in spanned
    ]
    # Warp w's offsets are warp 0's XOR one constant (the map is linear); XOR with a constant permutes
    # 4-byte words and banks alike, so every warp takes warp 0's wavefronts: count warp 0 only.
    offsets = (_xor_span(images[LANE])[:, None] ^ _xor_span(images[REGISTER])[None, :])[None]  # [1, lane, register]
    lanes = offsets.shape[1]
    access = v * elem_bytes
    warps = 1 << len(images[WARP])
    per = np.broadcast_to(_all_wavefronts(offsets * elem_bytes, v, access), (warps, offsets.shape[2] // v))
    ideal = max(1, -(-lanes * access // (BANKS * BANK_BYTES)))
    return BankConflicts(int(per.max()), ideal, v, access, per)


def _offset_images(shared: LinearLayout, reg: LinearLayout) -> dict[str, list[int]]:
    """Per input dim of ``reg`` (register, lane, warp): the buffer offset of each of its basis elements.

    The bases of ``reg.invert_and_compose(shared)``, looked up in the buffer's table of offsets
    (``_offset_table``) instead of composing layouts: scoring a conversion's ~50 candidate buffers
    asks this twice each, and the composition (a GF(2) inverse, a new layout) cost three times the count.
    """
    if reg.out_dims != shared.out_dims:
        raise ValueError(f"layouts of different shapes: {list(reg.shape)} and {list(shared.shape)}")
    table = _offset_table(shared)
    if table is None:  # not one element per offset: the general right inverse
        to_offset = reg.invert_and_compose(shared)
        return {d: [v[0] for v in to_offset.in_bases(d)] for d in (REGISTER, LANE, WARP)}
    return {d: [int(table[reg.flatten(v)]) for v in reg.in_bases(d)] for d in (REGISTER, LANE, WARP)}


def _offset_table(shared: LinearLayout) -> np.ndarray | None:
    """``table[i]``: the offset holding element ``i`` (row-major index) of a buffer that holds each element
    once, else None. Kept on the layout (layouts never change)."""
    if "_offset_table" not in shared.__dict__:
        flat = _xor_span(shared.flat_bases())  # flat[o]: the element at offset o
        table = None
        if flat.size == shared.num_elements:
            table = np.full(flat.size, -1, dtype=np.int64)
            table[flat] = np.arange(flat.size)
            if (table < 0).any():
                table = None
        shared.__dict__["_offset_table"] = table
    return shared.__dict__["_offset_table"]


def _xor_span(images: list[int]) -> np.ndarray:
    """The XOR of every subset of ``images``: ``out[i]`` combines the images of the set bits of ``i``."""
    out = np.zeros(1, dtype=np.int64)
    for b in images:
        out = np.concatenate([out, out ^ b])
    return out


def _all_wavefronts(byte_addr: np.ndarray, v: int, access_bytes: int) -> np.ndarray:
    """Wavefronts of every instruction of every warp: ``[warp, instruction]``.

    ``byte_addr[w, lane, r]``: the address of register ``r`` of a lane; instruction ``i``
    moves registers ``i*v .. i*v+v-1``. An instruction runs in phases of ``128 // access_bytes``
    lanes (at most 32); a phase takes as many wavefronts as the most distinct 4-byte words any
    one bank holds. All phases of all instructions are counted at once: one sort, one ``bincount``.
    """
    warps, lanes, regs = byte_addr.shape
    n = regs // v
    lanes_per_phase = min(lanes, max(1, 128 // access_bytes))
    phases = lanes // lanes_per_phase
    chunks = byte_addr[:, :, : n * v].reshape(warps, lanes, n, v).transpose(0, 2, 1, 3)  # [warp, instr, lane, v]
    words = np.sort((chunks // BANK_BYTES).reshape(warps * n * phases, lanes_per_phase * v), axis=-1)
    first = np.ones(words.shape, dtype=bool)
    first[:, 1:] = words[:, 1:] != words[:, :-1]  # a word several lanes read is served once
    slot = np.arange(words.shape[0])[:, None] * BANKS + words % BANKS
    counts = np.bincount(slot[first], minlength=words.shape[0] * BANKS).reshape(-1, BANKS)
    return counts.max(axis=1).reshape(warps, n, phases).sum(axis=2)
