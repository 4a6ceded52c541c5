"""The memory-access model: vector width per thread and 32-byte sectors per warp request.

Global memory is served in 32-byte *sectors*. How many a kernel moves depends on
two things the compiler knows: the layout (which thread touches which element,
and how many consecutive elements it moves with one instruction) and the
addresses. The model, as the coalescing view shows it:

* a thread moves ``vector_width`` elements per instruction: as many as the
  pointer's contiguity and alignment allow (axis info), 16 bytes at most, and no
  more than the layout gives it in consecutive registers;
* one *request* is one warp instruction: the 32 lanes of a warp each move their
  vector of registers ``[i*v, (i+1)*v)``;
* its cost is the number of distinct 32-byte-aligned segments touched by the
  active lanes (masked-off lanes touch nothing; copies of one address count once).

For a unit-stride f32 tile: 4 floats per thread -> 32 x 16 B = 512 B = 16 sectors
per request; 1 float per thread -> 128 B = 4 sectors; a stride-2 f32 access -> 8.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..layouts import (
    REGISTER,
    LinearLayout,
    bank_conflicts,
    broadcast_index,
    contiguous_elements,
    needed_indices,
    permute_index,
    registers_holding,
    vector_run,
)
from .axis_info import AxisInfo, analyze

SECTOR_BYTES = 32
MAX_VECTOR_BYTES = 16


def vector_width(ptr: AxisInfo, elem_bytes: int, dim: int = -1, mask: AxisInfo | None = None) -> int:
    """Elements one thread may move at once along ``dim`` (a power of two, at most 16 bytes).

    Limited by the pointer's contiguity, by its alignment (divisibility in bytes
    over the element size), and by the mask's constancy (a vector is all-or-nothing).

        >>> vector_width(AxisInfo((1024,), (16,), (1,)), elem_bytes=4)
        4
    """
    dim = dim % ptr.rank
    width = min(
        ptr.contiguity[dim], max(1, ptr.divisibility[dim] // elem_bytes), max(1, MAX_VECTOR_BYTES // elem_bytes)
    )
    if mask is not None:
        width = min(width, mask.constancy[dim % mask.rank])
    return max(1, width)


@dataclass
class AccessModel:
    """Sectors and vectors of one load or store for one program.

    ``sectors[w, i]``: sectors of request ``i`` of warp ``w``; ``useful_bytes``:
    distinct bytes the active lanes asked for; ``moved_bytes``: sectors x 32.
    """

    vector_elems: int
    vector_bytes: int
    sectors: np.ndarray = field(repr=False)
    useful_bytes: int
    moved_bytes: int

    @property
    def requests(self) -> int:
        return int(self.sectors.size)

    @property
    def sectors_per_request(self) -> float:
        return float(self.sectors.mean()) if self.sectors.size else 0.0

    @property
    def efficiency(self) -> float:
        """Useful over moved bytes: 1.0 when every byte of every sector is used."""
        return self.useful_bytes / self.moved_bytes if self.moved_bytes else 1.0


def access_model(
    ptr: AxisInfo,
    layout: LinearLayout,
    elem_bytes: int,
    addresses,
    mask=None,
    mask_info: AxisInfo | None = None,
    dim: int | None = None,
) -> AccessModel:
    """Vector width and sectors per warp request of one access of a program.

    ``addresses``: the byte address of every tile element (tile-shaped, e.g. the
    interpreter's trace, or ``affine_addresses``); ``mask``: which elements are
    active (all when None); ``dim``: the fastest dim (the layout's ``order[0]``).
    """
    addresses = np.asarray(addresses, dtype=np.int64).reshape(layout.shape)
    active = np.ones(layout.shape, bool) if mask is None else np.broadcast_to(np.asarray(mask, bool), layout.shape)
    if dim is None:
        dim = layout.params.get("order", (layout.rank - 1,))[0]
    v = min(vector_width(ptr, elem_bytes, dim, mask_info), contiguous_elements(layout, dim))
    coords = layout.coords()  # [warp, lane, register, rank]
    where = tuple(coords[..., d] for d in range(layout.rank))
    addr, on = addresses[where], active[where]  # [warp, lane, register]
    warps, _, regs = addr.shape
    sectors = np.zeros((warps, regs // v), dtype=np.int64)
    for w in range(warps):
        for i in range(regs // v):
            a, m = addr[w, :, i * v : (i + 1) * v], on[w, :, i * v : (i + 1) * v]
            first, last = a[m] // SECTOR_BYTES, (a[m] + elem_bytes - 1) // SECTOR_BYTES
            sectors[w, i] = np.union1d(first, last).size
    useful = np.unique(addresses[active]).size * elem_bytes
    return AccessModel(v, v * elem_bytes, sectors, int(useful), int(sectors.sum()) * SECTOR_BYTES)


def affine_addresses(shape, strides, elem_bytes: int, base: int = 0) -> np.ndarray:
    """Byte addresses ``base + elem_bytes * sum(index[d] * strides[d])`` of a tile (strides in elements).

    >>> affine_addresses([4], [2], elem_bytes=4).tolist()
    [0, 8, 16, 24]
    """
    grids = np.meshgrid(*(np.arange(s, dtype=np.int64) for s in shape), indexing="ij")
    return base + elem_bytes * sum(g * int(st) for g, st in zip(grids, strides))


# --------------------------------------------------------------------------- what the CUDA backend emits

BANKS, BANK_BYTES, WAVEFRONT_BYTES = 32, 4, 128


def memory_bytes(elem) -> int:
    """Bytes one element takes in memory on the GPU: bools are bytes, pointers 8-byte addresses."""
    if elem.is_pointer:
        return 8
    return 1 if elem.is_bool else elem.itemsize


def access_vector(op, axis) -> int:
    """Elements per thread per instruction of a tile load/store, as the CUDA backend picks them.

    The narrower of what the addresses allow (``vector_width``) and what the layout holds in
    consecutive registers along its fastest dim; 1 for scalars and tiles without a layout.
    """
    value = op.result if op.name == "tt.load" else op.value
    layout = getattr(value.type, "layout", None)
    if not value.type.is_tensor or layout is None:
        return 1
    dim = layout.params.get("order", (layout.rank - 1,))[0]
    mask = axis[op.mask] if op.mask is not None else None
    by_address = vector_width(axis[op.ptr], memory_bytes(value.type.element), dim, mask)
    return max(1, min(by_address, contiguous_elements(layout, dim)))


def wavefronts(byte_addresses: np.ndarray, access_bytes: int) -> int:
    """Wavefronts of one warp-wide shared access: per 128-byte phase, the most distinct words in one bank.

    ``byte_addresses``: the first byte each of the 32 lanes touches (inactive lanes left out).
    Lanes sharing a word share the wavefront (a broadcast, or one of equal stores wins).

        >>> wavefronts(np.arange(32) * 4, 4), wavefronts(np.arange(32) * 128, 4)
        (1, 32)
    """
    lanes_per_phase = min(32, max(1, WAVEFRONT_BYTES // access_bytes))
    words_each = max(1, access_bytes // BANK_BYTES)
    total = 0
    for start in range(0, byte_addresses.shape[0], lanes_per_phase):
        first = np.asarray(byte_addresses[start : start + lanes_per_phase]) // BANK_BYTES
        words = np.unique((first[:, None] + np.arange(words_each)[None, :]).ravel())
        total += int(np.unique(words % BANKS, return_counts=True)[1].max()) if words.size else 0
    return total


@dataclass
class SharedRoundTrip:
    """One op the CUDA backend moves through its shared scratch buffer, as warp-wide instructions.

    Each thread stores every element it holds at its row-major index, then loads the elements
    its result registers need; runs of registers adjacent in the buffer move as one vector.
    ``stores[w, i]`` / ``loads[w, i]``: wavefronts of instruction ``i`` of warp ``w``; ``*_ideal``:
    their fewest possible in all (one per 128 bytes a warp moves); a conflict is a wavefront beyond.
    """

    op: object
    elem_bytes: int
    stores: np.ndarray = field(repr=False)
    loads: np.ndarray = field(repr=False)
    store_ideal: int = 0
    load_ideal: int = 0

    def conflicts(self, kind: str = "ld") -> int:
        """Extra wavefronts of the loads (``ld``) or stores (``st``) of one program (beyond the ideal)."""
        if kind == "ld":
            return int(self.loads.sum()) - self.load_ideal
        return int(self.stores.sum()) - self.store_ideal


def _source_index(op):
    """``f(result row-major index) -> source row-major index`` of a one-source shape op, or None."""
    t, src = op.result.type, op.operands[0].type.layout
    if op.name in ("ttg.convert_layout", "tt.expand_dims", "tt.reshape"):
        return lambda lin: np.asarray(lin)
    if op.name == "tt.broadcast":
        return broadcast_index(src, t.shape, op.operands[0].type.shape)
    if op.name == "tt.trans":
        return permute_index(src, t.shape, op.attrs["order"])
    return None


def _gather(op, num_warps: int):
    """``(needed, free_map)`` of a shape op between tensors with layouts: what each result register reads.

    ``needed[w, l, r]``: source row-major index; ``free_map``: the source register of each result
    register when no data moves (else None). None when the op is not a one-source gather.
    """
    if not op.results or not op.operands or not op.result.type.is_tensor or not op.operands[0].type.is_tensor:
        return None
    src, dst = op.operands[0].type.layout, op.result.type.layout
    index = _source_index(op) if src is not None and dst is not None else None
    if index is None:
        return None
    needed = needed_indices(dst, num_warps, index)
    return needed, registers_holding(src, needed, num_warps)


def _registers(value) -> int:
    layout = getattr(value.type, "layout", None)
    return layout.in_size(REGISTER) if value.type.is_tensor and layout is not None else 0


def _same_registers(a, b) -> bool:
    ta, tb = a.type, b.type
    return ta.is_tensor and tb.is_tensor and ta.shape == tb.shape and ta.layout == tb.layout


def live_registers(module, axis, num_warps: int) -> dict:
    """Per tensor value, the registers the emitted code still reads after dead-code elimination.

    A vector load/store takes its address (and mask) from the first register of each group,
    so the others are dead; a shape op that moves no data reads the source registers it maps
    to; other ops read the same registers of operands that share their layout, else all.
    """
    live: dict = {}

    def need(v, regs) -> None:
        if v is not None and _registers(v):
            live.setdefault(v, set()).update(regs)

    for op in reversed(list(module.walk())):
        if op.name in ("tt.load", "tt.store"):
            vec = access_vector(op, axis)
            for v in (op.ptr, op.mask):
                need(v, range(0, _registers(op.ptr), vec))
            need(op.other if op.name == "tt.load" else op.value, range(_registers(op.ptr)))
            continue
        wanted = set().union(*(live.get(r, set()) for r in op.results)) if op.results else None
        if wanted == set():
            continue
        moved = _gather(op, num_warps) if op.results else None
        if moved is not None and moved[1] is not None:
            need(op.operands[0], {moved[1][r] for r in wanted})
            continue
        for v in op.operands:
            same = wanted is not None and op.results and _same_registers(v, op.result)
            need(v, wanted if same else range(_registers(v)))
    return live


def _distinct(addresses: np.ndarray, regs) -> list[int]:
    """Registers whose per-thread addresses differ (the compiler merges equal loads or stores)."""
    seen, keep = set(), []
    for r in regs:
        key = addresses[:, :, r].tobytes()
        if key not in seen:
            seen.add(key)
            keep.append(r)
    return keep


def _per_warp(addresses: np.ndarray, regs: list[int], access_bytes: list[int]) -> np.ndarray:
    warps = addresses.shape[0]
    out = np.zeros((warps, len(regs)), np.int64)
    for w in range(warps):
        for i, r in enumerate(regs):
            out[w, i] = wavefronts(addresses[w, :, r], access_bytes[i])
    return out


def _run_width(flat: np.ndarray, bits: int) -> int:
    """Registers the backend moves per shared instruction, from ``flat[w, l, r]`` (its ``vector_run``)."""
    consts = [int(c) for c in flat[0, 0] ^ flat[0, 0, 0]]
    threads = {int(t) for t in (flat[:, :, 0] ^ flat[0, 0, 0]).ravel()}
    bases = sorted({t & -t for t in threads if t} | {t for t in threads if t})
    return vector_run(consts, bases + [int(flat[0, 0, 0])], bits)


def _instructions(flat: np.ndarray, live, elem_bytes: int) -> np.ndarray:
    """Wavefronts per (warp, instruction) of one side of a round trip: runs of ``v`` registers per access.

    A run whose tail is dead shrinks to its live part (LLVM narrows the vector), e.g. to one
    scalar when only its first register is used.
    """
    v = _run_width(flat, 8 * elem_bytes)
    starts, widths = [], []
    for r in range(0, flat.shape[2], v):
        used = [j for j in range(v) if r + j in live]
        if used:
            starts.append(r + used[0])
            widths.append(1 << (used[-1] - used[0]).bit_length())
    keep = _distinct(flat, starts)
    sizes = [widths[starts.index(r)] * elem_bytes for r in keep]
    ideal = sum(max(1, 32 * size // WAVEFRONT_BYTES) for size in sizes) * flat.shape[0]
    return _per_warp(flat * elem_bytes, keep, sizes), ideal


def shared_round_trips(module, num_warps: int = 4) -> list[SharedRoundTrip]:
    """The shape ops of a CUDA-compiled ``module`` that move data through shared memory, with their traffic.

    Mirrors the backend's gather: a result register the same thread already holds is free;
    otherwise every source register is stored at its row-major index and each live result
    register is loaded back, as many adjacent registers per instruction as the backend moves.

        trips = shared_round_trips(compiled.module, num_warps=4)
        sum(t.conflicts("ld") for t in trips)       # bank conflicts of one program's loads
    """
    axis = analyze(module)
    live = live_registers(module, axis, num_warps)
    trips = []
    for op in module.walk():
        moved = _gather(op, num_warps)
        if moved is None or moved[1] is not None or not live.get(op.result):
            continue
        src = op.operands[0].type.layout
        eb = memory_bytes(op.result.type.element)
        written = needed_indices(src, num_warps, lambda lin: np.asarray(lin))
        stores = _instructions(written, set(range(written.shape[2])), eb)
        loads = _instructions(moved[0], live[op.result], eb)
        trips.append(SharedRoundTrip(op, eb, stores[0], loads[0], stores[1], loads[1]))
    return trips + buffer_round_trips(module)


def buffer_round_trips(module) -> list[SharedRoundTrip]:
    """The explicit shared buffers (``ttg.local_alloc``) with the traffic of their stores and loads.

    One entry per buffer, its ``op`` the allocation; each ``local_store`` / ``local_load`` adds
    its warp-wide instructions as ``bank_conflicts`` models them.
    """
    accesses: dict = {}
    for op in module.walk():
        if op.name in ("ttg.local_store", "ttg.local_load") and op.operands[0].defining_op is not None:
            accesses.setdefault(op.operands[0].defining_op, []).append(op)
    trips = []
    for alloc, ops in accesses.items():
        shared, eb = alloc.result.type.layout, memory_bytes(alloc.result.type.element)
        parts: dict = {"st": ([], 0), "ld": ([], 0)}
        for op in ops:
            reg = (op.operands[1] if op.name == "ttg.local_store" else op.result).type.layout
            model = bank_conflicts(shared, reg, eb)
            kind = "st" if op.name == "ttg.local_store" else "ld"
            arrays, ideal = parts[kind]
            parts[kind] = (arrays + [model.per_instruction], ideal + model.ideal * model.per_instruction.size)
        (st, st_ideal), (ld, ld_ideal) = parts["st"], parts["ld"]
        empty = np.zeros((1, 0), np.int64)
        stores = np.concatenate(st, axis=1) if st else empty
        loads = np.concatenate(ld, axis=1) if ld else empty
        trips.append(SharedRoundTrip(alloc, eb, stores, loads, st_ideal, ld_ideal))
    return trips
