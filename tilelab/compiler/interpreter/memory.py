"""The interpreter's memory: the kernel's array arguments, addressed by raw bytes.

A pointer in the interpreter is what it is on a GPU: an int64 byte address. A pointer
argument's value is ``arr.ctypes.data``; ``x_ptr + i`` is ``data + i * itemsize``. To
load or store, the interpreter finds, for every address, the argument array that holds
it (``np.searchsorted`` over the sorted array starts), then gathers or scatters through
a byte view of that array's memory. An address outside every array is never touched:
``Memory.locate`` finds it first, so a buggy kernel raises an error instead of crashing the
process.

Arrays may be non-contiguous (a transposed view, a slice with a step, negative strides):
an array's *span* runs from the lowest byte its strides reach to the highest. Arrays
whose spans overlap or touch (``x`` and ``x[1:]``) share one region of memory.
"""

from __future__ import annotations

import bisect
import ctypes
from dataclasses import dataclass, field

import numpy as np


def array_span(arr: np.ndarray) -> tuple[int, int]:
    """The byte range ``[lo, hi)`` that ``arr``'s elements occupy (empty for size 0).

    >>> a = np.zeros((4, 4), np.float32)
    >>> lo, hi = array_span(a[:, ::2])  # every other column: still 4 rows of 16 bytes
    >>> hi - lo
    56
    """
    base = arr.ctypes.data
    if arr.size == 0:
        return base, base
    low = sum(min(0, (n - 1) * s) for n, s in zip(arr.shape, arr.strides))
    high = sum(max(0, (n - 1) * s) for n, s in zip(arr.shape, arr.strides))
    return base + low, base + high + arr.itemsize


@dataclass
class ArgSpan:
    """The bytes of one pointer argument: its parameter name and ``[lo, hi)``."""

    name: str
    lo: int
    hi: int

    def describe(self) -> str:
        return f"{self.name}: [0x{self.lo:x}, 0x{self.hi:x}) {self.hi - self.lo} bytes"


@dataclass
class Region:
    """A contiguous byte range made of one or more argument spans, with typed views."""

    lo: int
    hi: int
    view: np.ndarray = field(init=False, repr=False)
    typed: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        self.view = np.ctypeslib.as_array((ctypes.c_uint8 * (self.hi - self.lo)).from_address(self.lo))

    def _index(self, addrs: np.ndarray, dtype: np.dtype):
        """Element indices into the typed view, or byte indices when some are misaligned."""
        size = dtype.itemsize
        offsets = addrs - self.lo
        if size == 1 or not (offsets & (size - 1)).any():
            typed = self.typed.get(dtype)
            if typed is None:
                usable = len(self.view) - len(self.view) % size
                typed = self.typed[dtype] = self.view[:usable].view(dtype)
            return typed, offsets >> (size.bit_length() - 1)
        return None, offsets[:, None] + np.arange(size)

    def read(self, addrs: np.ndarray, dtype: np.dtype) -> np.ndarray:
        typed, index = self._index(addrs, dtype)
        if typed is not None:
            return typed[index]
        return np.ascontiguousarray(self.view[index]).view(dtype).reshape(-1)

    def write(self, addrs: np.ndarray, values: np.ndarray) -> None:
        typed, index = self._index(addrs, values.dtype)
        if typed is not None:
            typed[index] = values
        else:
            self.view[index] = np.ascontiguousarray(values).reshape(-1, 1).view(np.uint8)


class Memory:
    """Loads and stores through the kernel's array arguments.

    ``locate`` checks a batch of addresses and says which region holds them all;
    ``read`` and ``write`` then take that region (``None``: the addresses span several
    regions, sorted out address by address).
    """

    def __init__(self, arrays: list[tuple[str, np.ndarray]]):
        self.spans = [ArgSpan(name, *array_span(a)) for name, a in arrays]
        self.regions = _merge([s for s in self.spans if s.hi > s.lo])
        self.starts = np.array([r.lo for r in self.regions], dtype=np.int64)
        self.ends = np.array([r.hi for r in self.regions], dtype=np.int64)
        self._starts = [r.lo for r in self.regions]

    def locate(self, addrs: np.ndarray, itemsize: int) -> tuple[Region | None, int]:
        """``(region, -1)`` when every access fits in ``region``; ``(None, -1)`` when they
        fit in several regions; ``(None, i)`` when access ``i`` is the first to leave
        every array."""
        if len(addrs) == 0:
            return None, -1
        low, high = int(addrs.min()), int(addrs.max())
        rid = bisect.bisect_right(self._starts, low) - 1
        if rid >= 0 and high + itemsize <= self.regions[rid].hi:
            return self.regions[rid], -1
        if not self.regions:
            return None, 0
        ids = self._region_ids(addrs)
        ok = (ids >= 0) & (addrs + itemsize <= self.ends[ids])
        return None, (-1 if ok.all() else int(np.argmin(ok)))

    def read(self, addrs: np.ndarray, dtype: np.dtype, region: Region | None) -> np.ndarray:
        """The values of ``dtype`` at ``addrs`` (accepted by ``locate``)."""
        if region is not None:
            return region.read(addrs, dtype)
        out = np.empty(addrs.shape, dtype)
        for rid, sel in self._groups(addrs):
            out[sel] = self.regions[rid].read(addrs[sel], dtype)
        return out

    def write(self, addrs: np.ndarray, values: np.ndarray, region: Region | None) -> None:
        """Store ``values`` at ``addrs`` (a later lane wins on a repeated address)."""
        if region is not None:
            region.write(addrs, values)
            return
        for rid, sel in self._groups(addrs):
            self.regions[rid].write(addrs[sel], values[sel])

    def owner(self, addr: int) -> str | None:
        """The name of the first argument whose span holds ``addr``."""
        for span in self.spans:
            if span.lo <= addr < span.hi:
                return span.name
        return None

    def describe(self) -> list[str]:
        """One line per pointer argument: its name and byte range."""
        return [span.describe() for span in self.spans]

    def _region_ids(self, addrs: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.starts, addrs, side="right") - 1

    def _groups(self, addrs: np.ndarray):
        ids = self._region_ids(addrs)
        for rid in np.unique(ids):
            yield int(rid), ids == rid


def _merge(spans: list[ArgSpan]) -> list[Region]:
    """Regions covering the spans, overlapping or touching spans merged, sorted by address."""
    regions: list[list[int]] = []
    for span in sorted(spans, key=lambda s: s.lo):
        if regions and span.lo <= regions[-1][1]:
            regions[-1][1] = max(regions[-1][1], span.hi)
        else:
            regions.append([span.lo, span.hi])
    return [Region(lo, hi) for lo, hi in regions]
