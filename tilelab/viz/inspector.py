"""The inspector: one ipywidgets Tab per view of a CompiledKernel.

Why: it shows, next to the kernel, what the compiler did with it: the source, the IR after every
pass as a diff, the LLVM IR and assembly linked back to source lines, the resources used, and
the analyses' plug-in tabs. It reads only the CompiledKernel (``name``, ``target``, ``asm``,
``metadata``, ``passes``, ``source``, ``filename``, ``first_line``).

    from tilelab.viz import Inspector
    Inspector(compiled, show="passes")      # displays as the widget in a notebook
"""

from __future__ import annotations

import html

import ipywidgets as w

from .gpu import AMD_ARCHS, AMD_TAB, GPU_TABS, GpuView
from .highlight import highlight_lines
from .linked import LinkedCode
from .models import CodeLine, code_lines, pass_diff_rows, pass_rows, source_model, without_locs
from .plugins.figures import LazyPane, render_selected, watch_tabs
from .render import render_code, render_note, render_table, style_block
from .resources import registers_line, resource_rows
from .views import load_builtin_views, views

# (tab title, asm key, language) of the code tabs, in order.
CODE_TABS = [("LLVM IR", "llir", "llir"), ("PTX", "ptx", "ptx"), ("SASS", "sass", "sass"), ("Assembly", "asm", "asm")]

_ALIASES = {
    "llvm": "llvm ir",
    "llir": "llvm ir",
    "host": "assembly",
    "asm": "assembly",
    "ir": "passes",
    "tile": "passes",
    "amd": "amd isa",
    "amdgcn": "amd isa",
    "gcn": "amd isa",
}


class PassesTab:
    """The pass list (filter, search) and the chosen pass's before/after diff, linked to the source."""

    def __init__(self, compiled):
        self.records = list(compiled.passes or [])
        self.hide = w.Checkbox(value=False, description="hide unchanged passes", indent=False)
        self.locs = w.Checkbox(value=False, description="show locations", indent=False)
        self.search = w.Text(placeholder="search passes / IR", layout=w.Layout(width="220px"))
        self.pass_list = w.Select(options=[], rows=14, layout=w.Layout(width="420px"))
        self.pass_list.add_class("tl-mono")
        self.title = w.HTML()
        self.code = LinkedCode(source_model(compiled), "tile")
        self.code.search.layout.display = "none"
        self.hide.observe(lambda _: self.refresh(), names="value")
        self.locs.observe(lambda _: self.show_pass(self.pass_list.value), names="value")
        self.search.observe(self._on_search, names="value")
        self.pass_list.observe(lambda c: self.show_pass(c["new"]), names="value")
        controls = w.VBox([w.HBox([self.hide, self.locs, self.search]), self.pass_list])
        self.widget = w.VBox([controls, self.title, self.code.widget])
        if not self.records:
            self.widget = w.HTML(render_note("No pass snapshots: compile with snapshots=True to see them."))
            return
        self.refresh()

    def _on_search(self, change) -> None:
        """Filters the pass list, then marks the hits in the shown diff and source (and jumps to the first)."""
        self.refresh()
        self.code.search.value = change["new"]

    def refresh(self) -> None:
        """Rebuilds the pass list from the filters, keeping the chosen pass when it is still listed."""
        rows = pass_rows(self.records, self.hide.value, self.search.value)
        current = self.pass_list.value
        self.pass_list.options = [(r.label, r.index) for r in rows]
        indices = [r.index for r in rows]
        if current in indices:
            self.pass_list.value = current
        elif indices:
            changed = [r.index for r in rows if r.changed]
            self.pass_list.value = (changed or indices)[0]

    def choose(self, name: str) -> None:
        """Shows the first pass called ``name`` (its diff); an unknown name says which passes there are."""
        names = [r.name for r in self.records]
        if name not in names:
            raise ValueError(f"no pass {name!r}; passes: {', '.join(names)}")
        self.hide.value = False
        self.pass_list.value = names.index(name)

    def show_pass(self, index: int | None) -> None:
        """Shows the diff of pass ``index`` (the IR before it against the IR after it)."""
        if index is None:
            return
        rec = self.records[index]
        rows = pass_diff_rows(rec, locs=self.locs.value)
        removed, added = (sum(r.kind == k for r in rows) for k in ("del", "add"))
        state = f"changed the IR: {removed} line(s) removed, {added} added" if rec.changed else "left the IR unchanged"
        if rec.changed and not removed + added:
            state = "changed only module attributes (no op)"
        self.title.value = f"<b>{rec.name}</b> — {rec.seconds * 1e3:.2f} ms, {state}"
        after = rec.ir_after or ""
        lines = code_lines(after, "tile")
        if not self.locs.value:
            lines = [CodeLine(without_locs(c.text), c.src_line) for c in lines]
        self.code.set_code(lines, rows)


