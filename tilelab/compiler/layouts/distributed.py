"""Distributed layouts: how a tile is spread over the registers, lanes and warps of a program.

Each constructor builds a ``LinearLayout`` with input dims ``register``, ``lane``,
``warp`` and output dims ``dim0``, ``dim1``, ...:

* ``blocked`` -- the default layout of elementwise code: each thread owns a small
  contiguous block, threads then warps tile the rest (Triton's ``#blocked``);
* ``slice_layout`` -- a parent layout with one dimension removed (what a reduction
  along that dimension leaves);
* ``mma_m16n8k16_accumulator`` -- the C/D fragment of ``mma.sync.m16n8k16``;
* ``dot_operand`` -- the A and B fragments that feed that instruction;
* ``wgmma_accumulator`` -- the D fragment of Hopper's ``wgmma.mma_async`` (four warps per 64 rows).

When the tile is smaller than what the threads cover, extra lanes and warps get
zero basis vectors (they hold copies); when it is larger, the pattern repeats in
more registers per thread.
"""

from __future__ import annotations

from collections.abc import Sequence

from .linear import LANE, REGISTER, WARP, LinearLayout, log2_exact


def _unit(rank: int, dim: int, value: int) -> list[int]:
    v = [0] * rank
    v[dim] = value
    return v


def _fit_to_shape(bases: dict[str, list[list[int]]], shape: Sequence[int], order: Sequence[int]):
    """Clip and extend ``bases`` (tiled from covering sizes) to exactly ``shape``.

    Too large along a dim: lane and warp bits beyond it become zero (broadcast),
    register bits beyond it are dropped (a thread keeps one copy). Too small: new
    register bits repeat the pattern, dims taken in ``order`` (fastest first).
    """
    rank = len(shape)
    for in_dim, vectors in bases.items():
        clipped = [[c if c < s else 0 for c, s in zip(v, shape)] for v in vectors]
        if in_dim == REGISTER:
            clipped = [v for v, orig in zip(clipped, vectors) if v == orig or any(v)]
        bases[in_dim] = clipped
    covered = [1] * rank
    for vectors in bases.values():
        for v in vectors:
            for d, c in enumerate(v):
                covered[d] = max(covered[d], 2 * c)
    for d in order:
        while covered[d] < shape[d]:
            bases[REGISTER].append(_unit(rank, d, covered[d]))
            covered[d] *= 2
    return bases


def blocked(shape, size_per_thread, threads_per_warp, warps_per_cta, order) -> LinearLayout:
    """Triton's blocked layout: per dim, a thread's block, then lanes, then warps.

    ``order`` lists dims fastest first (``[1, 0]`` is row-major). Along each dim the
    registers of a thread cover ``size_per_thread`` consecutive elements, lanes
    the next ``threads_per_warp`` blocks, warps the next ``warps_per_cta``.

        >>> L = blocked([128], [4], [32], [1], [0])
        >>> L.apply(lane=1, register=[0, 1, 2, 3])[:, 0].tolist()
        [4, 5, 6, 7]
    """
    shape = [int(s) for s in shape]
    rank = len(shape)
    args = {"size_per_thread": size_per_thread, "threads_per_warp": threads_per_warp, "warps_per_cta": warps_per_cta}
    for what, values in {**args, "order": order}.items():
        if len(values) != rank:
            raise ValueError(f"{what} has {len(values)} entries for a rank-{rank} tile")
    if sorted(order) != list(range(rank)):
        raise ValueError(f"order {list(order)} is not a permutation of the dims")
    for d in range(rank):
        log2_exact(shape[d], "tile dim")
    bases: dict[str, list[list[int]]] = {REGISTER: [], LANE: [], WARP: []}
    covered = [1] * rank
    for in_dim, sizes in zip((REGISTER, LANE, WARP), args.values()):
        for d in order:
            for _ in range(log2_exact(sizes[d], f"{in_dim} count")):
                bases[in_dim].append(_unit(rank, d, covered[d]))
                covered[d] *= 2
    bases = _fit_to_shape(bases, shape, order)
    name = (
        f"#blocked<sizePerThread={_ls(size_per_thread)}, threadsPerWarp={_ls(threads_per_warp)}, "
        f"warpsPerCTA={_ls(warps_per_cta)}, order={_ls(order)}>"
    )
    params = {k: tuple(v) for k, v in args.items()}
    return LinearLayout(bases, shape).named(name, kind="blocked", shape=tuple(shape), order=tuple(order), **params)


