"""The verifier: checks the IR's invariants between passes.

It catches compiler bugs, not user errors (the frontend reports those with the
user's line). Checked: every operand is defined before use and visible from its
use (SSA dominance within nested regions), only the last op of a block is a
terminator, and every op's own rules (``Op.verify``: operand and result counts and
types, attributes, regions and their terminators, the rules its traits state), and
that every value's use-list holds exactly the operand slots that use it (``check_uses``).
"""

from __future__ import annotations

from .core import Block, FuncOp, Module, Op, Value, VerificationError


def _verify_block(block: Block, visible: set[Value]) -> None:
    visible = set(visible)
    visible.update(block.args)
    last = block.ops[-1] if block.ops else None
    for op in block.ops:
        for v in op._operands:
            if v not in visible:
                op.fail(f"operand {v} is used before its definition or out of scope")
        if op.is_terminator and op is not last:
            op.fail("terminator in the middle of a block")
        op.verify()
        for region in op.regions:
            for inner in region.blocks:
                _verify_block(inner, visible)
        visible.update(op.results)


def verify(module: Module, uses: bool = True) -> None:
    """Raise ``VerificationError`` if ``module`` breaks an invariant (``uses=False``: use-lists not checked)."""
    names = set()
    for f in module.funcs:
        if not isinstance(f, FuncOp):
            raise VerificationError(f"top-level op {f.name} is not a function")
        if f.sym_name in names:
            raise VerificationError(f"function @{f.sym_name} defined twice")
        names.add(f.sym_name)
        f.verify()
        _verify_block(f.body, set())
    if uses:
        check_uses(module)


def check_uses(root: Module | Op) -> None:
    """Recompute every use-list under ``root`` by walking it, and compare with the IR's own.

    A mismatch is a bug in the code that edited the IR: an op erased without dropping
    its references, or operands changed behind the operand list's back.
    """
    expected: dict[Value, dict] = {}
    values: list[Value] = []
    live = set()
    for op in root.walk():
        live.add(op)
        values.extend(op.results)
        for region in op.regions:
            for block in region.blocks:
                values.extend(block.args)
        for v in op.operands:
            counts = expected.setdefault(v, {})
            counts[op] = counts.get(op, 0) + 1
    for v in (*values, *expected):
        want = expected.get(v, {})
        if v._users != want:
            _report_uses(v, want, live)


def _report_uses(v: Value, want: dict, live: set) -> None:
    dead = [op for op in v._users if op not in live]
    owner = v.defining_op
    where = f"{owner.name} at {owner.loc}" if owner is not None else f"block argument {v.name_hint or v.index}"
    if dead:
        raise VerificationError(
            f"use-list of {v} ({where}) holds {dead[0].name} at {dead[0].loc}, which is not in the IR "
            "(erased or never inserted without dropping its references)"
        )
    got = {op.name: n for op, n in v._users.items()}
    raise VerificationError(
        f"use-list of {v} ({where}) is {got}, the IR has { ({o.name: n for o, n in want.items()}) }"
    )


__all__ = ["VerificationError", "check_uses", "verify"]
