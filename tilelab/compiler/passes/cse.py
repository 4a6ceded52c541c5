"""Common subexpression elimination: compute each pure value once.

Why: the frontend emits what each source expression needs, so ``x + offs`` written
twice, or two ``tt.splat`` of the same scalar, become two ops. Two pure ops with the
same name, operands, attributes and result types give the same values: the second is
replaced by the first. Operands of a commutative op (``add``, ``mul``, ``max``, ``eq``
...: the ``Commutative`` trait) count in any order, so ``a + b`` and ``b + a`` merge.
Scoping follows dominance: an op in a loop body or an ``scf.if`` branch may reuse a
value computed above it, but values computed inside a region are not visible after it
or in a sibling branch. A pure op with regions (a reduction, a scan) merges with one
whose regions hold the same ops on the same values (``tl.max(x, 1)`` and the max that
``tl.argmax(x, 1)`` starts with); ops with side effects (loads included: a store may
come between) are never merged.

before:
    tt.func @k(%x: !ptr<i32>, %c: i1) {
      %0 = tt.get_program_id {axis = 0} : i32
      %1 = tt.get_program_id {axis = 0} : i32
      %2 = arith.add %0, %1 : i32
      scf.if %c {
        %3 = arith.mul %2, %2 : i32
        tt.store %x, %3 : !ptr<i32>
        scf.yield
      } else {
        scf.yield
      }
      %4 = arith.add %1, %0 : i32
      %5 = arith.mul %4, %4 : i32
      tt.store %x, %5 : !ptr<i32>
      tt.return
    }
after:
    tt.func @k(%x: !ptr<i32>, %c: i1) {
      %0 = tt.get_program_id {axis = 0} : i32
      %1 = arith.add %0, %0 : i32
      scf.if %c {
        %2 = arith.mul %1, %1 : i32
        tt.store %x, %2 : !ptr<i32>
        scf.yield
      } else {
        scf.yield
      }
      %3 = arith.mul %1, %1 : i32
      tt.store %x, %3 : !ptr<i32>
      tt.return
    }

The second ``arith.mul`` stays: the first one, inside the branch, does not dominate it.
"""

from __future__ import annotations

from collections import ChainMap

from ..ir.core import Block, Module, Op, Value
from ..ir.rewriter import Rewriter
from ..ir.traits import Commutative
from . import tracing

NAME = "cse"


def _freeze(x):
    """A hashable, type-exact form of an attribute value (``-0.0`` differs from ``0.0``; ``1`` from ``True``)."""
    if isinstance(x, (list, tuple)):
        return tuple(_freeze(v) for v in x)
    if isinstance(x, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in x.items()))
    if isinstance(x, float):
        return ("float", x.hex())
    hash(x)  # raises TypeError for unhashable attribute objects: such ops are not merged
    return (type(x).__name__, x)


def _body(op: Op) -> tuple:
    """The ops of ``op``'s regions as a hashable form: two pure ops with equal bodies compute alike.

    A value defined in the regions is named by where it is defined (block argument ``i`` of block ``b``,
    result ``i`` of the ``n``-th op); a value from outside stays itself.
    """
    names: dict[int, tuple] = {}
    form = []
    for r, region in enumerate(op.regions):
        for b, block in enumerate(region.blocks):
            for i, arg in enumerate(block.args):
                names[id(arg)] = ("arg", r, b, i)
            for inner in block.ops:
                n = len(form)
                operands = tuple(names.get(id(v), v) for v in inner.operands)
                form.append((type(inner), inner.name, operands, _freeze(inner.attrs), _body(inner)))
                for i, res in enumerate(inner.results):
                    names[id(res)] = ("result", n, i)
                    form[-1] += (res.type,)
    return tuple(form)


def _key(op: Op):
    """What makes two ops interchangeable, or ``None`` when ``op`` may not be merged."""
    if not op.results or op.is_terminator or not op.pure:
        return None
    operands = tuple(op.operands)
    if op.has_trait(Commutative):
        operands = tuple(sorted(operands, key=id))
    try:
        return (
            type(op),
            op.name,
            operands,
            _freeze(op.attrs),
            tuple(r.type for r in op.results),
            _body(op),
        )
    except TypeError:
        return None


def equal_pure_op(op: Op, earlier: Op) -> list[Value]:
    """A pure op equal to an ``earlier`` one that dominates it is replaced by it."""
    return list(earlier.results)


def _cse_block(block: Block, table: ChainMap) -> bool:
    changed = False
    for op in list(block.ops):
        for region in op.regions:
            for inner in region.blocks:
                changed |= _cse_block(inner, table.new_child())
        key = _key(op)
        if key is None:
            continue
        earlier = table.get(key)
        if earlier is None:
            table[key] = op
            continue
        new = equal_pure_op(op, earlier)
        tracing.fired(equal_pure_op, op, new)
        Rewriter.replace_op(op, new)
        changed = True
    return changed


def run(module: Module) -> bool:
    """Merge equal pure ops in every function."""
    changed = False
    for func in module.funcs:
        changed |= _cse_block(func.body, ChainMap())
    return changed
