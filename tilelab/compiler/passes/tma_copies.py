"""Which pipelined loads ``software-pipeline`` copies with TMA, and the tensor maps they read through.

A load of a tensor descriptor's block (``LoadOp.descriptor``; or a store's) whose shared buffer is a
``#nvmma_shared`` tile stored in the descriptor's dimension order can be copied by the
Tensor Memory Accelerator: the box is the buffer's swizzle atom wide (``swizzle_bytes``
of the last dim) and all its rows deep, and the tile is one box per atom-wide column
block, which is how ``#nvmma_shared`` stores it. The map needs the array's base, shape and
strides at launch: each must be a kernel argument or a constant (a host descriptor's parts,
or ``tl.make_tensor_descriptor`` over arguments), since the launch encodes the map from them.
A descriptor made in the kernel also needs the specialization to prove TMA's alignment rules
(``_aligned``); a host descriptor's were checked by the launch.

    >>> TMA_ARCHS
    ('sm_90', 'sm_90a')
"""

from __future__ import annotations

from dataclasses import dataclass

from tilelab.compiler.ir.core import FuncOp, Loc, Value
from tilelab.compiler.ir.ops import ConstantOp, LoadOp, StoreOp, TensorMapOp
from tilelab.compiler.ir.rewriter import Rewriter

#: architectures whose PTX has ``cp.async.bulk.tensor`` and mbarrier transaction counts
TMA_ARCHS = ("sm_90", "sm_90a")


@dataclass(frozen=True)
class TmaPlan:
    """How a load's (or store's) tile is copied: the map's ``box`` (outer dims first), its
    ``swizzle``, the descriptor's block ``offsets`` (the coordinates), the boxes along the last dim."""

    op: LoadOp | StoreOp
    box: tuple
    swizzle: int
    offsets: tuple
    boxes: int


def plan(op: LoadOp | StoreOp, layout, func: FuncOp) -> TmaPlan | None:
    """The ``TmaPlan`` of ``op``'s tile in the shared ``layout``, or None where TMA does not apply."""
    d = op.descriptor
    t = op.result.type if isinstance(op, LoadOp) else op.value.type
    if d is None or d.rank != 2 or layout is None or layout.params.get("kind") != "nvmma_shared":
        return None
    if tuple(layout.params["order"]) != (1, 0) or op.attrs.get("volatile"):
        return None  # the copy moves rows of the last dim; a tile stored transposed needs cp.async
    if not all(_launch_known(v, func) for v in (d.base, *d.shape, *d.strides)):
        return None
    if not d.checked and not _aligned(d, t.element.itemsize, func):
        return None  # made in the kernel: TMA needs a 16-byte aligned base and strides the launch cannot vouch for
    swizzle, size = layout.params["swizzle_bytes"], t.element.itemsize
    width = swizzle // size
    rows, cols = t.shape
    if cols % width or rows > 256 or rows % 8:  # 8 rows: the swizzle's repeat, where each box starts
        return None
    return TmaPlan(op, (rows, width), swizzle, tuple(d.offsets), cols // width)


def _aligned(d, itemsize: int, func: FuncOp) -> bool:
    """Whether the specialization proves what TMA needs of a descriptor made in the kernel.

    The base 16-byte aligned, the last stride 1, the others multiples of 16 bytes: from the
    arguments' divisibility (a launch specializes pointers and integers divisible by 16).
    """
    divisibility = dict(zip(func.args, func.attrs.get("arg_divisibility") or ()))

    def known(v, scale: int) -> int:
        op = v.defining_op
        return int(op.value) * scale if isinstance(op, ConstantOp) else divisibility.get(v, 1) * scale

    last = d.strides[-1].defining_op
    if not isinstance(last, ConstantOp) or last.value != 1 or known(d.base, 1) % 16:
        return False
    return all(known(s, itemsize) % 16 == 0 for s in d.strides[:-1])


def _launch_known(v: Value, func: FuncOp) -> bool:
    """A kernel argument, or a constant: what the launch can read to encode a tensor map."""
    return v.owner is func.body or isinstance(v.defining_op, ConstantOp)


def tensor_map(func: FuncOp, p: TmaPlan, loc: Loc) -> Value:
    """The ``ttng.tensormap`` for ``p`` at the top of ``func``, made once per descriptor and box."""
    d = p.op.descriptor
    want = [_source(v) for v in (d.base, *d.shape, *d.strides)]
    attrs = {"box": list(p.box), "swizzle": p.swizzle, "fill": "zero"}
    for op in func.body.ops:
        if isinstance(op, TensorMapOp) and op.attrs == attrs and [_source(v) for v in op.operands] == want:
            return op.result
    rw = Rewriter()
    rw.set_insertion_point_to_start(func.body)
    values = [
        v if v.owner is func.body else rw.add(ConstantOp(v.defining_op.value, v.type, loc=loc))
        for v in (d.base, *d.shape, *d.strides)
    ]
    return rw.add(TensorMapOp(values[0], values[1 : 1 + d.rank], values[1 + d.rank :], p.box, p.swizzle, loc=loc))


def _source(v: Value):
    """An argument, or a constant's (type, value): what makes two maps the same."""
    op = v.defining_op
    return (str(v.type), op.value) if isinstance(op, ConstantOp) else v
