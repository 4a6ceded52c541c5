"""Which element each register of each thread holds, as row-major indices: the gather math.

A distributed layout gives register ``r`` of lane ``l`` of warp ``w`` one element of the
tile. Lowering a shape op (``broadcast``, ``trans``, ``convert_layout``...) and modelling
its shared-memory traffic both ask the same questions of that map, answered here with numpy
at compile time:

* ``needed_indices`` -- for every (warp, lane, register) of the result, the row-major
  index of the source element it must hold;
* ``registers_holding`` -- whether the same thread already holds each of those (then the
  op is free: a renaming of registers), and in which register;
* ``vector_run`` -- how many registers in a row sit side by side in a row-major buffer
  (one vector instruction moves them);
* ``vector_groups`` -- the same question for registers that need not be neighbours: which
  registers of a thread sit side by side in a buffer, one group per vector instruction.

The CUDA lowering (``backends/cuda/lower_shape.py``) emits code from these answers, the
memory-access model (``analysis/memory_access.py``) counts the same instructions.

    >>> from tilelab.compiler.layouts import blocked
    >>> L = blocked([64], size_per_thread=[2], threads_per_warp=[32], warps_per_cta=[1], order=[0])
    >>> needed_indices(L, 1, lambda i: i)[0, 1].tolist()    # lane 1 holds elements 2 and 3
    [2, 3]
    >>> registers_holding(L, needed_indices(L, 1, lambda i: i), 1)   # the identity gather is free
    [0, 1]
"""

from __future__ import annotations

import numpy as np

from .linear import LANE, REGISTER, WARP, LinearLayout


def lanes_of(layout: LinearLayout) -> int:
    """The lanes of a warp the layout spreads over: 32 (NVIDIA), or 64 for a layout of AMD wavefronts."""
    return max(32, layout.in_size(LANE)) if LANE in layout.in_dims else 32


def hardware_grid(layout: LinearLayout, num_warps: int) -> dict[str, np.ndarray]:
    """Every (warp, lane, register) of a program as broadcastable index arrays (32 lanes, or the layout's 64)."""
    return {
        WARP: np.arange(num_warps)[:, None, None],
        LANE: np.arange(lanes_of(layout))[None, :, None],
        REGISTER: np.arange(layout.in_size(REGISTER))[None, None, :],
    }


def flat_of(layout: LinearLayout, coords: np.ndarray) -> np.ndarray:
    """Row-major indices of coordinate vectors ``(..., rank)``.

    >>> from tilelab.compiler.layouts import blocked
    >>> L = blocked([4, 8], size_per_thread=[1, 1], threads_per_warp=[4, 8], warps_per_cta=[1, 1], order=[1, 0])
    >>> int(flat_of(L, np.array([2, 3])))
    19
    """
    shifts = np.array([layout.flatten([1 if d == i else 0 for d in range(layout.rank)]) for i in range(layout.rank)])
    return (coords * shifts).sum(axis=-1) if layout.rank else np.zeros(coords.shape[:-1], np.int64)


def coords_of(shape, flat: np.ndarray) -> np.ndarray:
    """The inverse of ``flat_of`` for a row-major ``shape``.

    >>> coords_of((4, 8), np.array(19)).tolist()
    [2, 3]
    """
    out, rest = [], flat
    for size in reversed(shape):
        out.append(rest % size)
        rest = rest // size
    return np.stack(out[::-1], axis=-1) if shape else np.zeros((*flat.shape, 0), np.int64)


def registers_holding(src: LinearLayout, needed: np.ndarray, num_warps: int) -> list[int] | None:
    """Per result register, the source register the same thread holds it in (or None: data must move).

    ``needed[w, l, r]`` is the source row-major index that thread (w, l) needs for register r.
    """
    if needed.size and (needed.min() < 0 or needed.max() >= src.num_elements):
        return None  # an element the source does not have
    if REGISTER in src.in_dims:
        regs = src.holders()[needed, list(src.in_dims).index(REGISTER)]
    else:
        regs = np.zeros_like(needed)
    grid = hardware_grid(src, num_warps)
    held = src.apply_flat(**{d: (regs if d == REGISTER else grid[d]) for d in src.in_dims})
    if held.shape != needed.shape or not np.array_equal(held, needed):
        return None
    first = regs[0, 0]
    if not np.all(regs == first):
        return None
    return [int(r) for r in first]


def needed_indices(dst: LinearLayout, num_warps: int, source_index) -> np.ndarray:
    """``source_index(result row-major index)`` for every (warp, lane, register) of ``dst``."""
    grid = {d: a for d, a in hardware_grid(dst, num_warps).items() if d in dst.in_dims}
    lin = dst.apply_flat(**grid)
    lin = np.broadcast_to(lin, (num_warps, lanes_of(dst), dst.in_size(REGISTER)))
    return np.asarray(source_index(lin), dtype=np.int64)


def broadcast_index(src: LinearLayout, shape, src_shape):
    """``f(result row-major index) -> source row-major index`` of a broadcast from ``src_shape`` to ``shape``.

    >>> from tilelab.compiler.layouts import blocked
    >>> S = blocked([4, 1], size_per_thread=[1, 1], threads_per_warp=[4, 8], warps_per_cta=[1, 1], order=[1, 0])
    >>> broadcast_index(S, (4, 8), (4, 1))(np.arange(16)).tolist()     # every element of a row reads the row's one
    [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1]
    """
    keep = np.array([1 if a == b else 0 for a, b in zip(src_shape, shape)])
    return lambda lin: flat_of(src, coords_of(shape, np.asarray(lin)) * keep)


