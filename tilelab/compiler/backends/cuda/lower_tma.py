"""GPU lowering of TMA copies and mbarriers (sm_90).

``ttng.tensormap`` is a kernel parameter: the 128-byte map the launch encodes, passed by value
(``.param .align 64 .b8 map[128]``, a ``__grid_constant__``: ``kernel.py`` adds one per map),
whose generic address (``cvta.param``) the copies name. A copy is issued by thread 0 alone:
it tells the stage's mbarrier how many bytes to expect, then copies one box per swizzle-wide
column block of the tile (each box all the tile's rows deep, ``rows * swizzle`` bytes apart)::

    @p mbarrier.arrive.expect_tx.shared::cta.b64 _, [%bar], 16384;
    @p cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
           [%dst], [%map, {%k, %m}], [%bar];

A store copies the boxes of a shared buffer out the same way (``cp.async.bulk.tensor`` from
``shared::cta`` to ``global``, a ``bulk_group`` committed, then waited for until read).
Every thread then waits for the stage's phase (``mbarrier.try_wait.parity`` in a loop). Thread
0 initializes the mbarriers (``mbarrier.init``, then ``fence.mbarrier_init`` and a proxy fence so
that the copies see them) and invalidates them after the loop, before their bytes serve anything else.
"""

from __future__ import annotations

from llvmlite import ir

from tilelab.compiler.ir.ops import (
    AsyncTMACopyOp,
    AsyncTMAStoreOp,
    InitBarriersOp,
    InvalBarriersOp,
    TensorMapOp,
    WaitBarrierOp,
)

from ..common.types import I64
from .context import const_i32, lower
from .lower_shared import shared_address


def _asm(lw, text: str, constraints: str, args: list) -> None:
    fnty = ir.FunctionType(ir.VoidType(), [a.type for a in args])
    lw.b.call(ir.InlineAsm(fnty, text, constraints + (",~{memory}" if constraints else "~{memory}"), True), args)


def _thread0(lw) -> ir.Value:
    return lw.b.icmp_unsigned("==", lw.tid, const_i32(0))


@lower(TensorMapOp)
def lower_tensormap(lw, op):
    lw.set(op.result, lw.b.ptrtoint(lw.tensormap_params[op], I64))


@lower(AsyncTMACopyOp)
def lower_tma_copy(lw, op):
    b = lw.b
    view, bars = lw.get(op.view), lw.get(op.bars)
    issue = b.and_(lw.get(op.pred), _thread0(lw))
    bar = shared_address(lw, bars, lw.get(op.slot))
    t = op.view.type
    nbytes = t.numel * t.element.itemsize
    _asm(lw, f"@$0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [$1], {nbytes};", "b,r", [issue, bar])
    tmap = op.map.defining_op
    rows, width = tmap.attrs["box"]
    outer, inner = (lw.get(c) for c in op.coords)
    dst = shared_address(lw, view)
    text = (
        "@$0 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [$1], [$2, {$3, $4}], [$5];"
    )
    for j in range(t.shape[1] // width):
        at = b.add(dst, const_i32(j * rows * tmap.attrs["swizzle"])) if j else dst
        column = b.add(inner, const_i32(j * width)) if j else inner
        _asm(lw, text, "b,r,l,r,r,r", [issue, at, lw.get(op.map), column, outer, bar])


@lower(AsyncTMAStoreOp)
def lower_tma_store(lw, op):
    b, first = lw.b, _thread0(lw)
    tmap = op.map.defining_op
    rows, width = tmap.attrs["box"]
    outer, inner = (lw.get(c) for c in op.coords)
    src = shared_address(lw, lw.get(op.buf))
    text = "@$0 cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$1, {$2, $3}], [$4];"
    for j in range(op.buf.type.shape[1] // width):
        at = b.add(src, const_i32(j * rows * tmap.attrs["swizzle"])) if j else src
        column = b.add(inner, const_i32(j * width)) if j else inner
        _asm(lw, text, "b,l,r,r,r", [first, lw.get(op.map), column, outer, at])
    _asm(lw, "@$0 cp.async.bulk.commit_group;\n\t@$0 cp.async.bulk.wait_group.read 0;", "b", [first])


@lower(InitBarriersOp)
def lower_init_barriers(lw, op):
    bars, first = lw.get(op.operands[0]), _thread0(lw)
    for s in range(op.attrs["num"]):
        address = shared_address(lw, bars, const_i32(s))
        _asm(lw, f"@$0 mbarrier.init.shared::cta.b64 [$1], {op.attrs['count']};", "b,r", [first, address])
    _asm(lw, "fence.mbarrier_init.release.cluster;\n\tfence.proxy.async.shared::cta;", "", [])


@lower(InvalBarriersOp)
def lower_inval_barriers(lw, op):
    bars, first = lw.get(op.operands[0]), _thread0(lw)
    for s in range(op.attrs["num"]):
        _asm(lw, "@$0 mbarrier.inval.shared::cta.b64 [$1];", "b,r", [first, shared_address(lw, bars, const_i32(s))])


_WAIT = """{
\t.reg .pred tl_done;
\ttl_wait:
\tmbarrier.try_wait.parity.shared::cta.b64 tl_done, [$0], $1;
\t@!tl_done bra.uni tl_wait;
\t}"""


@lower(WaitBarrierOp)
def lower_wait_barrier(lw, op):
    bars = lw.get(op.bars)
    _asm(lw, _WAIT, "r,r", [shared_address(lw, bars, lw.get(op.operands[1])), lw.get(op.operands[2])])
