# ruff: noqa: E501  (the docstring example spells whole layouts)
"""Turn each layout conversion that crosses threads into an explicit shared-memory round trip.

Why: a ``convert_layout`` whose elements must move between threads goes through shared
memory. Spelling that trip out as ``local_alloc`` / ``local_store`` / ``local_load`` lets
``allocate-shared-memory`` give the buffer its bytes and ``insert-barriers`` place the
barriers, and lets the inspector show the real buffers. The buffer's shared layout is
the swizzle (among a few candidates) that takes the fewest bank-conflict wavefronts for
this store and this load (``layouts.bank_conflicts``); a plain row-major buffer wins ties.
Where a buffer made for the two layouts (``layouts.conversion_shared``) moves the same data
in fewer accesses, it is taken instead (an mma accumulator leaves in 16-byte stores).
Conversions that stay inside each thread (a register permutation) are left alone.

Two placements matter for dot operands. A conversion of a loop-invariant tile (attention's
``q``) stores it once, before the outermost loop it does not depend on, and keeps only the
``local_load`` in the loop. A buffer read with ``ldmatrix`` keeps the stored tile's dim order
(``stored_order``): a ``k`` tile loaded as ``[D, BN]``, contiguous along ``D``, is written in
16-byte chunks (and ``software-pipeline`` can fill it with ``cp.async``) and read with the
plain ``ldmatrix`` instead of the transposed one.

A ``tt.trans`` whose result layout is not its source's layout with the dims permuted
hides such a conversion: it is split first into a free ``tt.trans`` (to the permuted
source layout: every thread keeps its elements) and a ``convert_layout``, so its data
takes the same best-swizzle buffer (a transpose through a plain row-major buffer reads
columns: 16-way bank conflicts for f32).

before:
    tt.func @k(%x: !ptr<f32>) {
      %0 = arith.constant {value = 1.0} : tensor<128xf32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %1 = ttg.convert_layout %0 : tensor<128xf32, #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      tt.return
    }

after:
    tt.func @k(%x: !ptr<f32>) {
      %0 = arith.constant {value = 1.0} : tensor<128xf32, #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %1 = ttg.local_alloc : tensor<128xf32, #swizzled_shared<vec=1, perPhase=1, maxPhase=1, order=[0]>>
      ttg.local_store %1, %0 : tensor<128xf32, #swizzled_shared<vec=1, perPhase=1, maxPhase=1, order=[0]>>
      %2 = ttg.local_load %1 : tensor<128xf32, #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      tt.return
    }
"""

from __future__ import annotations

import functools

from tilelab.compiler.ir.core import Block, Module
from tilelab.compiler.ir.ops import ConvertLayoutOp, ForOp, LocalAllocOp, LocalLoadOp, LocalStoreOp, TransOp
from tilelab.compiler.ir.rewriter import Rewriter
from tilelab.compiler.layouts import (
    LANE,
    REGISTER,
    LinearLayout,
    bank_conflicts,
    conversion_kind,
    conversion_shared,
    row_major_shared,
    shared_vector_width,
    swizzled_shared,
)
from tilelab.compiler.options import options_of

NAME = "convert-through-shared"


