"""Shared-memory layouts: which tile element sits at each offset of a shared buffer.

Input dim ``offset`` (in elements), output dims ``dim0``, ``dim1``, .... A plain
row-major buffer is the identity; *swizzled* buffers XOR the column group with a
*phase* taken from the row so that a column of a tile spreads over all 32 banks:

    phase       = (row // per_phase) % max_phase
    column'     = ((column // vec) ^ phase) * vec + column % vec

Because XOR is linear over GF(2), a swizzle is still a ``LinearLayout``: each row
bit's basis vector gets a column part.
"""

from __future__ import annotations

from .linear import OFFSET, LinearLayout, log2_exact


def swizzled_shared(shape, vec: int, per_phase: int, max_phase: int, order) -> LinearLayout:
    """Triton's ``#swizzled_shared``: dims stored in ``order`` (fastest first), the two fastest swizzled.

    >>> L = swizzled_shared([8, 8], vec=1, per_phase=1, max_phase=8, order=[1, 0])
    >>> L.apply(offset=8 * 3 + 0).tolist()   # row 3, stored column 0 holds column 3
    [3, 3]
    """
    shape = [int(s) for s in shape]
    rank = len(shape)
    if sorted(order) != list(range(rank)):
        raise ValueError(f"order {list(order)} is not a permutation of the dims")
    for what, value in (("vec", vec), ("per_phase", per_phase), ("max_phase", max_phase)):
        log2_exact(value, what)
    vectors: list[list[int]] = []
    for pos, d in enumerate(order):
        for b in range(log2_exact(shape[d], "tile dim")):
            v = [0] * rank
            v[d] = 1 << b
            if pos == 1:
                col = order[0]
                v[col] = (vec * (((1 << b) // per_phase) % max_phase)) % shape[col]
            vectors.append(v)
    name = f"#swizzled_shared<vec={vec}, perPhase={per_phase}, maxPhase={max_phase}, order={list(order)}>"
    params = {"kind": "swizzled_shared", "vec": vec, "per_phase": per_phase, "max_phase": max_phase}
    return LinearLayout({OFFSET: vectors}, shape).named(name, order=tuple(order), **params)


def row_major_shared(shape, order=None) -> LinearLayout:
    """An unswizzled buffer: dims stored in ``order`` (default row-major)."""
    order = list(order) if order is not None else list(range(len(shape)))[::-1]
    return swizzled_shared(shape, 1, 1, 1, order)


def nvmma_shared(shape, elem_bytes: int, swizzle_bytes: int = 128, order=None) -> LinearLayout:
    """The 32/64/128-byte swizzle of TMA and wgmma, as a ``swizzled_shared`` layout.

    16-byte chunks of a ``swizzle_bytes``-wide row are XORed with the row index
    (modulo ``swizzle_bytes / 16``); the fastest dim must span exactly
    ``swizzle_bytes`` (one swizzle atom).
    """
    order = list(order) if order is not None else list(range(len(shape)))[::-1]
    if swizzle_bytes not in (32, 64, 128):
        raise ValueError(f"swizzle_bytes must be 32, 64 or 128, got {swizzle_bytes}")
    row_bytes = shape[order[0]] * elem_bytes
    if row_bytes != swizzle_bytes:
        raise ValueError(f"the fastest dim spans {row_bytes} bytes; a {swizzle_bytes}B swizzle needs exactly that")
    vec = max(1, 16 // elem_bytes)
    max_phase = swizzle_bytes // 16
    per_phase = 128 // swizzle_bytes
    return swizzled_shared(shape, vec, per_phase, max_phase, order).named(
        f"#nvmma_shared<swizzle={swizzle_bytes}B, elemBytes={elem_bytes}, order={list(order)}>",
        kind="nvmma_shared",
        swizzle_bytes=swizzle_bytes,
        vec=vec,
        per_phase=per_phase,
        max_phase=max_phase,
        order=tuple(order),
    )