def _code_tab(compiled, key: str, language: str):
    text = (compiled.asm or {}).get(key)
    if not text:
        return w.HTML(render_note(f"{key}: not produced for this target ({compiled.target})."))
    pane = LinkedCode(source_model(compiled), language)
    pane.set_code(code_lines(text, language))
    if not any(c.src_line is not None for c in pane.lines):
        pane.widget.children = pane.widget.children[:2] + (w.HTML(render_note("No source-line info here.")),)
    return pane.widget


def _plugin_tab(view, compiled):
    if view.factory is None:
        return w.HTML(render_note(f"{view.name} (coming): {view.note}"))
    try:
        return view.factory(compiled)
    except Exception as e:  # a broken plug-in must not take the inspector down
        return w.HTML(render_note(f"{view.name} failed: {type(e).__name__}: {e}"))


def _gpu_note(gpu: GpuView, title: str):
    why = f": {gpu.error}" if gpu.error else ""
    return w.HTML(render_note(f"{title}: no GPU compile of this kernel{why}."))


def gpu_tab(gpu: GpuView, title: str):
    """The body of GPU tab ``title`` (PTX, SASS or an analysis view) from the chosen GPU compile."""
    compiled = gpu.compiled()
    for tab_title, key, lang in CODE_TABS:
        if tab_title == title:
            return _code_tab(compiled, key, lang) if compiled is not None else _gpu_note(gpu, title)
    view = next(v for v in views() if v.name == title)
    return _plugin_tab(view, compiled or gpu.run)  # without a GPU compile: the views' predictions


def _resources(gpu: GpuView):
    run = gpu.run
    parts = [render_table(resource_rows(run))]
    compiled = gpu.compiled()
    if compiled is not None and compiled is not run:
        parts += [f"<p><b>GPU compile</b> <code>{compiled.target}</code></p>", render_table(resource_rows(compiled))]
    amd = gpu.amd(make=False)  # only once the AMD ISA tab has made it
    if amd is not None and amd is not run:
        parts += [f"<p><b>AMD compile</b> <code>{amd.target}</code></p>", render_table(resource_rows(amd))]
    return w.HTML("".join(parts))


def amd_tab_children(gpu: GpuView, arch: str = AMD_ARCHS[0]) -> list:
    """The AMD ISA tab's body: the registers beside PTX's, then the GCN assembly linked to the source."""
    amd = gpu.amd(arch)
    if amd is None:
        return [w.HTML(render_note(f"{AMD_TAB}: no AMD compile of this kernel: {gpu.amd_error}."))]
    ptx = gpu.compiled() if gpu.compiled() is not amd else None
    line = registers_line(amd, ptx) + " (inspection only: no AMD runtime)"
    return [w.HTML(render_note(line)), _code_tab(amd, "amdgcn", "amdgcn")]


def amd_tab(gpu: GpuView, arch: str = AMD_ARCHS[0], built=None):
    """The AMD ISA tab: compiled for ``amd:<arch>`` when first opened (a kernel compiled for AMD shows at once).

    ``built()`` runs after the compile (the inspector refreshes its Resources tab then).
    """

    def build() -> list:
        children = amd_tab_children(gpu, arch)
        if built is not None:
            built()
        return children

    if str(gpu.run.target).startswith("amd:"):
        return w.VBox(amd_tab_children(gpu, arch))
    note = f"Compiled for AMD {arch} (amd:{arch}, 64-lane wavefronts; inspection only) when this tab opens."
    return LazyPane(build, AMD_TAB, note=note, action="compile").widget