def permute_index(src: LinearLayout, shape, order):
    """``f(result row-major index) -> source row-major index`` of ``trans``: result dim i is source dim ``order[i]``.

    >>> from tilelab.compiler.layouts import blocked
    >>> S = blocked([2, 4], size_per_thread=[1, 1], threads_per_warp=[4, 8], warps_per_cta=[1, 1], order=[1, 0])
    >>> permute_index(S, (4, 2), [1, 0])(np.arange(8)).tolist()       # result (i, j) is source (j, i)
    [0, 4, 1, 5, 2, 6, 3, 7]
    """
    inverse = np.argsort(list(order))
    return lambda lin: flat_of(src, coords_of(shape, np.asarray(lin))[..., inverse])


def vector_run(consts: list[int], thread_flats: list[int], bits: int) -> int:
    """The widest ``v`` (at most 128 bits) such that registers ``r..r+v-1`` are ``v`` adjacent elements.

    Element of register ``r`` is at ``T ^ consts[r]``; every per-thread part ``T`` is a
    XOR of ``thread_flats``. A run of ``v`` needs ``consts[r + j] == consts[r] + j`` with
    ``consts[r]`` and every thread flat multiples of ``v`` (then XOR is an add).

    >>> vector_run([0, 1, 2, 3, 64, 65, 66, 67], [4, 8], 16)
    4
    """
    v = max(1, min(128 // bits, len(consts)))
    while v > 1:
        aligned = all(f % v == 0 for f in thread_flats) and len(consts) % v == 0
        if aligned and all(
            consts[r] % v == 0 and consts[r : r + v] == list(range(consts[r], consts[r] + v))
            for r in range(0, len(consts), v)
        ):
            return v
        v //= 2
    return 1


def vector_bits(images: list[int], others: list[int], limit: int) -> list[int]:
    """Register bits whose offsets are ``1, 2, 4, ...`` (in that order), as many as ``limit`` elements allow.

    ``images[i]`` is the buffer offset register bit ``i`` moves a thread's element by; ``others``
    the offsets of everything else an access starts from (lane and warp bits, the first
    register's own offset). ``k`` bits qualify when every offset outside them is a multiple of
    ``2^k``: then the ``2^k`` registers spanned by the bits hold ``base + 0 .. base + 2^k - 1``
    with ``base`` aligned, whatever their register numbers (an mma accumulator's columns ``c, c+1``
    and its rows ``r, r+8`` fill one 16-byte run of a buffer laid out for it).

    >>> vector_bits([1, 64, 2, 4], [8, 16], 4)     # register bits 0 and 2; bit 1 moves by 64
    [0, 2]
    """
    chosen: list[int] = []
    while (2 << len(chosen)) <= limit:
        want = 1 << len(chosen)
        found = next((i for i, im in enumerate(images) if im == want and i not in chosen), None)
        if found is None:
            break
        chosen.append(found)
    while chosen:
        low = (1 << len(chosen)) - 1
        if not any(im & low for i, im in enumerate(images) if i not in chosen) and not any(o & low for o in others):
            break
        chosen.pop()
    return chosen


def vector_groups(consts: list[int], thread_flats: list[int], bits: int) -> list[list[int]]:
    """The registers one vector instruction moves, group by group (each in buffer order), 16 bytes at most.

    Register ``r``'s element is at ``T ^ consts[r]``, every per-thread part ``T`` a XOR of
    ``thread_flats`` (as for ``vector_run``). Where ``consts`` is linear in the register number
    (a linear layout's registers), a group is the span of the ``vector_bits`` over one register;
    else groups are ``vector_run`` neighbours. Groups come in order of their first register.

    >>> vector_groups([0, 1, 2, 3, 64, 65, 66, 67], [4, 8], 16)       # neighbours, as vector_run finds
    [[0, 1, 2, 3], [4, 5, 6, 7]]
    >>> vector_groups([0, 1, 512, 513, 2, 3, 514, 515], [4, 8], 32)   # bit 2 (offset 2) pairs with bit 0
    [[0, 1, 4, 5], [2, 3, 6, 7]]
    """
    n = len(consts)
    log = n.bit_length() - 1
    images = [consts[1 << i] ^ consts[0] for i in range(log)] if n and not n & (n - 1) else None
    if images is None or any(consts[r] ^ consts[0] != _xor_of(images, r) for r in range(n)):
        v = vector_run(consts, thread_flats, bits)
        return [list(range(r, r + v)) for r in range(0, n, v)]
    chosen = vector_bits(images, [*thread_flats, consts[0]], max(1, 128 // bits))
    free = [i for i in range(log) if i not in chosen]
    spans = [_xor_of([1 << c for c in chosen], j) for j in range(1 << len(chosen))]
    return [[_xor_of([1 << f for f in free], m) ^ s for s in spans] for m in range(1 << len(free))]


def _xor_of(vectors: list[int], select: int) -> int:
    """The XOR of the ``vectors`` picked by the set bits of ``select``."""
    out = 0
    for i, v in enumerate(vectors):
        if select >> i & 1:
            out ^= v
    return out
