"""FLOP and byte counts of a kernel, from its IR and its grid: the x and y of a roofline point.

Counting rules (per program, then times the number of programs):

* floating-point elementwise ops: 1 FLOP per element (``fma``: 2); integer index
  math is free (it is not what a roofline measures);
* ``dot``: ``2 * M * N * K`` (times the batch);
* ``reduce``/``scan`` over floats: the combine region's FLOPs once per element folded;
* loads and stores: ``numel * itemsize`` bytes, as if every element were unmasked;
  asynchronous copies into shared memory (``cp.async`` of a pipelined loop) are loads too.
  A pipelined loop issues ``S - 1`` copies before it (the prologue) and, in each iteration,
  the copy for ``S - 1`` iterations ahead, the last ``S - 1`` of which are masked off (past
  the loop's end): they are not counted, so a loop moves the same bytes pipelined or not;
* loops: the body times its trip count, known when ``lb``, ``ub`` and ``step``
  are constants or kernel arguments given in ``args``; otherwise 1, and the
  loop's line is listed in ``KernelCost.assumptions``; ``if``: the costlier branch.

A vector add of f32 does 1 FLOP per 12 bytes (two 4-byte loads, one store).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..ir import ops
from ..ir.core import Block, FuncOp, Module, Op, Value


@dataclass
class KernelCost:
    """FLOPs and bytes of a launch; ``intensity`` is FLOPs per byte."""

    flops: int = 0
    load_bytes: int = 0
    store_bytes: int = 0
    programs: int = 1
    assumptions: list[str] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return self.load_bytes + self.store_bytes

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes if self.bytes else math.inf

    def scaled(self, times: int) -> KernelCost:
        return KernelCost(self.flops * times, self.load_bytes * times, self.store_bytes * times, self.programs)

    def add(self, other: KernelCost) -> None:
        self.flops += other.flops
        self.load_bytes += other.load_bytes
        self.store_bytes += other.store_bytes


def count_flops_bytes(module: Module | FuncOp, grid=(1, 1, 1), args: dict | None = None) -> KernelCost:
    """FLOPs and bytes moved by launching the kernel of ``module`` on ``grid``.

    ``args`` maps kernel argument names to runtime values; loops bounded by them
    get their real trip counts.
    """
    func = module.kernel if isinstance(module, Module) else module
    env = {a: args[n] for a, n in zip(func.args, func.attrs.get("arg_names", ())) if args and n in args}
    assumptions: list[str] = []
    per_program = _block_cost(func.body, env, assumptions)
    programs = math.prod(tuple(grid) + (1,) * (3 - len(tuple(grid))))
    total = per_program.scaled(programs)
    total.programs, total.assumptions = programs, assumptions
    return total


def _numel(v: Value) -> int:
    return v.type.numel


def _is_float(v: Value) -> bool:
    elem = v.type.element
    return getattr(elem, "is_float", False)


def _block_cost(block: Block, env: dict, assumptions: list[str]) -> KernelCost:
    cost = KernelCost()
    for op in block.ops:
        cost.add(_op_cost(op, env, assumptions))
    return cost


#: One cost rule per op type: ``rule(op, env, assumptions) -> KernelCost``; other ops cost nothing.
_COST_RULES: dict[type, object] = {}


def _cost_of(*op_types):
    def register(rule):
        for t in op_types:
            _COST_RULES[t] = rule
        return rule

    return register


def _op_cost(op: Op, env: dict, assumptions: list[str]) -> KernelCost:
    rule = _COST_RULES.get(type(op))
    return rule(op, env, assumptions) if rule else KernelCost()


@_cost_of(ops.BinaryOp, ops.UnaryOp, ops.CmpOp)
def _elementwise(op, env, assumptions):
    return KernelCost(flops=_numel(op.results[0]) if _is_float(op.operands[0]) else 0)


@_cost_of(ops.FmaOp)
def _fma(op, env, assumptions):
    return KernelCost(flops=2 * _numel(op.result) if _is_float(op.result) else 0)


@_cost_of(ops.DotOp, ops.WarpGroupDotOp)
def _dot(op, env, assumptions):
    a_shape, out_shape = op.operands[0].type.shape, op.result.type.shape
    return KernelCost(flops=2 * math.prod(out_shape) * a_shape[-1])


@_cost_of(ops.LoadOp)
def _load(op, env, assumptions):
    return KernelCost(load_bytes=_numel(op.result) * op.result.type.element.itemsize)


@_cost_of(ops.AsyncCopyGlobalToLocalOp)
def _async_copy(op, env, assumptions):
    return KernelCost(load_bytes=_numel(op.ptrs) * op.ptrs.type.element.pointee.itemsize)


@_cost_of(ops.AsyncTMACopyOp)
def _tma_copy(op, env, assumptions):
    return KernelCost(load_bytes=_numel(op.view) * op.view.type.element.itemsize)


@_cost_of(ops.AsyncTMAStoreOp)
def _tma_store(op, env, assumptions):
    return KernelCost(store_bytes=_numel(op.buf) * op.buf.type.element.itemsize)


def _ring_stages(copy: ops.AsyncCopyGlobalToLocalOp | ops.AsyncTMACopyOp) -> int:
    """``S`` of the ring buffer a copy writes (1 when it writes a plain buffer)."""
    view = copy.view.defining_op
    ring = view.ring.defining_op if isinstance(view, ops.MemDescIndexOp) else view
    return int((getattr(ring, "attrs", None) or {}).get("stages") or 1)


def _prefetch_tail(body: Block) -> int:
    """Bytes of the copies a pipelined loop issues past its end: ``S - 1`` per copy in its body."""
    copies = [op for op in body.ops if isinstance(op, (ops.AsyncCopyGlobalToLocalOp, ops.AsyncTMACopyOp))]
    return sum((_ring_stages(c) - 1) * _op_cost(c, {}, []).load_bytes for c in copies)


@_cost_of(ops.StoreOp)
def _store(op, env, assumptions):
    return KernelCost(store_bytes=_numel(op.value) * op.value.type.element.itemsize)


@_cost_of(ops.ReduceOp, ops.ScanOp)
def _reduce_or_scan(op, env, assumptions):
    folded = _numel(op.operands[0]) - (_numel(op.results[0]) if isinstance(op, ops.ReduceOp) else 0)
    return _block_cost(op.regions[0].block, env, assumptions).scaled(max(folded, 0))


@_cost_of(ops.ForOp)
def _for(op, env, assumptions):
    trips = _trip_count(op, env)
    if trips is None:
        assumptions.append(f"line {op.loc.line}: loop trip count unknown, counted once")
        trips = 1
    cost = _block_cost(op.body, env, assumptions).scaled(trips)
    cost.load_bytes -= _prefetch_tail(op.body)
    return cost


@_cost_of(ops.IfOp)
def _if(op, env, assumptions):
    branches = [_block_cost(b, env, assumptions) for b in (op.then_block, op.else_block)]
    return max(branches, key=lambda c: (c.flops, c.bytes))


@_cost_of(ops.WhileOp)
def _while(op, env, assumptions):
    assumptions.append(f"line {op.loc.line}: while loop counted once")
    cost = _block_cost(op.before, env, assumptions)
    cost.add(_block_cost(op.after, env, assumptions))
    return cost


def _trip_count(op: ops.ForOp, env: dict) -> int | None:
    lb, ub, step = (_scalar_value(v, env) for v in op.operands[:3])
    if None in (lb, ub, step) or step == 0:
        return None
    return max(0, -(-(ub - lb) // step)) if step > 0 else max(0, -(-(lb - ub) // -step))


_FOLD = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: (abs(a) // abs(b)) * (1 if (a < 0) == (b < 0) else -1) if b else None,
    "max": max,
    "min": min,
}


def _scalar_value(v: Value, env: dict) -> int | None:
    """The integer value of a scalar when it is a constant, a given argument, or simple math of those."""
    if v in env:
        return int(env[v])
    op = v.defining_op
    if isinstance(op, ops.ConstantOp) and isinstance(op.value, int):
        return int(op.value)
    if isinstance(op, ops.CastOp):
        return _scalar_value(op.operands[0], env)
    if isinstance(op, ops.BinaryOp) and op.kind in _FOLD:
        a, b = (_scalar_value(x, env) for x in op.operands)
        return None if a is None or b is None else _FOLD[op.kind](a, b)
    return None
