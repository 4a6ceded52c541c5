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

from .gpu import AMD_TAB, GPU_TABS, GpuView
from .highlight import highlight_lines
from .inspector import CODE_TABS
from .models import code_lines, pass_diff_rows, pass_rows, source_model
from .render import render_code, render_diff, render_note, render_table, style_block
from .resources import registers_line, resource_rows
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
        diff = pass_diff_rows(rec, context=3) if row.changed else []
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


def _gpu_html(gpu: GpuView, title: str, key: str | None = None, language: str = "") -> str:
    """A GPU section (PTX, SASS or an analysis view) from the GPU compile, or why there is none."""
    compiled = gpu.compiled()
    if key is not None:
        if compiled is None:
            return render_note(f"{title}: no GPU compile of this kernel" + (f": {gpu.error}" if gpu.error else "."))
        return _code_html(compiled, key, language)
    return _plugin_html(next(v for v in views() if v.name == title), compiled or gpu.run)


def _amd_html(gpu: GpuView, arch: str) -> str:
    """The AMD ISA section: registers beside PTX's, and the GCN assembly (or why there is none)."""
    amd = gpu.amd(arch)
    if amd is None:
        return render_note(f"{AMD_TAB}: no AMD compile of this kernel: {gpu.amd_error}.")
    ptx = gpu.compiled() if gpu.compiled() is not amd else None
    return render_note(registers_line(amd, ptx) + " (inspection only: no AMD runtime)") + _code_html(
        amd, "amdgcn", "amdgcn"
    )


def _code_sections(compiled, gpu: GpuView, amd: str | None = None) -> list[tuple[str, str, str]]:
    out = []
    for title, key, lang in CODE_TABS:
        body = _gpu_html(gpu, title, key, lang) if title in GPU_TABS else _code_html(compiled, key, lang)
        out.append((key, title, body))
        if title == "PTX" and amd:
            out.append(("amdgcn", AMD_TAB, _amd_html(gpu, amd)))
    return out


def report_html(compiled, gpu=None, arch: str | None = None, amd: str | None = None) -> str:
    """The report page of ``compiled`` as a string; ``gpu`` as for ``Inspector`` (the GPU compile shown).

    ``amd`` (``"gfx942"``) adds the "AMD ISA" section, compiled for ``amd:<amd>`` by ``gpu``'s compiler
    (a kernel compiled for AMD shows its own); left out by default, as a report is made at once.
    """
    load_builtin_views()
    gpu = GpuView(compiled, gpu, arch)
    if amd is None and str(compiled.target).startswith("amd:"):
        amd = compiled.target.partition(":")[2]
    src = source_model(compiled)
    sections = [
        ("source", "Source", render_code(highlight_lines(src.text, "python"), src.numbers, anchor_prefix="src"))
    ]
    final_ir = (compiled.asm or {}).get("tile", "")
    sections.append(("tile", "Final tile IR", _code_html(compiled, "tile", "tile") if final_ir else render_note("-")))
    sections.append(("passes", "Passes", _passes_html(compiled)))
    sections += _code_sections(compiled, gpu, amd)
    sections.append(("resources", "Resources", _resources_html(gpu)))
    for v in views():
        body = _gpu_html(gpu, v.name) if v.name in GPU_TABS else _plugin_html(v, compiled)
        sections.append((v.name.replace(" ", "-"), v.name, body))
    nav = "".join(f'<a href="#{a}">{html.escape(t)}</a>' for a, t, _ in sections)
    body = "".join(_section(a, t, b) for a, t, b in sections)
    title = f"{compiled.name} · {compiled.target}"
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_PAGE_CSS}</style>{style_block()}</head><body><h1>{html.escape(title)}</h1>"
        f"<p>{html.escape(gpu.describe())}</p><nav>{nav}</nav>{body}</body></html>"
    )


def _resources_html(gpu: GpuView) -> str:
    parts = [render_table(resource_rows(gpu.run))]
    compiled = gpu.compiled()
    if compiled is not None and compiled is not gpu.run:
        parts += [f"<h3>GPU compile: {html.escape(compiled.target)}</h3>", render_table(resource_rows(compiled))]
    amd = gpu.amd(make=False)
    if amd is not None and amd is not gpu.run:
        parts += [f"<h3>AMD compile: {html.escape(amd.target)}</h3>", render_table(resource_rows(amd))]
    return "".join(parts)


def write_report(compiled, path, gpu=None, arch: str | None = None, amd: str | None = None) -> Path:
    """Writes the report of ``compiled`` to ``path`` and returns the path (``gpu``, ``amd``: see ``report_html``)."""
    path = Path(path)
    path.write_text(report_html(compiled, gpu, arch, amd), encoding="utf-8")
    return path
