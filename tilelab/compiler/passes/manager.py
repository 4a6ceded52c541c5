"""The pass manager: runs passes in order, times them, and (when asked) keeps the IR after each.

Why: the inspector's pass viewer shows each pass's before/after diff and the rules that
fired; the lead measures compile time per pass; and a pass that breaks the IR must be
caught at once and named. Printing costs time, so it happens only with
``snapshots=True``; with the default ``snapshots=False`` a pass costs its own run plus
the verifier after it when it changed the IR (a module a pass left unchanged was checked
already; ``verify=False`` skips the verifier). The use-lists are checked before the first
pass and after the last (one walk each)::

    records = PassManager(PIPELINES["cpu"], snapshots=True).run(module)
    for r in records:
        print(r.name, f"{r.seconds * 1e3:.2f} ms", r.changed, len(r.rules))
"""

from __future__ import annotations

import time
from contextlib import nullcontext

from ..ir.core import Module
from ..ir.printer import print_module_uids
from ..ir.verifier import VerificationError, check_uses, verify
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

    def _check(self, module: Module, name: str | None, uses: bool = False) -> None:
        if not self.verify:
            return
        try:
            verify(module, uses=uses)
        except VerificationError as e:
            where = f"pass '{name}' broke the IR" if name else "the IR is invalid before the first pass"
            raise PassError(f"internal compiler error: {where}: {e}") from e

    def run(self, module: Module) -> list[PassRecord]:
        """Run every pass over ``module`` in place; return one record per pass."""
        self._check(module, None, uses=True)
        records = []
        unchanged: list[str] = []  # passes run since the last check that said they changed nothing
        text, uids = print_module_uids(module) if self.snapshots else (None, None)
        for p in self.passes:
            with tracing.tracing() if self.trace else nullcontext([]) as rules:
                start = time.perf_counter()
                changed = bool(p.run(module))
                seconds = time.perf_counter() - start
            if changed:
                self._check(module, p.name)
                unchanged = []
            else:
                unchanged.append(p.name)
            after, after_uids = (text, uids)
            if self.snapshots and changed:
                after, after_uids = print_module_uids(module)
            records.append(PassRecord(p.name, seconds, changed, text, after, list(rules), uids, after_uids))
            text, uids = after, after_uids
        self._final_check(module, unchanged)
        return records

    def _final_check(self, module: Module, unchanged: list[str]) -> None:
        """The use-lists once after the last pass (the pass tests check them after every pass), and the
        whole IR again if passes that said they changed nothing ran since the last check."""
        if not self.verify:
            return
        try:
            if unchanged:
                verify(module, uses=True)
            else:
                check_uses(module)
        except VerificationError as e:
            which = f"one of the passes {', '.join(unchanged)} (reported no change)" if unchanged else "a pass"
            raise PassError(f"internal compiler error: {which} broke the IR: {e}") from e
