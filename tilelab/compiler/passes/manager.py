"""The pass manager: runs passes in order, times them, and (when asked) keeps the IR after each.

Why: the inspector's pass viewer shows each pass's before/after diff and the rules that
fired; the lead measures compile time per pass; and a pass that breaks the IR must be
caught at once and named. Printing costs time, so it happens only with
``snapshots=True``; with the default ``snapshots=False`` a pass costs its own run plus
the verifier (``verify=False`` skips that too)::

    records = PassManager(PIPELINES["cpu"], snapshots=True).run(module)
    for r in records:
        print(r.name, f"{r.seconds * 1e3:.2f} ms", r.changed, len(r.rules))
"""

from __future__ import annotations

import time
from contextlib import nullcontext

from ..ir.core import Module
from ..ir.printer import print_module_uids
from ..ir.verifier import VerificationError, verify
from . import tracing


class PassError(Exception):
    """Internal compiler error: a pass left the IR invalid (or the IR was invalid before any pass)."""


class PassRecord:
    """What one pass did: its time, whether it changed the IR, the IR around it and the rules fired.

    A plain class, not a dataclass: generating a dataclass's methods costs ~0.5 ms of every
    process's first compile.
    """

    def __init__(
        self,
        name: str,
        seconds: float,
        changed: bool,
        ir_before: str | None = None,
        ir_after: str | None = None,
        rules: list[tracing.RuleRecord] | None = None,
        uids_before: tuple | None = None,
        uids_after: tuple | None = None,
    ):
        self.name = name
        self.seconds = seconds
        self.changed = changed
        self.ir_before = ir_before
        self.ir_after = ir_after
        self.rules = [] if rules is None else rules
        # per line of ir_before / ir_after, the uid of the op printed there: the pass diff matches ops by it
        self.uids_before, self.uids_after = uids_before, uids_after

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"PassRecord({fields})"


class PassManager:
    """Runs ``passes`` (objects with ``name`` and ``run``) over a module, verifying in between."""

    def __init__(self, passes, snapshots: bool = False, verify: bool = True, trace: bool | None = None):
        self.passes = list(passes)
        self.snapshots = snapshots
        self.verify = verify
        self.trace = snapshots if trace is None else trace

    def _check(self, module: Module, name: str | None) -> None:
        if not self.verify:
            return
        try:
            verify(module)
        except VerificationError as e:
            where = f"pass '{name}' broke the IR" if name else "the IR is invalid before the first pass"
            raise PassError(f"internal compiler error: {where}: {e}") from e

    def run(self, module: Module) -> list[PassRecord]:
        """Run every pass over ``module`` in place; return one record per pass."""
        self._check(module, None)
        records = []
        text, uids = print_module_uids(module) if self.snapshots else (None, None)
        for p in self.passes:
            with tracing.tracing() if self.trace else nullcontext([]) as rules:
                start = time.perf_counter()
                changed = bool(p.run(module))
                seconds = time.perf_counter() - start
            self._check(module, p.name)
            after, after_uids = (text, uids)
            if self.snapshots and changed:
                after, after_uids = print_module_uids(module)
            records.append(PassRecord(p.name, seconds, changed, text, after, list(rules), uids, after_uids))
            text, uids = after, after_uids
        return records
