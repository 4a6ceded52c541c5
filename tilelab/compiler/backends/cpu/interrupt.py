"""Stopping a running CPU launch: a stop flag the generated code checks, and the signal handler that sets it.

Why: a launch is one call into native code, and Python runs its signal handlers only between
bytecodes, so Ctrl-C (Jupyter's interrupt button sends SIGINT) could not stop a runaway kernel
(``while tl.load(flag) == 0``): only SIGKILL did. Now each object has

* a global ``__tilelab_signal_state``, which the loader points at the runtime's state: an
  ``i32`` stop flag, then one previous handler per signal number (8-byte slots from byte 8);
* checks of the flag between programs (the grid loop) and at each trip of a ``while`` loop;
  a set flag ends the launch with status ``STATUS_STOPPED``;
* ``__tilelab_on_signal(sig)``, an async-signal-safe handler that sets the flag and calls
  the handler it replaced (Python's, which then raises ``KeyboardInterrupt`` as usual).

Generated code, in short::

    grid loop:   status = kernel(...); if (status == 0 && *state != 0) status = STATUS_STOPPED
    handler:     *state = 1; previous = state->previous[sig]; if (previous > SIG_IGN) previous(sig)
"""

from __future__ import annotations

from llvmlite import ir

from ..common.types import I32, I64, PTR

SIGNAL_STATE = "__tilelab_signal_state"
HANDLER = "__tilelab_on_signal"
STATUS_STOPPED = 2


def _state_global(llmod: ir.Module) -> ir.GlobalVariable:
    gv = llmod.globals.get(SIGNAL_STATE)
    if gv is None:
        gv = ir.GlobalVariable(llmod, PTR, SIGNAL_STATE)
        gv.initializer = ir.Constant(PTR, None)
    return gv


def stop_requested(b: ir.IRBuilder) -> ir.Value:
    """An ``i1``: whether the stop flag is set (false while the loader has not pointed at a state).

    The flag is read with an atomic (monotonic) load, which LLVM never hoists out of a loop:
    a ``while`` loop that writes no memory still sees the flag change.
    """
    state = b.load(_state_global(b.module), typ=PTR)
    bound = b.icmp_unsigned("!=", state, ir.Constant(PTR, None))
    fn = b.function
    check, after = fn.append_basic_block("stop.check"), fn.append_basic_block("stop.after")
    here = b.block
    b.cbranch(bound, check, after)
    b.position_at_end(check)
    flag = b.load_atomic(state, "monotonic", 4, typ=I32)
    is_set = b.icmp_unsigned("==", flag, ir.Constant(I32, 1))  # the handler stores 1
    b.branch(after)
    b.position_at_end(after)
    result = b.phi(ir.IntType(1))
    result.add_incoming(ir.Constant(ir.IntType(1), 0), here)
    result.add_incoming(is_set, check)
    return result


def define_handler(llmod: ir.Module) -> ir.Function:
    """``void __tilelab_on_signal(i32 sig)``: set the stop flag, then call the replaced handler."""
    fn = ir.Function(llmod, ir.FunctionType(ir.VoidType(), [I32]), HANDLER)
    (sig,) = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    state = b.load(_state_global(llmod), typ=PTR)
    bound = b.icmp_unsigned("!=", state, ir.Constant(PTR, None))
    with b.if_then(bound):
        b.store(ir.Constant(I32, 1), state)  # read by atomic loads; the call or return after it keeps it
        slot = b.gep(state, [b.add(b.zext(sig, I64), ir.Constant(I64, 1))], source_etype=I64)
        previous = b.load(slot, typ=I64)
        with b.if_then(b.icmp_unsigned(">", previous, ir.Constant(I64, 1))):  # not SIG_DFL (0) or SIG_IGN (1)
            b.call(_Handler(b.inttoptr(previous, PTR)), [sig])
    b.ret_void()
    return fn


class _Handler:
    """An opaque function pointer of type ``void (i32)``, for ``IRBuilder.call``."""

    function_type = ir.FunctionType(ir.VoidType(), [I32])
    type = PTR

    def __init__(self, ptr):
        self.ptr = ptr

    def get_reference(self):
        return self.ptr.get_reference()