def default_blocked(shape, num_warps: int = 4, threads_per_warp: int = 32) -> LinearLayout:
    """The layout a fresh tile gets: one element per thread, lanes then warps along the last dims.

    For a 64x64 tile and 4 warps: ``threadsPerWarp=[1, 32], warpsPerCTA=[4, 1], order=[1, 0]``.
    The coalesce pass later widens ``size_per_thread`` where the addresses allow.
    """
    rank = len(shape)
    order = list(range(rank))[::-1]
    tpw, wpc = [1] * rank, [1] * rank
    lanes, warps = threads_per_warp, num_warps
    for d in order:
        tpw[d] = min(lanes, shape[d])
        lanes //= tpw[d]
    tpw[order[-1]] *= lanes
    for d in order[::-1]:
        wpc[d] = min(warps, max(1, shape[d] // tpw[d]))
        warps //= wpc[d]
    wpc[order[0]] *= warps
    return blocked(shape, [1] * rank, tpw, wpc, order)


def slice_layout(parent: LinearLayout, dim: int) -> LinearLayout:
    """The parent layout with output dim ``dim`` removed (``tl.sum(x, axis=dim)`` gives it).

    Threads that differed only along ``dim`` now hold the same elements (zero
    lane/warp vectors); registers that did are merged.
    """
    if not 0 <= dim < parent.rank:
        raise ValueError(f"cannot slice dim {dim} of a rank-{parent.rank} layout")
    bases = {}
    for in_dim, vectors in parent.bases:
        kept = [[c for d, c in enumerate(v) if d != dim] for v in vectors]
        if in_dim == REGISTER:
            kept = [v for v in kept if any(v)]
        bases[in_dim] = kept
    shape = [s for d, s in enumerate(parent.shape) if d != dim]
    return LinearLayout(bases, shape).named(f"#slice<dim={dim}, parent={parent}>", kind="slice", dim=dim, parent=parent)


def joined_layout(layout: LinearLayout) -> LinearLayout:
    """The layout of ``join`` of two tiles in ``layout``: the new last dim (size 2) in each thread's first register bit.

    Each thread already holds both elements it joins: no data moves (as Triton's join).

        >>> from tilelab.compiler.layouts import blocked
        >>> L = blocked([8], size_per_thread=[2], threads_per_warp=[4], warps_per_cta=[1], order=[0])
        >>> joined_layout(L).in_bases("register")
        ((0, 1), (1, 0))
    """
    pair = (0,) * layout.rank + (1,)
    bases = {REGISTER: [pair]}
    for in_dim, vectors in layout.bases:
        lifted = [(*v, 0) for v in vectors]
        bases[in_dim] = bases.get(in_dim, []) + lifted
    return LinearLayout(bases, [*layout.shape, 2])


def split_layout(layout: LinearLayout) -> LinearLayout | None:
    """Each result's layout of ``split`` of a tile in ``layout``, when the last dim (size 2) is one register bit
    and nothing else: each thread keeps its elements. ``None`` where the halves sit in other threads."""
    pair = (0,) * (layout.rank - 1) + (1,)
    if pair not in layout.in_bases(REGISTER):
        return None
    bases = {}
    for in_dim, vectors in layout.bases:
        if any(v[-1] and v != pair for v in vectors):
            return None
        bases[in_dim] = [v[:-1] for v in vectors if not (in_dim == REGISTER and v == pair)]
    return LinearLayout(bases, layout.shape[:-1])


def reshaped_layout(layout: LinearLayout, shape) -> LinearLayout:
    """``layout`` seen through a row-major reshape to ``shape``: every element stays in its thread and register.

    Sizes are powers of two, so the row-major index is the coordinates' bits side by side: each basis vector
    flattens to an index of the same bits, which the new shape splits again.

        >>> from tilelab.compiler.layouts import blocked
        >>> L = blocked([4, 2], size_per_thread=[1, 2], threads_per_warp=[4, 1], warps_per_cta=[1, 1], order=[1, 0])
        >>> reshaped_layout(L, [8]).in_bases("register"), reshaped_layout(L, [8]).in_bases("lane")
        (((1,),), ((2,), (4,)))
    """
    target = LinearLayout({}, list(shape))
    bases = {d: [target.unflatten(layout.flatten(v)) for v in vectors] for d, vectors in layout.bases}
    return LinearLayout(bases, list(shape))


def mma_m16n8k16_accumulator(shape, warps_per_cta) -> LinearLayout:
    """The C/D fragment of ``mma.sync.aligned.m16n8k16`` tiled over warps and registers.

    Per 16x8 tile, lane ``t`` holds rows ``t//4`` and ``t//4 + 8``, columns
    ``2*(t%4)`` and ``2*(t%4) + 1`` (PTX ISA, "Matrix Fragments for mma.m16n8k16"):
    register bit 0 steps a column, register bit 1 steps 8 rows. Warps tile N first,
    then M; larger tiles repeat in registers, N first.

    A 3-d tile (a batched ``tl.dot``: ``[batch, M, N]``, ``warps_per_cta = [wb, wm, wn]``) is
    the same pattern in every batch: ``wb`` warps take batches of their own first, more batches
    repeat in registers after N and M.

        >>> L = mma_m16n8k16_accumulator([2, 16, 8], [2, 1, 1])
        >>> L.apply(register=[0, 1, 2], lane=5, warp=1).tolist()
        [[1, 1, 2], [1, 1, 3], [1, 9, 2]]
    """
    *batch, m, n = (int(s) for s in shape)
    *wb, wm, wn = (int(w) for w in warps_per_cta)
    if len(batch) > 1 or len(wb) != len(batch):
        raise ValueError(f"an mma accumulator is 2-d or 3-d (a batch dim first), got shape {list(shape)}")
    if m < 16 or n < 8:
        raise ValueError(f"an mma m16n8 accumulator needs a tile of at least 16x8, got {m}x{n}")
    lead = [0] * len(batch)
    bases = {
        REGISTER: [lead + [0, 1], lead + [8, 0]],
        LANE: [lead + v for v in ([0, 2], [0, 4], [1, 0], [2, 0], [4, 0])],
        WARP: [[1 << b, 0, 0] for w in wb for b in range(log2_exact(w, "warps"))]
        + [lead + [0, 8 << b] for b in range(log2_exact(wn, "warps"))]
        + [lead + [16 << b, 0] for b in range(log2_exact(wm, "warps"))],
    }
    rank = len(shape)
    bases = _fit_to_shape(bases, [*batch, m, n], order=list(range(rank))[::-1])
    name = f"#mma<m16n8k16, warpsPerCTA={_ls(warps_per_cta)}>"
    return LinearLayout(bases, [*batch, m, n]).named(
        name, kind="mma", shape=(*batch, m, n), warps_per_cta=(*wb, wm, wn), instr_shape=(16, 8, 16)
    )


def mma_k_width(itemsize: int) -> int:
    """K elements per 32-bit operand register of ``mma.sync`` for ``itemsize``-byte elements.

    2 for f16/bf16 (``m16n8k16``), 1 for tf32 (``m16n8k8``), 4 for int8 (``m16n8k32``): one
    instruction's K is ``8 * k_width``, and the fragments' pattern is the same with the K
    coordinates scaled (``dot_operand``).

        >>> [mma_k_width(b) for b in (2, 4, 1)]
        [2, 1, 4]
    """
    return 4 // itemsize


def dot_operand(parent: LinearLayout, op_idx: int, k_width: int = 2, k: int | None = None) -> LinearLayout:
    """The A (``op_idx=0``, MxK) or B (``op_idx=1``, KxN) fragment of ``mma.sync m16n8k16``.

    ``k_width`` consecutive K elements sit in one thread's registers (2 for 16-bit
    types: one 32-bit register). For A, lane ``t`` holds rows ``t//4`` and
    ``t//4 + 8``, columns ``k_width*(t%4) + {0..k_width-1}`` and those plus
    ``4*k_width``; B is the transpose pattern with ``n = t//4``. Warps along the
    other operand's dim broadcast. ``k`` defaults to one instruction's K (16 for f16).
    Under a 3-d (batched) parent the operands are ``[batch, M, K]`` and ``[batch, K, N]``, each
    batch where the accumulator has it (the same warps, then registers).
    """
    if parent.params.get("kind") != "mma":
        raise ValueError("dot_operand needs an mma accumulator layout as its parent")
    if parent.params.get("version") == 3:
        if op_idx != 0:
            raise ValueError("wgmma reads only its A operand from registers (B comes from shared memory)")
        return wgmma_a_fragment(parent, k_width, k)
    (*batch, m, n), (*wb, wm, wn) = parent.params["shape"], parent.params["warps_per_cta"]
    k = int(k or 8 * k_width)
    kw = log2_exact(k_width, "k_width")
    along_k = [[1 << b] for b in range(kw)]
    lane_k = [[k_width << b] for b in range(2)]
    rows = [[1 << b] for b in range(3)]
    if op_idx == 0:
        reg = [[0, v[0]] for v in along_k] + [[8, 0], [0, 4 * k_width]]
        lane = [[0, v[0]] for v in lane_k] + [[v[0], 0] for v in rows]
        warp = [[0, 0]] * log2_exact(wn) + [[16 << b, 0] for b in range(log2_exact(wm))]
        shape, order = [m, k], [1, 0]
    elif op_idx == 1:
        reg = [[v[0], 0] for v in along_k] + [[4 * k_width, 0]]
        lane = [[v[0], 0] for v in lane_k] + [[0, v[0]] for v in rows]
        warp = [[0, 8 << b] for b in range(log2_exact(wn))] + [[0, 0]] * log2_exact(wm)
        shape, order = [k, n], [0, 1]
    else:
        raise ValueError(f"op_idx must be 0 (A) or 1 (B), got {op_idx}")
    if batch:  # the accumulator's batches: same warps, then registers after the 2-d pattern
        lead = [0] * len(batch)
        reg, lane = [lead + v for v in reg], [lead + v for v in lane]
        warp = [[1 << b, 0, 0] for w in wb for b in range(log2_exact(w, "warps"))] + [lead + v for v in warp]
        shape, order = [*batch, *shape], [d + 1 for d in order] + [0]
    bases = _fit_to_shape({REGISTER: reg, LANE: lane, WARP: warp}, shape, order)
    name = f"#dot_op<opIdx={op_idx}, parent={parent}, kWidth={k_width}>"
    return LinearLayout(bases, shape).named(name, kind="dot_operand", op_idx=op_idx, parent=parent, k_width=k_width)


def wgmma_a_fragment(parent: LinearLayout, k_width: int = 2, k: int | None = None) -> LinearLayout:
    """The A operand of ``wgmma.mma_async.m64nNk16`` read from registers, for the ``#wgmma`` ``parent``.

    Per warpgroup a 64 x 16 slice of A sits in four 32-bit registers per thread (PTX ISA,
    "Register Fragments for wgmma ... A"): warp ``w % 4`` holds rows ``16 * (w % 4)`` to
    ``16 * (w % 4) + 15``, inside a warp the ``mma.sync m16n8k16`` A pattern (lane ``t``: rows
    ``t//4`` and ``t//4 + 8``, columns ``2*(t%4) + {0, 1}`` and those plus 8). That is the
    accumulator's own pattern on a 64 x 16 tile, so an accumulator whose columns are the next
    dot's K (attention's ``p``) becomes this operand without moving between threads. Warpgroups
    stacked along M take their own rows; warpgroups side by side along N share A. Only 16-bit
    types (``k_width`` 2): larger K repeats in registers, then M.

        >>> acc = wgmma_accumulator([64, 64], [4, 1], 64)
        >>> a = wgmma_a_fragment(acc, k=32)
        >>> a.apply(register=[0, 1, 2, 4], lane=5, warp=2).tolist()
        [[33, 2], [33, 3], [41, 2], [33, 10]]
    """
    if k_width != 2:
        raise ValueError(f"wgmma reads A from registers for 16-bit types only (kWidth=2), got kWidth={k_width}")
    (m, _), (wm, wn) = parent.params["shape"], parent.params["warps_per_cta"]
    k = int(k or 16)
    bases = {
        REGISTER: [[0, 1], [8, 0], [0, 8]],
        LANE: [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]],
        WARP: [[16, 0], [32, 0]]
        + [[64 << b, 0] for b in range(log2_exact(wm // 4, "warpgroups"))]
        + [[0, 0]] * log2_exact(wn, "warpgroups"),
    }
    bases = _fit_to_shape(bases, [m, k], order=[1, 0])
    name = f"#dot_op<opIdx=0, parent={parent}, kWidth={k_width}>"
    return LinearLayout(bases, [m, k]).named(name, kind="dot_operand", op_idx=0, parent=parent, k_width=k_width)


def _ls(values) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def wgmma_accumulator(shape, warps_per_cta, instr_n: int) -> LinearLayout:
    """The D fragment of Hopper's ``wgmma.mma_async.m64nNk16`` (N = ``instr_n``), tiled over warpgroups.

    A *warpgroup* is four consecutive warps; together they hold one 64 x N tile, warp
    ``w % 4`` rows ``16 * (w % 4)`` to ``16 * (w % 4) + 15`` (PTX ISA, "Register Fragments
    for wgmma ... D"). Inside a warp it is the ``mma.sync m16n8`` C pattern repeated N/8
    times along N: lane ``t`` holds rows ``t//4`` and ``t//4 + 8``, columns ``8j + 2*(t%4)``
    and ``8j + 2*(t%4) + 1``. ``warps_per_cta = (wm, wn)``: ``wm`` warps along M (a multiple
    of 4: ``wm // 4`` warpgroups stacked along M), then ``wn`` warpgroups side by side along N,
    each ``instr_n`` columns wide. Larger tiles repeat in registers, N first.

        >>> L = wgmma_accumulator([64, 16], [4, 1], 16)
        >>> L.apply(register=[0, 1, 2, 4], lane=5, warp=2).tolist()
        [[33, 2], [33, 3], [41, 2], [33, 10]]
    """
    m, n = (int(s) for s in shape)
    wm, wn = (int(w) for w in warps_per_cta)
    if wm % 4 or instr_n % 8 or not 8 <= instr_n <= 256:
        raise ValueError(f"wgmma needs warps along M in fours and N in 8..256, got warps {wm}x{wn}, N={instr_n}")
    if m % (16 * wm) or n % (instr_n * wn):
        raise ValueError(f"a {m}x{n} tile does not split into m64n{instr_n} tiles over {wm}x{wn} warps")
    bases = {
        REGISTER: [[0, 1], [8, 0]] + [[0, 8 << b] for b in range(log2_exact(instr_n // 8, "N / 8"))],
        LANE: [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]],
        WARP: [[16, 0], [32, 0]]
        + [[64 << b, 0] for b in range(log2_exact(wm // 4, "warpgroups"))]
        + [[0, instr_n << b] for b in range(log2_exact(wn, "warpgroups"))],
    }
    bases = _fit_to_shape(bases, [m, n], order=[1, 0])
    name = f"#wgmma<warpsPerCTA={_ls([wm, wn])}, instrShape={_ls([64, instr_n, 16])}>"
    return LinearLayout(bases, [m, n]).named(
        name, kind="mma", version=3, shape=(m, n), warps_per_cta=(wm, wn), instr_shape=(64, instr_n, 16)
    )
