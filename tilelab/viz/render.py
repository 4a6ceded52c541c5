"""HTML of the view models: code panes with marked lines, diffs, tables; shared by widgets and the report.

Every line is a ``div.tl-line``; marks are classes a test (or a browser) can look for:
``tl-hl`` (linked to the selected line), ``tl-match`` (search hit), ``tl-add`` / ``tl-del``
(diff rows), ``tl-skip`` (folded unchanged rows).

    >>> "tl-hl" in render_code(["x = 1"], [3], highlighted={0})
    True
"""

from __future__ import annotations

import html

from .highlight import highlight_lines, pygments_css
from .models import DiffRow

CSS = """
.tl-code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px;
  line-height: 1.45; background: #fafafa; border: 1px solid #e0e0e0; border-radius: 4px;
  overflow: auto; max-height: 480px; padding: 4px 0; white-space: pre; }
.tl-line { padding: 0 8px; min-height: 1.45em; }
.tl-no { display: inline-block; width: 3.5em; color: #9e9e9e; user-select: none; text-align: right;
  margin-right: 1em; }
.tl-mark { display: inline-block; width: 1.2em; color: #616161; user-select: none; }
.tl-hl { background: #fff3b0; }
.tl-match { outline: 1px solid #f0a000; background: #ffe4cc; }
.tl-add { background: #e6ffec; }
.tl-add .tl-mark { color: #1a7f37; }
.tl-del { background: #ffebe9; }
.tl-del .tl-mark { color: #cf222e; }
.tl-skip { color: #9e9e9e; background: #f2f2f2; }
.tl-note { color: #616161; font-style: italic; padding: 6px 0; }
.tl-error { font-family: ui-monospace, Menlo, Consolas, monospace; border-left: 4px solid #cf222e;
  padding: 6px 10px; background: #fff8f8; }
.tl-error-msg { color: #cf222e; font-weight: bold; margin-bottom: 4px; white-space: pre-wrap; }
.tl-table td { padding: 2px 12px 2px 0; font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; }
.tl-inspector .lm-TabBar-tab, .tl-inspector .p-TabBar-tab { flex: 0 0 auto !important; max-width: none !important;
  min-width: 0 !important; padding: 0 10px !important; }
.tl-inspector .widget-html-content { max-width: 100%; overflow-wrap: anywhere; }
.tl-mono select, .tl-mono option { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; }
"""


def style_block() -> str:
    """A ``<style>`` element with the view CSS and the syntax colours."""
    return f"<style>{CSS}\n{pygments_css('.tl-code')}</style>"


def _line(body: str, classes: list[str], number, mark: str = "", anchor: str | None = None) -> str:
    cls = " ".join(["tl-line", *classes])
    no = "" if number is None else str(number)
    ident = f' id="{anchor}"' if anchor else ""
    mark_html = f'<span class="tl-mark">{html.escape(mark)}</span>' if mark else ""
    return f'<div class="{cls}"{ident} data-no="{no}"><span class="tl-no">{no}</span>{mark_html}{body}</div>'


def _skip(count: int) -> str:
    return _line(f"⋯ {count} line{'s' * (count != 1)} ⋯", ["tl-skip"], None)


def render_code(
    html_lines: list[str],
    numbers: list,
    highlighted: set[int] = frozenset(),
    matches: set[int] = frozenset(),
    anchor_prefix: str | None = None,
    links: list | None = None,
    shown: set[int] | None = None,
) -> str:
    """A code pane; ``links[i]`` (a source line or None) turns line i into a link to ``#src-<line>``.

    With ``shown`` (the indices to show, e.g. the search hits and their context) every run of
    other lines folds into one ``tl-skip`` row, so the first hit sits at the top of the pane.
    """
    out, folded = [], 0
    for i, (body, number) in enumerate(zip(html_lines, numbers)):
        if shown is not None and i not in shown:
            folded += 1
            continue
        if folded:
            out.append(_skip(folded))
            folded = 0
        classes = (["tl-hl"] if i in highlighted else []) + (["tl-match"] if i in matches else [])
        if links and links[i] is not None:
            body = f'<a href="#src-{links[i]}" title="source line {links[i]}">{body}</a>'
        anchor = f"{anchor_prefix}-{number}" if anchor_prefix else None
        out.append(_line(body, classes, number, anchor=anchor))
    if folded:
        out.append(_skip(folded))
    return f'<div class="tl-code">{"".join(out)}</div>'


_MARKS = {"same": " ", "add": "+", "del": "-", "skip": " "}


def render_diff(
    rows: list[DiffRow],
    language: str = "tile",
    highlighted_new: set[int] = frozenset(),
    matches: set[int] = frozenset(),
) -> str:
    """A unified diff pane; ``highlighted_new`` holds 1-based line numbers of the 'after' text to mark,
    ``matches`` the indices of the rows that a search hit (marked ``tl-match``)."""
    if not rows:
        return '<div class="tl-note">(empty)</div>'
    bodies = highlight_lines("\n".join(r.text for r in rows), language)
    out = []
    for i, (row, body) in enumerate(zip(rows, bodies)):
        classes = [] if row.kind == "same" else [f"tl-{row.kind}"]
        if row.new_no is not None and row.new_no in highlighted_new:
            classes.append("tl-hl")
        if i in matches:
            classes.append("tl-match")
        number = row.new_no if row.new_no is not None else row.old_no
        out.append(_line(body if row.kind != "skip" else "⋯ unchanged lines ⋯", classes, number, _MARKS[row.kind]))
    return f'<div class="tl-code">{"".join(out)}</div>'


def render_table(rows: list[tuple[str, str]]) -> str:
    """A two-column table of (label, value) rows."""
    body = "".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(v)}</td></tr>" for k, v in rows)
    return f'<table class="tl-table">{body}</table>'


def render_note(text: str) -> str:
    return f'<div class="tl-note">{html.escape(text)}</div>'


def render_error(message: str, source: str, first_line: int, bad_line: int | None) -> str:
    """A compile error: the short message, then the cell's lines with the offending one marked."""
    lines = source.splitlines()
    numbers = list(range(first_line, first_line + len(lines)))
    marked = {bad_line - first_line} if bad_line is not None else set()
    code = render_code(highlight_lines(source, "python"), numbers, highlighted=marked)
    return f'{style_block()}<div class="tl-error"><div class="tl-error-msg">{html.escape(message)}</div>{code}</div>'
