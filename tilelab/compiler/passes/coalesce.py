# ruff: noqa: E501  (the docstring example spells whole layouts)
"""Give each global load, store and atomic a layout whose threads walk memory in address order.

Why: a warp's access is fast when its lanes touch consecutive addresses (one 32-byte
sector serves 8 floats). The default layouts are row-major: right for ``x[i, :]``, but
a store to ``out + cols[:, None] * N + rows[None, :]`` (a transposed tile) is contiguous
along dim 0, and row-major threads would each touch another row of memory. Axis info
knows which dim of the pointer tile is contiguous; where that is not the fastest dim of
the op's layout, the op gets a blocked layout with that dim first, its operands are
converted to it (and a load's result converted back), so that the conversion -- a trip
through shared memory -- happens once in registers instead of in every memory access.
``remove-layout-conversions`` then folds conversions that cancel.
Tiles of one shape share the vector of their narrowest type; an access of a wider type
whose thread run passes 16 bytes (the f32 store of an fp8 matmul's 128x256 tile, 16
elements per thread) gets its own 16-byte layout the same way (``_own_vector``); a load
keeps the shared one, as in Triton (L1 serves the gaps between its lanes).
A write whose threads would each issue more instructions in its layout than in the default
one (a reduced row stored strided, its slice leaving each thread several rows that other
lanes hold copies of) is spread over the threads first (``_spread``).

A 32x32 tile written transposed, ``out[i + 32 * j] = i + 32 * j`` (the addresses run along dim 0;
4 warps):

before:
    tt.func @k(%out: !ptr<f32>) {
      %0 = tt.make_range {start = 0, end = 32} : tensor<32xi32, #slice<dim=1, parent=#blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>>
      %1 = tt.expand_dims %0 {axis = 1} : tensor<32x1xi32, #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      %2 = tt.broadcast %1 : tensor<32x32xi32, #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      %3 = tt.make_range {start = 0, end = 32} : tensor<32xi32, #slice<dim=0, parent=#blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>>
      %4 = tt.expand_dims %3 {axis = 0} : tensor<1x32xi32, #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      %5 = arith.constant {value = 32} : tensor<1x32xi32, #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      %6 = arith.mul %4, %5 : tensor<1x32xi32, #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      %7 = tt.broadcast %6 : tensor<32x32xi32, #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      %8 = arith.add %2, %7 : tensor<32x32xi32, #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      %9 = tt.splat %out : tensor<32x32x!ptr<f32>, #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      %10 = tt.addptr %9, %8 : tensor<32x32x!ptr<f32>, #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      %11 = tt.cast %8 : tensor<32x32xf32, #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      tt.store %10, %11 : tensor<32x32x!ptr<f32>, #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      tt.return
    }
after:
    tt.func @k(%out: !ptr<f32>) {
      %0 = tt.make_range {start = 0, end = 32} : tensor<32xi32, #slice<dim=1, parent=#blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>>
      %1 = tt.expand_dims %0 {axis = 1} : tensor<32x1xi32, #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      %2 = tt.broadcast %1 : tensor<32x32xi32, #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      %3 = tt.make_range {start = 0, end = 32} : tensor<32xi32, #slice<dim=0, parent=#blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>>
      %4 = tt.expand_dims %3 {axis = 0} : tensor<1x32xi32, #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      %5 = arith.constant {value = 32} : tensor<1x32xi32, #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      %6 = arith.mul %4, %5 : tensor<1x32xi32, #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      %7 = tt.broadcast %6 : tensor<32x32xi32, #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      %8 = arith.add %2, %7 : tensor<32x32xi32, #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      %9 = tt.splat %out : tensor<32x32x!ptr<f32>, #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      %10 = tt.addptr %9, %8 : tensor<32x32x!ptr<f32>, #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      %11 = tt.cast %8 : tensor<32x32xf32, #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      %12 = ttg.convert_layout %10 : tensor<32x32x!ptr<f32>, #blocked<sizePerThread=[4, 1], threadsPerWarp=[8, 4], warpsPerCTA=[1, 4], order=[0, 1]>>
      %13 = ttg.convert_layout %11 : tensor<32x32xf32, #blocked<sizePerThread=[4, 1], threadsPerWarp=[8, 4], warpsPerCTA=[1, 4], order=[0, 1]>>
      tt.store %12, %13 : tensor<32x32x!ptr<f32>, #blocked<sizePerThread=[4, 1], threadsPerWarp=[8, 4], warpsPerCTA=[1, 4], order=[0, 1]>>
      tt.return
    }
"""

from __future__ import annotations

from tilelab.compiler.analysis import axis_info
from tilelab.compiler.analysis.memory_access import vector_width
from tilelab.compiler.ir.core import Block, Module
from tilelab.compiler.ir.ops import ConvertLayoutOp
from tilelab.compiler.ir.rewriter import Rewriter
from tilelab.compiler.ir.traits import MemoryRead, MemoryWrite, SharedMemory
from tilelab.compiler.layouts import REGISTER, contiguous_elements, fastest_dim
from tilelab.compiler.options import options_of

from .assign_layouts import access_vectors, tile_layout

NAME = "coalesce"


def wanted_order(contiguity) -> list[int] | None:
    """Dims fastest first, when the most contiguous dim is not the last one (else None)."""
    rank = len(contiguity)
    best = max(range(rank), key=lambda d: (contiguity[d], d))
    if best == rank - 1 or contiguity[best] <= 1:
        return None
    return [best] + [d for d in reversed(range(rank)) if d != best]


