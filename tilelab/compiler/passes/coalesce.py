"""Give each global load and store a layout whose threads walk memory in address order.

Why: a warp's access is fast when its lanes touch consecutive addresses (one 32-byte
sector serves 8 floats). The default layouts are row-major: right for ``x[i, :]``, but
a store to ``out + cols[:, None] * N + rows[None, :]`` (a transposed tile) is contiguous
along dim 0, and row-major threads would each touch another row of memory. Axis info
knows which dim of the pointer tile is contiguous; where that is not the fastest dim of
the op's layout, the op gets a blocked layout with that dim first, its operands are
converted to it (and a load's result converted back), so that the conversion -- a trip
through shared memory -- happens once in registers instead of in every memory access.
``remove-layout-conversions`` then folds conversions that cancel.

before::

    tt.store %p, %v : tensor<64x64x!ptr<f32>, #blocked<..., order=[1, 0]>>   (%p contiguous along dim 0)

after::

    %a = ttg.convert_layout %p : tensor<64x64x!ptr<f32>, #blocked<..., order=[0, 1]>>
    %b = ttg.convert_layout %v : tensor<64x64xf32, #blocked<..., order=[0, 1]>>
    tt.store %a, %b : tensor<64x64x!ptr<f32>, #blocked<..., order=[0, 1]>>
"""

from __future__ import annotations

from tilelab.compiler.analysis import axis_info
from tilelab.compiler.ir.core import Block, Module, replace_uses
from tilelab.compiler.ir.ops import ConvertLayoutOp, LoadOp, StoreOp
from tilelab.compiler.options import options_of

from .assign_layouts import access_vectors, tile_layout

NAME = "coalesce"


@axis_info.rule(ConvertLayoutOp)
def _same_facts(op, info):
    """A layout conversion moves elements between threads: the values keep their facts."""
    return info[op.operands[0]]


def fastest_dim(layout) -> int:
    order = layout.params.get("order")
    return order[0] if order else layout.rank - 1


def wanted_order(contiguity) -> list[int] | None:
    """Dims fastest first, when the most contiguous dim is not the last one (else None)."""
    rank = len(contiguity)
    best = max(range(rank), key=lambda d: (contiguity[d], d))
    if best == rank - 1 or contiguity[best] <= 1:
        return None
    return [best] + [d for d in reversed(range(rank)) if d != best]


def _retarget(block: Block, op, layout, num_warps: int) -> None:
    for i, v in enumerate(op.operands):
        if v.type.is_tensor and v.type.layout != layout:
            conv = ConvertLayoutOp(v, v.type.with_layout(layout), loc=op.loc)
            block.insert(block.ops.index(op), conv)
            op.operands[i] = conv.result
    if isinstance(op, LoadOp):
        old = op.result.type
        op.result.type = old.with_layout(layout)
        back = ConvertLayoutOp(op.result, old, loc=op.loc)
        block.insert(block.ops.index(op) + 1, back)
        return back


def _walk(block: Block, info, vectors, num_warps, func) -> bool:
    changed = False
    for op in list(block.ops):
        for region in op.regions:
            for b in region.blocks:
                changed |= _walk(b, info, vectors, num_warps, func)
        if not isinstance(op, (LoadOp, StoreOp)) or not op.ptr.type.is_tensor or op.ptr.type.layout is None:
            continue
        t = op.ptr.type
        order = wanted_order(info[op.ptr].contiguity)
        if order is None or fastest_dim(t.layout) == order[0]:
            continue
        layout = tile_layout(t.shape, num_warps, vectors.get(tuple(t.shape), 4), order)
        back = _retarget(block, op, layout, num_warps)
        if back is not None:
            replace_uses(func, {op.result: back.result})
            back.operands[0] = op.result
        changed = True
    return changed


def run(module: Module) -> bool:
    """Retarget loads and stores to layouts that follow their contiguous dim (see the docstring)."""
    num_warps = options_of(module).num_warps
    vectors = access_vectors(module)
    changed = False
    for func in module.funcs:
        changed |= _walk(func.body, axis_info.analyze(func), vectors, num_warps, func)
    return changed
