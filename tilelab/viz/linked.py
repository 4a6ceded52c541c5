"""A code pane linked to the kernel source: pick a source line to mark the code lines from it, and back.

Why: "where did this instruction come from?" is the first question a learner asks of IR or
assembly. Every IR op carries ``loc("file":line:col)`` and assembly carries ``.loc`` line info;
this widget shows the code (optionally as a diff), a search box, a list of the kernel's source
lines and a list of the code lines. Choosing a source line selects and marks the code lines
from it; choosing a code line selects its source line and marks it in the source pane.

    pane = LinkedCode(source_model(compiled), "llir")
    pane.set_code(code_lines(compiled.asm["llir"], "llir"))
    pane.src_select.value = 4          # marks the LLVM IR lines of kernel line 4
"""

from __future__ import annotations

import re

import ipywidgets as w

from .highlight import highlight_lines
from .models import CodeLine, DiffRow, SourceModel, near, search_lines, search_texts
from .render import render_code, render_diff

_LOC_TEXT = re.compile(r'\s*loc\("[^"]*":\d+:\d+\)')


def _label(i: int, line: CodeLine, mark: str) -> str:
    where = f"   ← line {line.src_line}" if line.src_line is not None else ""
    return f"{i + 1:4d} {mark} {_LOC_TEXT.sub('', line.text)}{where}"


class LinkedCode:
    """Search box, source-line list, code-line list and the rendered (highlighted or diffed) code."""

    def __init__(self, source: SourceModel, language: str, rows: int = 12):
        self.source, self.language = source, language
        self.lines: list[CodeLine] = []
        self.diff: list[DiffRow] | None = None
        self.highlighted: set[int] = set()
        self.src_line: int | None = None
        self._syncing = False
        self._source_html_lines = highlight_lines(source.text, "python")
        self.search = w.Text(placeholder="search", layout=w.Layout(width="260px"))
        self.count = w.Label("")
        src_options = [(f"{n:4d}  {t}", n) for n, t in zip(source.numbers, source.lines)]
        self.src_select = w.Select(options=src_options, value=None, rows=rows, layout=w.Layout(width="40%"))
        self.code_select = w.SelectMultiple(options=[], rows=rows, layout=w.Layout(width="60%"))
        self.html = w.HTML()
        self.source_html = w.HTML()
        for widget in (self.src_select, self.code_select):
            widget.add_class("tl-mono")
        self.search.observe(lambda _: self.jump(), names="value")
        self.src_select.observe(self._on_source, names="value")
        self.code_select.observe(self._on_code, names="value")
        self.widget = w.VBox(
            [
                w.HBox([self.search, self.count]),
                self.html,
                w.HTML("<b>Source ↔ code</b>: choose a kernel line or a code line to see its counterpart."),
                w.HBox([self.src_select, self.code_select]),
                self.source_html,
            ]
        )

    def set_code(self, lines: list[CodeLine], diff: list[DiffRow] | None = None) -> None:
        """Shows ``lines`` (the 'after' text when ``diff`` is given); keeps the chosen source line."""
        self.lines, self.diff = lines, diff
        added = {r.new_no - 1 for r in diff or [] if r.kind == "add"}
        self._syncing = True
        self.code_select.options = [(_label(i, c, "+" if i in added else " "), i) for i, c in enumerate(lines)]
        self._syncing = False
        self._link_from_source(self.src_line)

    def _on_source(self, change) -> None:
        if not self._syncing:
            self._link_from_source(change["new"])

    def _on_code(self, change) -> None:
        if self._syncing or not change["new"]:
            return
        line = self.source.line_for_code(self.lines, change["new"][0])
        self.highlighted = set(change["new"])
        self.src_line = line
        self._syncing = True
        self.src_select.value = line
        self._syncing = False
        self.render()

    def _link_from_source(self, line: int | None) -> None:
        self.src_line = line
        self.highlighted = set(self.source.code_for_line(self.lines, line)) if line is not None else set()
        self._syncing = True
        self.code_select.value = tuple(sorted(self.highlighted))
        self._syncing = False
        self.render()

    def hits(self) -> list[int]:
        """The rows of the code pane (diff rows when a diff is shown) that contain the search text."""
        if self.diff is not None:
            return search_texts([r.text if r.kind != "skip" else "" for r in self.diff], self.search.value)
        return search_lines(self.lines, self.search.value)

    def jump(self) -> None:
        """After a search: selects the first hit in the code list (linking its source line) and re-renders."""
        hits = self.hits()
        line = hits[0] if hits and self.diff is None else None
        if hits and self.diff is not None:
            line = next((self.diff[i].new_no - 1 for i in hits if self.diff[i].new_no is not None), None)
        if line is not None and line < len(self.lines):
            self.code_select.value = (line,)  # _on_code links its source line and renders
        else:
            self.render()

    def render(self) -> None:
        """Re-renders the code pane and the source pane; search hits are marked, the rest folded around them."""
        query, hits = self.search.value, self.hits()
        self.count.value = _count_text(hits, self.diff, query)
        shown = near(len(self.diff if self.diff is not None else self.lines), hits, 3) if hits else None
        if self.diff is not None:
            self.html.value = render_diff(self.diff, self.language, {i + 1 for i in self.highlighted}, set(hits))
        else:
            bodies = highlight_lines("\n".join(c.text for c in self.lines), self.language)
            numbers = list(range(1, len(self.lines) + 1))
            self.html.value = render_code(bodies, numbers, self.highlighted, set(hits), shown=shown)
        marked = {self.src_line - self.source.first_line} if self.source.has_line(self.src_line) else set()
        in_source = set(search_texts(self.source.lines, query))
        self.source_html.value = render_code(self._source_html_lines, self.source.numbers, marked, in_source)


def _count_text(hits: list[int], diff: list[DiffRow] | None, query: str) -> str:
    if not query.strip():
        return ""
    if not hits:
        return "no matches"
    first = diff[hits[0]].new_no or diff[hits[0]].old_no if diff is not None else hits[0] + 1
    return f"{len(hits)} match{'es' * (len(hits) != 1)}, first at line {first}"