class Inspector:
    """The inspector widget of a CompiledKernel; ``show`` names the tab to open first.

    ``gpu``: the GPU compile its PTX, SASS, coalescing, shared-memory and layout tabs show when
    the kernel runs elsewhere (a CompiledKernel, or ``arch -> CompiledKernel`` as made by
    ``tilelab.viz.gpu.gpu_compiler``, which adds an sm_80 / sm_90 / sm_90a picker). With such a
    compiler the "AMD ISA" tab, beside PTX, compiles the kernel for ``amd:<amd>`` (gfx942) when it
    is first opened; ``amd=None`` leaves the tab out.
    """

    def __init__(self, compiled, show: str | None = None, gpu=None, arch: str | None = None, amd="gfx942"):
        self.compiled = compiled
        self.gpu = GpuView(compiled, gpu, arch)
        src = source_model(compiled)
        self.passes = PassesTab(compiled)
        load_builtin_views()
        source_html = render_code(highlight_lines(src.text, "python"), src.numbers, anchor_prefix="src")
        tabs = [("Source", w.HTML(source_html)), ("Passes", self.passes.widget)]
        for title, key, lang in CODE_TABS:
            tabs.append((title, gpu_tab(self.gpu, title) if title in GPU_TABS else _code_tab(compiled, key, lang)))
            if title == "PTX" and amd:
                tabs.append((AMD_TAB, amd_tab(self.gpu, amd, built=self._refresh_resources)))
        tabs.append(("Resources", _resources(self.gpu)))
        for v in views():
            tabs.append((v.name, gpu_tab(self.gpu, v.name) if v.name in GPU_TABS else _plugin_tab(v, compiled)))
        self.titles = [t for t, _ in tabs]
        self.tab = w.Tab(children=[c for _, c in tabs], titles=self.titles)
        watch_tabs(self.tab)  # analysis tabs draw their figures when first opened
        self.header = w.HTML()
        self.arch = w.Dropdown(options=self.gpu.choices, description="GPU", layout=w.Layout(width="170px"))
        if self.gpu.choices:
            self.arch.value = self.gpu.arch
        self.arch.layout.display = None if len(self.gpu.choices) > 1 else "none"
        self.arch.observe(lambda c: self.choose_arch(c["new"]), names="value")
        self._set_header()
        self.widget = w.VBox([w.HBox([self.header, self.arch]), self.tab], layout=w.Layout(width="100%"))
        self.widget.add_class("tl-inspector")
        if show:
            self.open(show)

    def _set_header(self) -> None:
        c = self.compiled
        self.header.value = f"{style_block()}<b>{c.name}</b> · {html.escape(self.gpu.describe())}"

    def choose_arch(self, arch: str | None) -> None:
        """Shows the GPU tabs of the compile for ``arch`` (sm_80, sm_90, sm_90a)."""
        if not arch or arch == self.gpu.arch:
            return
        self.gpu.arch = arch
        children = list(self.tab.children)
        for i, title in enumerate(self.titles):
            if title in GPU_TABS:
                children[i] = gpu_tab(self.gpu, title)
        children[self.titles.index("Resources")] = _resources(self.gpu)
        self.tab.children = children
        self.tab.titles = self.titles
        self._set_header()
        render_selected(self.tab)

    def _refresh_resources(self) -> None:
        """Shows the Resources tab again (with the AMD compile's registers once the AMD ISA tab made it)."""
        if "Resources" not in getattr(self, "titles", ()):
            return
        children = list(self.tab.children)
        children[self.titles.index("Resources")] = _resources(self.gpu)
        self.tab.children = children
        self.tab.titles = self.titles

    def tab_index(self, name: str) -> int:
        """The index of the tab called ``name`` (case-insensitive; 'llvm', 'asm' and 'ir' are aliases)."""
        key = name.strip().lower()
        key = _ALIASES.get(key, key)
        lowered = [t.lower() for t in self.titles]
        if key in lowered:
            return lowered.index(key)
        raise ValueError(f"no inspector tab {name!r}; tabs: {', '.join(self.titles)}")

    def open(self, show: str) -> None:
        """Selects the first tab named in ``show`` (a comma-separated list); ``passes:cse`` also picks a pass."""
        first = [s for s in show.split(",") if s.strip()]
        if not first:
            return
        tab, _, pass_name = first[0].partition(":")
        self.tab.selected_index = self.tab_index(tab)
        if pass_name:
            self.passes.choose(pass_name.strip())

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)
