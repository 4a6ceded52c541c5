"""The verifier: checks the IR's invariants between passes.

It catches compiler bugs, not user errors (the frontend reports those with the
user's line). Checked: every operand is defined before use and visible from its
use (SSA dominance within nested regions), blocks that need a terminator end with
the right one, and the typing rules each op states.
"""

from __future__ import annotations

from .core import Block, Module, Op, Value
from .ops import (
    AddPtrOp,
    AsyncCopyGlobalToLocalOp,
    AsyncWaitOp,
    BinaryOp,
    CmpOp,
    ConditionOp,
    ForOp,
    FuncOp,
    IfOp,
    LoadOp,
    LocalAllocOp,
    LocalLoadOp,
    LocalStoreOp,
    MakeRangeOp,
    MemDescIndexOp,
    ReduceOp,
    ReduceReturnOp,
    ReturnOp,
    ScanOp,
    SelectOp,
    StoreOp,
    WarpGroupDotOp,
    WhileOp,
    YieldOp,
)
from .types import i32


class VerificationError(Exception):
    """The IR breaks an invariant; the message names the op and its location."""


def _fail(op: Op, msg: str):
    raise VerificationError(f"{op.name} at {op.loc}: {msg}")


def _check_shapes_equal(op: Op, values: list[Value]) -> None:
    shapes = {v.type.shape for v in values}
    if len(shapes) > 1:
        _fail(op, f"operand shapes differ: {sorted(shapes)}")


def _check_op(op: Op) -> None:
    if isinstance(op, BinaryOp):
        a, b = op.operands
        if a.type != b.type:
            _fail(op, f"operand types differ: {a.type} vs {b.type}")
    elif isinstance(op, CmpOp):
        _check_shapes_equal(op, op.operands)
    elif isinstance(op, SelectOp):
        _check_shapes_equal(op, op.operands)
        if op.operands[1].type != op.operands[2].type:
            _fail(op, "select arms differ in type")
    elif isinstance(op, AddPtrOp):
        if not op.operands[0].type.element.is_pointer:
            _fail(op, "first operand is not a pointer")
        _check_shapes_equal(op, op.operands)
    elif isinstance(op, (LoadOp, StoreOp)):
        if not op.operands[0].type.element.is_pointer:
            _fail(op, "address operand is not a pointer")
        _check_shapes_equal(op, op.operands)
    elif isinstance(op, (LocalStoreOp, LocalLoadOp)):
        _check_shared_access(op)
    elif isinstance(op, (MemDescIndexOp, AsyncCopyGlobalToLocalOp, AsyncWaitOp)):
        _check_async(op)
    elif isinstance(op, WarpGroupDotOp):
        _check_warp_group_dot(op)
    elif isinstance(op, MakeRangeOp):
        n = op.attrs["end"] - op.attrs["start"]
        if n <= 0 or n & (n - 1):
            _fail(op, f"range length {n} is not a power of two")


def _check_shared_access(op: Op) -> None:
    """A local store/load moves a tile of the buffer's shape and element type."""
    buf = op.operands[0].type
    tile = op.operands[1].type if isinstance(op, LocalStoreOp) else op.result.type
    if not buf.is_tensor or buf.shape != tile.shape or buf.element != tile.element:
        _fail(op, f"tile {tile} does not match the shared buffer {buf}")


def _check_async(op: Op) -> None:
    """Ring stages index a ring with an i32; async copies fill a buffer of their pointers' shape."""
    if isinstance(op, AsyncWaitOp):
        if not isinstance(op.attrs.get("num"), int) or op.attrs["num"] < 0:
            _fail(op, "num must be a non-negative int")
    elif isinstance(op, MemDescIndexOp):
        ring = op.ring.defining_op
        if not isinstance(ring, LocalAllocOp) or ring.attrs.get("stages") is None:
            _fail(op, "the indexed buffer is not a ring (ttg.local_alloc with stages)")
        if op.index.type != i32 or op.result.type != op.ring.type:
            _fail(op, "needs an i32 index and gives the ring's type")
    else:
        view, ptrs = op.view.type, op.ptrs.type
        if not ptrs.is_tensor or not ptrs.element.is_pointer or ptrs.element.pointee != view.element:
            _fail(op, f"pointers {ptrs} do not point to elements of the buffer {view}")
        _check_shapes_equal(op, op.operands)


def _check_warp_group_dot(op: WarpGroupDotOp) -> None:
    """A (M x K) and B (K x N) buffers of one element type; the result has the accumulator's type."""
    a, b, acc = (v.type for v in op.operands)
    if a.shape[-1] != b.shape[0] or (a.shape[0], b.shape[-1]) != tuple(acc.shape) or a.element != b.element:
        _fail(op, f"operands {a} x {b} do not make {acc}")
    if op.result.type != acc:
        _fail(op, "the result must have the accumulator's type")


_TERMINATORS = {
    ForOp: (YieldOp,),
    IfOp: (YieldOp,),
    ReduceOp: (ReduceReturnOp,),
    ScanOp: (ReduceReturnOp,),
}


def _check_terminators(op: Op) -> None:
    if isinstance(op, WhileOp):
        if not isinstance(op.before.terminator, ConditionOp):
            _fail(op, "before region must end with scf.condition")
        if not isinstance(op.after.terminator, YieldOp):
            _fail(op, "after region must end with scf.yield")
        return
    for cls, terms in _TERMINATORS.items():
        if isinstance(op, cls):
            for region in op.regions:
                term = region.block.terminator
                if not isinstance(term, terms):
                    _fail(op, f"region must end with {terms[0].name}")
                if isinstance(op, (ForOp, IfOp)) and len(term.operands) != len(op.results):
                    _fail(
                        op,
                        f"yields {len(term.operands)} values for {len(op.results)} results",
                    )


def _verify_block(block: Block, visible: set[Value]) -> None:
    visible = set(visible) | set(block.args)
    for op in block.ops:
        for v in op.operands:
            if v not in visible:
                _fail(op, f"operand {v} is used before its definition or out of scope")
        if op.is_terminator and op is not block.ops[-1]:
            _fail(op, "terminator in the middle of a block")
        _check_op(op)
        _check_terminators(op)
        for region in op.regions:
            for inner in region.blocks:
                _verify_block(inner, visible)
        visible.update(op.results)


def verify(module: Module) -> None:
    """Raise ``VerificationError`` if ``module`` breaks an invariant."""
    names = set()
    for f in module.funcs:
        if not isinstance(f, FuncOp):
            raise VerificationError(f"top-level op {f.name} is not a function")
        if f.sym_name in names:
            raise VerificationError(f"function @{f.sym_name} defined twice")
        names.add(f.sym_name)
        if not isinstance(f.body.terminator, ReturnOp):
            _fail(f, f"function @{f.sym_name} does not end with tt.return")
        _verify_block(f.body, set())
