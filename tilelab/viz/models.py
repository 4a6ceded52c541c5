"""View models of the inspector: plain Python data (lines, diff rows, links), no widgets.

Why: the same data feeds the ipywidgets inspector, the static HTML report and the tests, so
each behaviour (which IR lines came from a source line, which pass changed what) is computed
once and tested without a browser.

    >>> lines = code_lines('%0 = tt.get_program_id {axis = 0} : i32 loc("add.py":3:11)', "tile")
    >>> lines[0].src_line
    3
    >>> [r.kind for r in diff_rows("a\\nb\\n", "a\\nc\\n")]
    ['same', 'del', 'add']
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field

_IR_LOC = re.compile(r'loc\("(?P<file>[^"]*)":(?P<line>\d+):(?P<col>\d+)\)')
_LL_DBG = re.compile(r"!dbg !(\d+)")
_LL_DILOC = re.compile(r"^!(\d+) = (?:distinct )?!DILocation\(line: (\d+)")
_ASM_LOC = re.compile(r"^\s*\.loc\s+\d+\s+(\d+)")
_SASS_LOC = re.compile(r'//## File ".*", line (\d+)')


@dataclass
class CodeLine:
    """One line of code (IR, LLVM IR, assembly) and the kernel source line it came from."""

    text: str
    src_line: int | None = None


def _tile_line_info(lines: list[str]) -> list[int | None]:
    found = [_IR_LOC.search(t) for t in lines]
    return [int(m["line"]) if m else None for m in found]


def _llvm_line_info(lines: list[str]) -> list[int | None]:
    dilocs = {}
    for t in lines:
        m = _LL_DILOC.match(t)
        if m:
            dilocs[m[1]] = int(m[2])
    found = [_LL_DBG.search(t) for t in lines]
    return [dilocs.get(m[1]) if m else None for m in found]


def _directive_line_info(lines: list[str], pattern: re.Pattern) -> list[int | None]:
    """Assembly carries `.loc` (or SASS line comments) that apply to the lines after them."""
    current, out = None, []
    for t in lines:
        m = pattern.search(t)
        if m:
            current = int(m[1])
            out.append(None)
        else:
            out.append(current if t.strip() else None)
    return out


def line_info(text: str, stage: str) -> list[int | None]:
    """Per line of ``text``, the kernel source line it came from (None where unknown)."""
    lines = text.splitlines()
    if stage == "tile":
        return _tile_line_info(lines)
    if stage == "llir":
        return _llvm_line_info(lines)
    if stage == "sass":
        return _directive_line_info(lines, _SASS_LOC)
    return _directive_line_info(lines, _ASM_LOC)


def code_lines(text: str, stage: str) -> list[CodeLine]:
    """The lines of ``text`` with their source lines (stage: tile, llir, asm, ptx, sass)."""
    shown = short_locs(text) if stage == "tile" else text
    return [CodeLine(t, s) for t, s in zip(shown.splitlines(), line_info(text, stage))]


def search_lines(lines: list[CodeLine], query: str) -> list[int]:
    """Indices of the lines containing ``query`` (case-insensitive); empty query, no hits."""
    return search_texts([line.text for line in lines], query)


def search_texts(texts: list[str], query: str) -> list[int]:
    """Indices of the texts containing ``query`` (case-insensitive); an empty query has no hits."""
    q = query.strip().lower()
    return [i for i, t in enumerate(texts) if q in t.lower()] if q else []


def near(count: int, centers, context: int) -> set[int]:
    """The indices in ``range(count)`` at most ``context`` away from one of ``centers``.

    >>> sorted(near(10, [4], 1))
    [3, 4, 5]
    """
    return {j for i in centers for j in range(max(0, i - context), min(count, i + context + 1))}


@dataclass
class DiffRow:
    """One row of a before/after diff: kind is 'same', 'add', 'del' or 'skip' (folded context)."""

    kind: str
    text: str
    old_no: int | None = None
    new_no: int | None = None


_CELL_FILE = re.compile(r"(^|/)(ipykernel_\d+/)?-?\d+\.py$|<ipython-input-")
_SSA_NAME = re.compile(r"%[A-Za-z_0-9][\w.]*")
_LOC_SUFFIX = re.compile(r' loc\("[^"]*":\d+:\d+\)')


def _loc_text(m: re.Match) -> str:
    file = m["file"]
    if _CELL_FILE.search(file):
        return f"loc(cell line {m['line']})"
    return f"loc({file.rsplit('/', 1)[-1]} line {m['line']})"


def short_locs(text: str) -> str:
    """IR text with each ``loc("/tmp/ipykernel_7/1078421621.py":3:11)`` shown as ``loc(cell line 3)``.

    Notebook cells compile from temporary files with hashed names that say nothing to a reader;
    a kernel from a file keeps its base name: ``loc(add.py line 3)``.

        >>> short_locs('%0 = tt.get_program_id {axis = 0} : i32 loc("/tmp/ipykernel_1/20.py":3:11)')
        '%0 = tt.get_program_id {axis = 0} : i32 loc(cell line 3)'
    """
    return _IR_LOC.sub(_loc_text, text)


def without_locs(line: str) -> str:
    """The line without its `` loc(...)`` suffix."""
    return _LOC_SUFFIX.sub("", line)


def erase_names(line: str) -> str:
    """The line with every SSA name as ``%``: two prints of one op compare equal however values were numbered."""
    return _SSA_NAME.sub("%", without_locs(line))


def pass_diff_rows(record, locs: bool = False, context: int | None = None) -> list[DiffRow]:
    """What one pass did to the IR: the ops it removed ('del'), added ('add') or changed (both).

    Ops are matched across the two snapshots by ``Op.uid`` (``record.uids_before`` / ``uids_after``,
    one per line) when the record has them, else by their text with SSA names erased; either way a
    value renumbered because an op before it went away is not a change. Locations are hidden unless
    ``locs`` (then shown as ``cell line N``). cse removing one duplicate ``make_range`` is one 'del' row.
    """
    before, after = (record.ir_before or "").splitlines(), (record.ir_after or "").splitlines()
    ub, ua = getattr(record, "uids_before", None), getattr(record, "uids_after", None)
    if not (ub and ua and len(ub) == len(before) and len(ua) == len(after)):
        ub, ua = [None] * len(before), [None] * len(after)
    keys_b = [("op", u) if u is not None else ("text", erase_names(t)) for t, u in zip(before, ub)]
    keys_a = [("op", u) if u is not None else ("text", erase_names(t)) for t, u in zip(after, ua)]
    shown_b = [short_locs(t) if locs else without_locs(t) for t in before]
    shown_a = [short_locs(t) if locs else without_locs(t) for t in after]
    rows: list[DiffRow] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, keys_b, keys_a, autojunk=False).get_opcodes():
        if tag != "equal":
            rows += [DiffRow("del", shown_b[i], i + 1, None) for i in range(i1, i2)]
            rows += [DiffRow("add", shown_a[j], None, j + 1) for j in range(j1, j2)]
            continue
        for i, j in zip(range(i1, i2), range(j1, j2)):
            if erase_names(before[i]) == erase_names(after[j]):
                rows.append(DiffRow("same", shown_a[j], i + 1, j + 1))
            else:  # the same op, changed in place (a new type, layout or attribute)
                rows += [DiffRow("del", shown_b[i], i + 1, None), DiffRow("add", shown_a[j], None, j + 1)]
    return rows if context is None else fold_context(rows, context)


def diff_rows(before: str | None, after: str | None, context: int | None = None) -> list[DiffRow]:
    """The line diff of two IR texts; with ``context``, unchanged runs longer than that fold to 'skip'."""
    a, b = short_locs(before or "").splitlines(), short_locs(after or "").splitlines()
    rows: list[DiffRow] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            rows += [DiffRow("same", a[i], i + 1, j1 + i - i1 + 1) for i in range(i1, i2)]
            continue
        rows += [DiffRow("del", a[i], i + 1, None) for i in range(i1, i2)]
        rows += [DiffRow("add", b[j], None, j + 1) for j in range(j1, j2)]
    return rows if context is None else fold_context(rows, context)


def fold_context(rows: list[DiffRow], context: int) -> list[DiffRow]:
    """Replaces unchanged rows farther than ``context`` rows from a change by one 'skip' row."""
    changed = [i for i, r in enumerate(rows) if r.kind != "same"]
    keep = {j for i in changed for j in range(i - context, i + context + 1)}
    out: list[DiffRow] = []
    for i, row in enumerate(rows):
        if i in keep or row.kind != "same":
            out.append(row)
        elif not out or out[-1].kind != "skip":
            out.append(DiffRow("skip", "⋯"))
    return out


@dataclass
class SourceModel:
    """The kernel's source lines, numbered as in its file, and the links to a piece of code."""

    text: str
    filename: str = "<kernel>"
    first_line: int = 1
    lines: list[str] = field(init=False)

    def __post_init__(self):
        self.lines = self.text.splitlines()

    @property
    def numbers(self) -> list[int]:
        """The file line numbers of the source lines."""
        return list(range(self.first_line, self.first_line + len(self.lines)))

    def has_line(self, line: int | None) -> bool:
        return line is not None and self.first_line <= line < self.first_line + len(self.lines)

    def code_for_line(self, code: list[CodeLine], line: int) -> list[int]:
        """Indices of the code lines that came from source ``line``."""
        return [i for i, c in enumerate(code) if c.src_line == line]

    def line_for_code(self, code: list[CodeLine], index: int) -> int | None:
        """The source line the code line ``index`` came from, if it is in this kernel."""
        line = code[index].src_line if 0 <= index < len(code) else None
        return line if self.has_line(line) else None


def source_model(compiled) -> SourceModel:
    """The SourceModel of a CompiledKernel."""
    filename = getattr(compiled, "filename", None) or "<kernel>"
    return SourceModel(compiled.source or "", os.path.basename(filename), getattr(compiled, "first_line", 1) or 1)


@dataclass
class PassRow:
    """One entry of the pass list."""

    index: int
    name: str
    seconds: float
    changed: bool

    @property
    def label(self) -> str:
        mark = "changed" if self.changed else "unchanged"
        return f"{self.index + 1:2d}. {self.name:<28} {self.seconds * 1e3:8.2f} ms  {mark}"


def pass_rows(records, hide_unchanged: bool = False, query: str = "") -> list[PassRow]:
    """The pass list, filtered: unchanged passes hidden on demand; ``query`` matches the name or the IR after."""
    q = query.strip().lower()
    rows = []
    for i, rec in enumerate(records):
        if hide_unchanged and not rec.changed:
            continue
        if q and q not in rec.name.lower() and q not in (rec.ir_after or "").lower():
            continue
        rows.append(PassRow(i, rec.name, rec.seconds, bool(rec.changed)))
    return rows
