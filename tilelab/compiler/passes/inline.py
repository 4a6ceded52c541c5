"""Inline calls: replace each ``tt.call`` by a copy of the called function's body.

Why: a kernel may call other ``@jit`` functions; the frontend compiles each into its own
``tt.func`` and leaves a ``tt.call``. The backends lower one function per kernel, and
the other passes see more (constants, common subexpressions) once the callee's ops sit
in the caller. The copy takes the call's operands for the callee's arguments, and the
values of the callee's ``tt.return`` replace the call's results. Calls inside the
inlined body are inlined in turn; afterwards the functions nobody calls are dropped.

before:
    tt.func @k(%x: !ptr<f32>) {
      %0 = tt.load %x : f32
      %1 = tt.call %0 {callee = "square"} : f32
      tt.store %x, %1 : !ptr<f32>
      tt.return
    }
    tt.func @square(%v: f32) -> (f32) {
      %0 = arith.mul %v, %v : f32
      tt.return %0 : f32
    }
after:
    tt.func @k(%x: !ptr<f32>) {
      %0 = tt.load %x : f32
      %1 = arith.mul %0, %0 : f32
      tt.store %x, %1 : !ptr<f32>
      tt.return
    }
"""

from __future__ import annotations

from ..ir.core import Module, Value
from ..ir.ops import CallOp, FuncOp, ReturnOp
from ..ir.rewriter import Rewriter
from . import tracing

NAME = "inline"

_MAX_DEPTH = 64


class InlineError(Exception):
    """A call cannot be inlined (unknown callee, recursion, a return that is not last)."""


def inline_call(call: CallOp, callee: FuncOp) -> list[Value]:
    """A call of a module function becomes a copy of its body; the returned values replace its results."""
    mapping: dict[Value, Value] = dict(zip(callee.args, call.operands))
    rw = Rewriter()
    rw.set_insertion_point_before(call)
    for op in callee.body.ops[:-1]:
        if any(isinstance(inner, ReturnOp) for inner in op.walk()):
            raise InlineError(f"@{callee.sym_name}: tt.return inside a region cannot be inlined")
        rw.insert(Rewriter.clone(op, mapping))
    ret = callee.body.terminator
    if not isinstance(ret, ReturnOp):
        raise InlineError(f"@{callee.sym_name} does not end with tt.return")
    return [mapping.get(v, v) for v in ret.operands]


def _inline_calls_in(func: FuncOp, module: Module, depth: int = 0) -> bool:
    calls = [op for op in func.walk() if isinstance(op, CallOp)]
    for call in calls:
        callee = module.get(call.callee)
        if callee is None:
            raise InlineError(f"call of unknown function @{call.callee} at {call.loc}")
        if depth >= _MAX_DEPTH:
            raise InlineError(f"recursive call of @{call.callee} at {call.loc} cannot be inlined")
        new = inline_call(call, callee)
        tracing.fired(inline_call, call, new)
        Rewriter.replace_op(call, new)
    if calls:
        _inline_calls_in(func, module, depth + 1)
    return bool(calls)


def run(module: Module) -> bool:
    """Inline every call in the kernel, then drop the functions left uncalled."""
    kernel = module.kernel
    changed = _inline_calls_in(kernel, module)
    kept = [f for f in module.funcs if f is kernel]
    if len(kept) != len(module.funcs):
        module.funcs = kept
        module.kernel_name = kernel.sym_name
        changed = True
    return changed
