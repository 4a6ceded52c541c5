"""Provenance of rewrites: which rule fired, where its code is, and what it changed.

Why: the pass viewer links each change in a before/after diff to the code that made it.
Passes call ``fired(rule, op, new_values)`` whenever a rewrite applies; outside a
``tracing()`` block that call returns at once, so it costs nothing in normal compiles::

    with tracing() as records:
        canonicalize.run(module)
    records[0].rule, records[0].where   # ('add_zero', 'tilelab/compiler/passes/canonicalize.py:88')
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..ir.core import Loc, Op, Value
from ..ir.printer import Printer, op_display_name

_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

_records: list[RuleRecord] | None = None


@dataclass(frozen=True)
class RuleRecord:
    """One rewrite: the rule (function name), its ``file:line``, the op it matched and what replaced it."""

    rule: str
    file: str
    line: int
    op: str
    loc: Loc
    before: str
    after: str

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@contextmanager
def tracing() -> Iterator[list[RuleRecord]]:
    """Record every rule that fires inside the block into the yielded list."""
    global _records
    saved, _records = _records, []
    try:
        yield _records
    finally:
        _records = saved


def enabled() -> bool:
    """Whether rewrites are being recorded (passes may skip extra work when not)."""
    return _records is not None


def fired(rule, op: Op, new_values: list[Value] | None = None, before: str | None = None) -> None:
    """Record that ``rule`` rewrote ``op`` (its results now ``new_values``); free when not tracing.

    ``before`` is the op's text, for rules that change the op before reporting it.
    """
    if _records is None:
        return
    code = rule.__code__
    file = os.path.relpath(code.co_filename, _PACKAGE_ROOT).replace(os.sep, "/")
    _records.append(
        RuleRecord(
            rule=rule.__name__,
            file=file,
            line=code.co_firstlineno,
            op=op_display_name(op),
            loc=op.loc,
            before=before if before is not None else describe_op(op),
            after=_describe_values(new_values or []),
        )
    )


def describe_op(op: Op) -> str:
    """The op's first printed line (regions and location left out); block arguments keep their names."""
    p = Printer(locs=False)
    for v in op.operands:
        if v.defining_op is None and v.name_hint:
            p.names[v] = f"%{v.name_hint}"
    p.print_op(op, 0)
    return p.lines[0].strip()


def _describe_values(values: list[Value]) -> str:
    parts = []
    for v in values:
        if v.defining_op is not None:
            parts.append(describe_op(v.defining_op))
        else:
            parts.append(f"block argument {v.name_hint or v.index}: {v.type}")
    return "; ".join(parts) if parts else "(removed)"