def candidate_layouts(shape, elem_bytes: int) -> list:
    """Shared layouts to try for a tile: row-major first, then XOR swizzles of the two fastest dims."""
    shape = list(shape)
    candidates = [row_major_shared(shape)]
    if len(shape) < 2:
        return candidates
    order = list(range(len(shape)))[::-1]
    cols, rows = shape[order[0]], shape[order[1]]
    vec = 1
    while vec <= min(cols, max(1, 16 // elem_bytes)):
        per_phase = 1
        while per_phase < rows and per_phase <= 8:
            phase = 2  # XOR values past one 128-byte row of banks move no access to another bank
            while phase <= min(rows // per_phase, cols // vec, max(1, 128 // (vec * elem_bytes))):
                candidates.append(swizzled_shared(shape, vec, per_phase, phase, order))
                phase *= 2
            per_phase *= 2
        vec *= 2
    return candidates


def mma_operand_shared(shape, elem_bytes: int, order=(1, 0)):
    """The buffer for 16-bit mma operands read with ``ldmatrix``: 16-byte chunks XORed with the row, or None.

    ``ldmatrix`` reads eight 16-byte rows at once; they hit eight different bank groups
    when chunk ``c`` of row ``r`` sits at chunk ``c ^ (r // per_phase) % max_phase``, with
    ``per_phase`` rows filling 128 bytes. A 128x32 f16 tile (64-byte rows) gets
    ``vec=8, perPhase=2, maxPhase=4``; a 32x128 one ``vec=8, perPhase=1, maxPhase=8``.
    ``order`` is the buffer's dim order, fastest first: the stored tile's own (``stored_order``),
    so that each thread writes 16-byte chunks (and ``cp.async`` can fill the buffer) while
    ``ldmatrix`` reads it plain or transposed.
    """
    if elem_bytes != 2 or len(shape) != 2:
        return None
    cols, rows = int(shape[order[0]]), int(shape[order[1]])
    if cols < 8:
        return None
    per_phase = max(1, 128 // (cols * elem_bytes))
    max_phase = max(1, min(8 // per_phase, cols // 8, rows // per_phase))
    return swizzled_shared([int(d) for d in shape], 8, per_phase, max_phase, list(order))


def stored_order(layout: LinearLayout) -> tuple[int, int]:
    """The dim order (fastest first) of a 2-d register layout: the dim of its first unit step, then the other.

    A thread's first register step when it is one element (its vector), else its lanes' first
    step (a layout of one element per thread walks memory lane by lane); ``(1, 0)`` (row-major)
    where neither is a unit step or the layout is not 2-d.
    """
    if len(layout.shape) != 2:
        return (1, 0)
    for in_dim in (REGISTER, LANE):
        steps = [list(v) for v in layout.in_bases(in_dim) if any(v)]
        if steps and steps[0] == [1, 0]:
            return (0, 1)
        if steps and steps[0] == [0, 1]:
            return (1, 0)
    return (1, 0)


def choose_shared_layout(src, dst, elem_bytes: int, ldmatrix: bool = True):
    """The buffer layout for converting ``src`` to ``dst`` (see ``_choose``), remembered per process.

    Scoring the candidates takes milliseconds per conversion; a notebook recompiles the same
    kernels again and again. Layouts compare as maps, so the destination's kind (a dot
    operand takes the ``ldmatrix`` buffer) and the ``ldmatrix`` option are part of the key.
    """
    return _choose(src, dst, elem_bytes, dst.params.get("kind"), ldmatrix)


@functools.lru_cache(maxsize=512)
def _choose(src, dst, elem_bytes: int, _dst_kind, ldmatrix: bool):
    """The buffer with the fewest store + load wavefronts (then instructions; the first one on ties).

    Candidates: the ``swizzled_shared`` family (``candidate_layouts``); then, for 32-bit elements and
    wider going to a layout other than an mma operand's, the buffers made for the pair
    (``conversion_shared``), taken only where they need fewer instructions for no more wavefronts:
    a run of steps both layouts hold in registers moved in one access on both sides (an mma
    accumulator's ``(r, c), (r, c+1), (r+8, c), (r+8, c+1)`` to a store layout holding the same four:
    16 bytes where the swizzles give 8), or the writer's other registers filling its run too (a row
    reduction's result, rows apart in a thread's registers, going to one row a thread). A made buffer
    that only saves wavefronts is left: its XORed offsets cost address arithmetic in every thread
    (kernels that converted once grew by 14-25 PTX instructions for conflicts they rarely wait on).

    With ``ldmatrix``, a load into an mma operand layout takes the ``ldmatrix`` buffer (``mma_operand_shared``).
    """
    if ldmatrix and dst.params.get("kind") == "dot_operand":
        shared = mma_operand_shared(src.shape, elem_bytes, stored_order(src))
        if shared is not None:
            return shared

    def cost(shared):  # wavefronts, then instructions (wider accesses) on a tie
        models = [bank_conflicts(shared, reg, elem_bytes).per_instruction for reg in (src, dst)]
        return sum(int(m.sum()) for m in models), sum(m.size for m in models)

    best_cost, best = min(((cost(s), s) for s in candidate_layouts(src.shape, elem_bytes)), key=lambda p: p[0])
    # 32-bit elements and wider (16-bit ones move with ldmatrix / stmatrix, which this cost does not model);
    # not for mma operands: their buffers are filled from global memory, by copies as wide as the loaded
    # tile's own runs (``software-pipeline``'s cp.async), which a run across rows would split
    if elem_bytes >= 4 and dst.params.get("kind") != "dot_operand":
        for writer_runs in (False, True):  # the run both sides hold; then the writer's own registers too
            made = conversion_shared(src, dst, elem_bytes, writer_runs)
            if made is None or made == best or shared_vector_width(made, src, elem_bytes) == 1:
                continue
            made_cost = cost(made)
            if made_cost[1] < best_cost[1] and made_cost[0] <= best_cost[0]:  # fewer accesses, no more wavefronts
                best_cost, best = made_cost, made
    return best


def crosses_threads(op: ConvertLayoutOp) -> bool:
    """Whether the conversion moves elements between threads (so through shared memory)."""
    src, dst = op.src.type, op.result.type
    if not src.is_tensor or src.layout is None or dst.layout is None:
        return False
    return conversion_kind(src.layout, dst.layout) in ("shuffle", "shared")


def _expand(block: Block, op: ConvertLayoutOp, ldmatrix: bool) -> LocalLoadOp:
    src, dst = op.src.type, op.result.type
    elem_bytes = max(1, src.element.itemsize)
    shared = choose_shared_layout(src.layout, dst.layout, elem_bytes, ldmatrix)
    alloc = LocalAllocOp(src.with_layout(shared), loc=op.loc)
    store = LocalStoreOp(alloc.result, op.src, loc=op.loc)
    load = LocalLoadOp(alloc.result, dst, loc=op.loc)
    outer = outermost_invariant_loop(block, op.src)
    home = op if outer is None else outer  # stored once before the loop, read at every iteration
    Rewriter.insert_before(home, alloc)
    Rewriter.insert_before(home, store)
    Rewriter.insert_before(op, load)
    Rewriter.replace_op(op, load)
    return load


def outermost_invariant_loop(block: Block, value):
    """The outermost loop around ``block`` that ``value`` is defined outside of (``None``: no such loop).

    A conversion of a loop-invariant tile (attention's ``q``, converted to the dot operand
    inside the loop) then stores it to its buffer once, before that loop, and only the
    ``local_load`` stays in the loop: no store and no barrier per iteration, and the source
    registers need not live across the loop.
    """
    around_definition = _defining_ops_and_blocks(value)
    outer, current = None, block
    while (op := current.parent_op) is not None:
        if not isinstance(op, ForOp) or op in around_definition:
            break  # not out of a branch or a while loop (it may not run), nor past the value's definition
        outer, current = op, op.parent
    return outer


def _defining_ops_and_blocks(value) -> set:
    """The op defining ``value`` (or the block holding it as an argument) and every op and block around it."""
    found: set = set()
    node = value.defining_op
    block = node.parent if node is not None else getattr(value, "owner", None)
    if node is not None:
        found.add(node)
    while block is not None:
        found.add(block)
        region = block.parent
        op = region.parent if region is not None else None
        if op is None:
            break
        found.add(op)
        block = op.parent
    return found


def permuted(layout: LinearLayout, order) -> LinearLayout:
    """``layout`` with its tensor dims reordered as ``tt.trans`` does: result dim ``i`` is source dim ``order[i]``."""
    bases = {d: [[v[o] for o in order] for v in vs] for d, vs in layout.bases}
    return LinearLayout(bases, [layout.shape[o] for o in order])


def _split_trans(block: Block, op: TransOp) -> ConvertLayoutOp | None:
    """``trans(x) : D`` -> ``convert_layout(trans(x) : permuted(x's layout)) : D`` where that moves data.

    Conversions of ``trans(x) : D`` to other layouts (a dot operand's) then convert the free transpose
    directly: one trip through shared memory, not one to ``D`` and another from it. Where every user is
    such a conversion, nothing is left to convert to ``D`` (None).
    """
    src, dst = op.src.type, op.result.type
    if not src.is_tensor or src.layout is None or dst.layout is None:
        return None
    free = permuted(src.layout, op.attrs["order"])
    if conversion_kind(free, dst.layout) not in ("shuffle", "shared"):
        return None
    trans = Rewriter.insert_before(op, TransOp(op.src, dst.with_layout(free), loc=op.loc, **op.attrs))
    for user in list(op.result.users):
        if isinstance(user, ConvertLayoutOp):
            user.operands[0] = trans.result
    if not op.result.has_uses():
        Rewriter.replace_op(op, [trans.result])
        return None
    conv = Rewriter.insert_before(op, ConvertLayoutOp(trans.result, dst, loc=op.loc))
    Rewriter.replace_op(op, conv)
    return conv


def _rewrite(block: Block, ldmatrix: bool) -> bool:
    changed = False
    for op in list(block.ops):
        for region in op.regions:
            for inner in region.blocks:
                changed |= _rewrite(inner, ldmatrix)
        if isinstance(op, TransOp) and (conv := _split_trans(block, op)) is not None:
            op = conv
        if isinstance(op, ConvertLayoutOp) and crosses_threads(op):
            _expand(block, op, ldmatrix)
            changed = True
    return changed


def run(module: Module) -> bool:
    changed = False
    ldmatrix = options_of(module).ldmatrix  # off: mma operands take the buffer of fewest conflicts
    for func in module.funcs:
        changed |= _rewrite(func.body, ldmatrix)
    return changed
