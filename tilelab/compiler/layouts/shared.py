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

from .linear import LANE, OFFSET, REGISTER, LinearLayout, log2_exact


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
    (modulo ``swizzle_bytes / 16``, every ``128 / swizzle_bytes`` rows): the pattern the
    hardware applies to address bits 4-6 from bits 7-9, so a buffer must start at a
    multiple of the pattern's repeat (1024, 512 or 256 bytes) for the two to agree.
    The fastest dim spans ``swizzle_bytes`` (one *swizzle atom* per row), or a multiple
    of it: then the tile is stored as column blocks one atom wide, each block all rows
    deep, one after the other (how wgmma reads a 128-column f16 operand stored N-major):

        >>> L = nvmma_shared([16, 128], elem_bytes=2, swizzle_bytes=128)
        >>> L.apply(offset=[0, 64, 16 * 64]).tolist()   # row 1 chunk 0 holds chunk 1; block 1
        [[0, 0], [1, 8], [0, 64]]
    """
    order = list(order) if order is not None else list(range(len(shape)))[::-1]
    if swizzle_bytes not in (32, 64, 128):
        raise ValueError(f"swizzle_bytes must be 32, 64 or 128, got {swizzle_bytes}")
    row_bytes = shape[order[0]] * elem_bytes
    if row_bytes % swizzle_bytes or (row_bytes != swizzle_bytes and len(shape) < 2):
        raise ValueError(f"the fastest dim spans {row_bytes} bytes, not a multiple of the {swizzle_bytes}B swizzle")
    vec = max(1, 16 // elem_bytes)
    max_phase = swizzle_bytes // 16
    per_phase = 128 // swizzle_bytes
    width = swizzle_bytes // elem_bytes
    atom_shape = list(shape)
    atom_shape[order[0]] = width
    atom = swizzled_shared(atom_shape, vec, per_phase, max_phase, order)
    vectors = [list(v) for v in atom.in_bases(OFFSET)]
    rows = log2_exact(width, "atom width") + log2_exact(shape[order[1]], "tile dim") if len(shape) > 1 else 0
    for b in range(log2_exact(row_bytes // swizzle_bytes, "atoms per row")):
        v = [0] * len(shape)
        v[order[0]] = width << b
        vectors.insert(rows + b, v)
    return LinearLayout({OFFSET: vectors}, [int(s) for s in shape]).named(
        f"#nvmma_shared<swizzle={swizzle_bytes}B, elemBytes={elem_bytes}, order={list(order)}>",
        kind="nvmma_shared",
        swizzle_bytes=swizzle_bytes,
        vec=vec,
        per_phase=per_phase,
        max_phase=max_phase,
        order=tuple(order),
    )


def conversion_shared(
    writer: LinearLayout, reader: LinearLayout, elem_bytes: int, writer_runs: bool = False
) -> LinearLayout | None:
    """A buffer laid out for one conversion: the steps both layouts hold in registers share 16-byte runs, and
    the lanes of one access phase of either side fall on different banks. None where a layout's steps are
    not single bits of the tile (then the ``swizzled_shared`` candidates serve).

    Offsets, lowest first: the register steps ``writer`` and ``reader`` have in common (up to 16 bytes:
    each side moves that run with one access, though its registers need not be neighbours, nor the
    steps along one dim: an mma accumulator's columns ``c, c+1`` and rows ``r, r+8``); then the
    writer's lanes of one phase (the lanes whose accesses the hardware serves together), so that its
    stores take distinct banks; then the rest of the tile, fastest dim first, where each of the
    reader's phase lanes the writer's do not cover is XORed with a bank place the reader's lanes
    leave free (a swizzle: the reader's loads take distinct banks too).

    ``writer_runs``: the writer's other register steps fill the run after the common ones, so that the
    writer moves 16 bytes at once where the reader moves less (a row reduction's result, rows 8 apart in
    a thread's registers, to a layout of one row a thread); the reader's accesses may then conflict
    where those steps are not its phase lanes (the caller weighs the two).

    >>> from tilelab.compiler.layouts import blocked
    >>> W = blocked([16, 16], [2, 2], [8, 4], [1, 1], [1, 0])   # 2x2 blocks per thread
    >>> R = blocked([16, 16], [2, 4], [8, 4], [1, 1], [1, 0])   # 2x4 blocks per thread
    >>> conversion_shared(W, R, 4).in_bases("offset")[:2]       # both hold (r, c+1) and (r+1, c)
    ((0, 1), (1, 0))
    """
    if writer.shape != reader.shape:
        return None

    def flats(layout, dim):
        out = [layout.flatten(v) for v in layout.in_bases(dim)]
        return None if any(f & (f - 1) for f in out) else [f for f in out if f]

    parts = [flats(layout, dim) for layout in (writer, reader) for dim in (REGISTER, LANE)]
    if any(p is None for p in parts):
        return None
    w_regs, w_lanes, r_regs, r_lanes = parts
    most = max(1, 16 // elem_bytes).bit_length() - 1  # steps of a 16-byte run
    common = [f for f in w_regs if f in r_regs][:most]
    run = (common + [f for f in w_regs if f not in common])[:most] if writer_runs else common

    def phase_lanes(steps):  # lane bits of one access phase: the bank places past a run of ``steps``
        return min(5, (128 // ((1 << steps) * elem_bytes)).bit_length() - 1)

    offsets = run + [f for f in w_lanes if f not in run][: phase_lanes(len(run))]
    phase = r_lanes[: phase_lanes(len(common))]  # the reader's: those on a bank place already are served
    free = [p for p in range(len(run), len(offsets)) if offsets[p] not in phase]
    movers = {f: offsets[free.pop(0)] for f in phase if f not in offsets and free}
    n = writer.num_elements.bit_length() - 1
    for bit in range(n):  # the rest of the tile, fastest dim first (row-major flat bits, lowest first)
        f = 1 << bit
        if f not in offsets:
            offsets.append(f ^ movers.get(f, 0))
    return LinearLayout({OFFSET: [writer.unflatten(f) for f in offsets]}, list(writer.shape))