def global_access(op) -> bool:
    """A load, store or atomic of global memory through a tile of pointers (not a shared-memory op)."""
    return (
        (op.has_trait(MemoryRead) or op.has_trait(MemoryWrite))
        and not op.has_trait(SharedMemory)
        and op.operands
        and op.operands[0].type.is_tensor
        and op.operands[0].type.element.is_pointer
    )


def _own_vector(op, t, vec: int) -> int | None:
    """A narrower vector for a wide-typed store or atomic of a blocked tile whose run passes 16 bytes, or None.

    Tiles of one shape share the vector of their narrowest type (``access_vectors``): with
    an fp8 ``128x256`` load, the f32 ``128x256`` store gets 16 elements (64 bytes) per
    thread, moved as four 16-byte stores whose lanes sit 64 bytes apart (a quarter of
    each sector group per instruction, and 4-way bank conflicts reading the epilogue's
    shared buffer). Such a store gets its own 16-byte layout, its operands converted.
    A load keeps the shared vector: the gaps between its lanes are filled by the next
    instruction's from L1, and its own layout would cost a trip through shared memory
    (a bf16 row loaded for an fp8 store of the same shape, 32 bytes a thread).
    An atomic writes as a store does (one ``red.v4.f32`` a thread at most): with 32 bytes a
    thread, each instruction's lanes would cover every other 16 bytes, half of each sector,
    and the L2's atomic units would see twice the sectors (an embedding gradient's
    ``atomic_add`` of a bf16-shaped tile).
    """
    if not op.has_trait(MemoryWrite):
        return None
    spt = t.layout.params.get("size_per_thread")
    if t.layout.params.get("kind") != "blocked" or spt is None:
        return None
    size = max(1, t.element.pointee.itemsize)
    own = max(1, 16 // size)
    if spt[fastest_dim(t.layout)] <= own or vec <= own:
        return None
    return own


def _spread(op, t, info, num_warps: int, vec: int, warp_size: int):
    """The default layout for a write that would take fewer instructions a thread in it, or None.

    A reduction's result keeps the slice of its operand's layout: ``tl.argmax(x, 1)`` of a
    ``[32, 64]`` tile on 4 warps leaves each thread 4 rows, each held by 16 lanes. Stored to
    ``out + rows * 2`` (no two rows adjacent), that is 4 instructions a thread where one would do
    (the copies are masked off, but every warp issues them, each writing a few bytes to L2 on its
    own); spread over the threads first (a trip through shared memory, as Triton's coalescing does),
    it takes one. A slice whose thread holds adjacent elements it can write as one vector (column
    sums: 4 columns, 16 bytes) keeps its layout.
    """
    if not op.has_trait(MemoryWrite) or t.layout.params.get("kind") == "blocked":
        return None
    spread = tile_layout(t.shape, num_warps, vec, None, warp_size)
    ptr = info[op.operands[0]]
    dim = max(range(len(t.shape)), key=lambda d: (ptr.contiguity[d], d))
    mask = info[op.mask] if getattr(op, "mask", None) is not None else None
    width = vector_width(ptr, max(1, t.element.pointee.itemsize), dim, mask)

    def instructions(layout) -> int:
        return (1 << len(layout.in_bases(REGISTER))) // max(1, min(width, contiguous_elements(layout, dim)))

    return spread if instructions(t.layout) > instructions(spread) else None


def _retarget(block: Block, op, layout, num_warps: int) -> None:
    for i, v in enumerate(op.operands):
        if v.type.is_tensor and v.type.layout != layout:
            conv = Rewriter.insert_before(op, ConvertLayoutOp(v, v.type.with_layout(layout), loc=op.loc))
            op.operands[i] = conv.result
    if op.results and op.result.type.is_tensor:  # a load's values, an atomic's old values
        old = op.result.type
        op.result.type = old.with_layout(layout)
        return Rewriter.insert_after(op, ConvertLayoutOp(op.result, old, loc=op.loc))


def _walk(block: Block, info, vectors, num_warps, func, warp_size: int = 32) -> bool:
    changed = False
    for op in list(block.ops):
        for region in op.regions:
            for b in region.blocks:
                changed |= _walk(b, info, vectors, num_warps, func, warp_size)
        if not global_access(op) or op.operands[0].type.layout is None:
            continue
        ptr = op.operands[0]
        t = ptr.type
        order = wanted_order(info[ptr].contiguity)
        vec = vectors.get(tuple(t.shape), 4)
        if order is not None and fastest_dim(t.layout) != order[0]:  # threads along the contiguous dim
            layout = tile_layout(t.shape, num_warps, vec, order, warp_size)
        elif (own := _own_vector(op, t, vec)) is not None:  # a wide write's own 16-byte vector
            layout = tile_layout(t.shape, num_warps, own, order, warp_size)
        elif order is not None or (layout := _spread(op, t, info, num_warps, vec, warp_size)) is None:
            continue
        back = _retarget(block, op, layout, num_warps)
        if back is not None:  # the load's readers now read it converted back
            op.result.replace_uses_if(back.result, lambda user, back=back: user is not back)
        changed = True
    return changed


def run(module: Module) -> bool:
    """Retarget loads, stores and atomics to layouts that follow their contiguous dim (see the docstring)."""
    options = options_of(module)
    vectors = access_vectors(module)
    changed = False
    for func in module.funcs:
        changed |= _walk(func.body, axis_info.analyze(func), vectors, options.num_warps, func, options.warp_size)
    return changed
