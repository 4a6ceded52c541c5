"""The verifier: checks the IR's invariants between passes.

It catches compiler bugs, not user errors (the frontend reports those with the
user's line). Checked: every operand is defined before use and visible from its
use (SSA dominance within nested regions), only the last op of a block is a
terminator, and every op's own rules (``Op.verify``: operand and result counts and
types, attributes, regions and their terminators, the rules its traits state).
"""

from __future__ import annotations

from .core import Block, FuncOp, Module, Value, VerificationError


def _verify_block(block: Block, visible: set[Value]) -> None:
    visible = set(visible)
    visible.update(block.args)
    last = block.ops[-1] if block.ops else None
    for op in block.ops:
        for v in op.operands:
            if v not in visible:
                op.fail(f"operand {v} is used before its definition or out of scope")
        if op.is_terminator and op is not last:
            op.fail("terminator in the middle of a block")
        op.verify()
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
        f.verify()
        _verify_block(f.body, set())


__all__ = ["VerificationError", "verify"]
