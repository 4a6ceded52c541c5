"""The executor: runs a kernel's tile IR over a launch grid, one program at a time.

``run_kernel`` binds the arguments (arrays become int64 base addresses, scalars
become numpy scalars of their IR type), then for every program id ``(x, y, z)`` (x
fastest) walks the kernel body: each op's handler (found in the ``HANDLERS`` table)
takes the operand values and gives the results. Control flow runs its regions through
``Interpreter.run_block``, which returns the values of the block's terminator (yield,
condition, reduce-return, return).

    result = run_kernel(module, grid=(4, 1, 1), args=[x, y, out, n])
    result = run_kernel(module, (4,), args, trace_program=(0, 0, 0))
    result.trace[0].addresses  # the byte addresses program 0 loaded first
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ir.core import Block, Module, Op
from ..ir.ops import AssertOp, BarrierOp, CallOp, ForOp, IfOp, PrintOp, WhileOp
from .errors import AccessRecord, KernelRuntimeError, SourceLines, format_index
from .memory import Memory
from .numeric import dtype_of, unsigned_dtype, wrap_scalar
from .registry import HANDLERS, handles


@dataclass
class InterpreterResult:
    """What a run gives back: the number of programs run and the traced accesses."""

    num_programs: int
    trace: list[AccessRecord] = field(default_factory=list)


class Interpreter:
    """The state of one launch: grid, memory, current program id, value environment."""

    def __init__(self, module: Module, grid: tuple[int, int, int], memory: Memory, sanitize: bool):
        self.module = module
        self.grid = grid
        self.memory = memory
        self.sanitize = sanitize
        self.pid = (0, 0, 0)
        self.env: dict = {}
        self.constants: dict = {}
        self.trace: list[AccessRecord] | None = None
        self.op_index: dict[Op, int] = {}
        self.plans: dict[Block, list] = {}
        self.sources = SourceLines(module)

    def run_block(self, block: Block, values) -> list:
        """Run ``block`` with its arguments bound to ``values``; give its terminator's operands."""
        env = self.env
        for arg, value in zip(block.args, values):
            env[arg] = value
        plan = self.plans.get(block)
        if plan is None:
            plan = self.plans[block] = self._plan(block)
        for handler, op, operands, results in plan:
            try:
                out = handler(self, op, *[env[v] for v in operands])
            except (ValueError, TypeError, IndexError, OverflowError) as e:  # malformed IR, not the user's fault
                raise self.error(op, f"cannot execute {op.name} in program {self.pid}: {e}") from e
            if len(results) == 1:
                env[results[0]] = out
            elif results:
                for result, value in zip(results, out):
                    env[result] = value
        term = block.terminator
        return [env[v] for v in term.operands] if term is not None else []

    def _plan(self, block: Block) -> list:
        """The block's non-terminator ops with their handlers, looked up once."""
        plan = []
        for op in block.ops:
            if op.is_terminator:
                continue
            handler = HANDLERS.get(type(op))
            if handler is None:
                raise self.error(op, f"the interpreter cannot execute {op.name}")
            plan.append((handler, op, op.operands, op.results))
        return plan

    def error(self, op: Op, text: str, details: list[str] = ()) -> KernelRuntimeError:
        """A ``KernelRuntimeError`` naming ``op``'s source line (raise it)."""
        return KernelRuntimeError(self.sources.message(op.loc, text, details))

    def call(self, name: str, args: list, op: Op) -> list:
        func = self.module.get(name)
        if func is None:
            raise self.error(op, f"call of unknown function @{name}")
        return self.run_block(func.body, args)


def _results(op: Op, values: list):
    """A handler's return for ``values``: one value, a tuple, or None."""
    if len(op.results) == 1:
        return values[0]
    return tuple(values) if op.results else None


@handles(ForOp)
def for_loop(it, op, lb, ub, step, *carried):
    lb, ub, step = int(lb), int(ub), int(step)
    if step == 0:
        raise it.error(op, "for loop with a step of 0 never ends")
    iv_dtype = dtype_of(op.operands[0].type)
    for iv in range(lb, ub, step):
        carried = it.run_block(op.regions[0].block, [wrap_scalar(iv, iv_dtype), *carried])
    return _results(op, list(carried))


@handles(IfOp)
def if_op(it, op, cond):
    block = op.regions[0].block if bool(cond) else op.regions[1].block
    return _results(op, it.run_block(block, []))


@handles(WhileOp)
def while_loop(it, op, *carried):
    while True:
        cond, *forwarded = it.run_block(op.regions[0].block, carried)
        if not bool(cond):
            return _results(op, forwarded)
        carried = it.run_block(op.regions[1].block, forwarded)


@handles(CallOp)
def call(it, op, *args):
    return _results(op, it.call(op.attrs["callee"], list(args), op))


@handles(BarrierOp)
def barrier(it, op):
    return None


@handles(AssertOp)
def device_assert(it, op, cond):
    cond = np.asarray(cond)
    if cond.all():
        return None
    first = int(np.argmin(cond.reshape(-1)))
    index = format_index(first, cond.shape)
    text = f"device assertion failed in program {it.pid} at element {index}: {op.attrs['message']}"
    raise it.error(op, text)


def _format_element(value, hex_: bool) -> str:
    """One printed element: its value, or with ``hex_`` its bits (``0x0000002a``)."""
    value = np.asarray(value)
    if not hex_:
        return str(value.item())
    width = value.dtype.itemsize
    return f"0x{int(value.view(unsigned_dtype(width * 8))):0{2 * width}x}"


@handles(PrintOp)
def device_print(it, op, *values):
    """Print every element: ``pid (0, 0, 0) idx (3) prefix: value``, as Triton does."""
    prefix = op.attrs["prefix"].rstrip().rstrip(":")
    lines = [] if values else [f"pid {it.pid} {prefix}"]
    for k, value in enumerate(values):
        value = np.asarray(value)
        label = f"{prefix} (operand {k})" if len(values) > 1 else prefix
        for index in np.ndindex(value.shape):
            idx = ", ".join(str(i) for i in index)
            lines.append(f"pid {it.pid} idx ({idx}) {label}: {_format_element(value[index], op.attrs['hex'])}")
    print("\n".join(lines), flush=True)
