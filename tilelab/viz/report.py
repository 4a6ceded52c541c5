"""The static HTML report of a CompiledKernel: the inspector's views as one self-contained page.

Why: a report can be attached to an issue, opened without Jupyter, or written by the ``tilelab``
command in CI. It renders the same view models as the widgets; the interactive parts become
plain HTML: each pass's diff in a ``<details>``, and every IR or assembly line that has a source
location links to ``#src-<line>`` in the source section.

    write_report(compiled, "add.html")
"""

from __future__ import annotations

import html
from pathlib import Path

from .highlight import highlight_lines
from .inspector import CODE_TABS
from .models import code_lines, diff_rows, pass_rows, source_model
from .render import render_code, render_diff, render_note, render_table, style_block
from .resources import resource_rows
from .views import load_builtin_views, views

_PAGE_CSS = """
body { font-family: system-ui, sans-serif; margin: 24px; color: #212121; }
nav a { margin-right: 14px; }
details { margin: 6px 0; }
summary { cursor: pointer; font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 13px; }
.tl-unchanged summary { color: #9e9e9e; }
.tl-code a { color: inherit; text-decoration: none; }
:target { background: #fff3b0; }
"""


def _section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{html.escape(title)}</h2>{body}</section>'


def _passes_html(compiled) -> str:
    rows = pass_rows(compiled.passes or [])
    if not rows:
        return render_note("No pass snapshots: compile with snapshots=True to see them.")
    parts = []
    for row in rows:
        rec = compiled.passes[row.index]
        diff = diff_rows(rec.ir_before, rec.ir_after, context=3) if row.changed else []
        body = render_diff(diff) if diff else render_note("left the IR unchanged")
        cls = "" if row.changed else ' class="tl-unchanged"'
        parts.append(f"<details{cls}><summary>{html.escape(row.label)}</summary>{body}</details>")
    return "".join(parts)


def _code_html(compiled, key: str, language: str) -> str:
    text = (compiled.asm or {}).get(key)
    if not text:
        return render_note(f"{key}: not produced for this target ({compiled.target}).")
    lines = code_lines(text, language)
    src = source_model(compiled)
    links = [c.src_line if src.has_line(c.src_line) else None for c in lines]
    body = render_code(highlight_lines(text, language), list(range(1, len(lines) + 1)), links=links)
    return f"<details><summary>{len(lines)} lines</summary>{body}</details>"


def _plugin_html(view, compiled) -> str:
    if view.html is None:
        return render_note(view.note if view.factory is None else f"{view.name}: interactive only.")
    try:
        return view.html(compiled)
    except Exception as e:  # a broken plug-in must not take the report down
        return render_note(f"{view.name} failed: {type(e).__name__}: {e}")


def report_html(compiled) -> str:
    """The report page of ``compiled`` as a string."""
    load_builtin_views()
    src = source_model(compiled)
    sections = [
        ("source", "Source", render_code(highlight_lines(src.text, "python"), src.numbers, anchor_prefix="src"))
    ]
    final_ir = (compiled.asm or {}).get("tile", "")
    sections.append(("tile", "Final tile IR", _code_html(compiled, "tile", "tile") if final_ir else render_note("-")))
    sections.append(("passes", "Passes", _passes_html(compiled)))
    sections += [(key, title, _code_html(compiled, key, lang)) for title, key, lang in CODE_TABS]
    sections.append(("resources", "Resources", render_table(resource_rows(compiled))))
    sections += [(v.name.replace(" ", "-"), v.name, _plugin_html(v, compiled)) for v in views()]
    nav = "".join(f'<a href="#{a}">{html.escape(t)}</a>' for a, t, _ in sections)
    body = "".join(_section(a, t, b) for a, t, b in sections)
    title = f"{compiled.name} · {compiled.target}"
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_PAGE_CSS}</style>{style_block()}</head><body><h1>{html.escape(title)}</h1>"
        f"<nav>{nav}</nav>{body}</body></html>"
    )


def write_report(compiled, path) -> Path:
    """Writes the report of ``compiled`` to ``path`` and returns the path."""
    path = Path(path)
    path.write_text(report_html(compiled), encoding="utf-8")
    return path
