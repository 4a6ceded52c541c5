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

from ..layouts import LinearLayout, contiguous_elements
from .axis_info import AxisInfo

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
