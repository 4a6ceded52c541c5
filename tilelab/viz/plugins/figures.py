"""Figures of the analysis views: matplotlib without pyplot, as PNG bytes, widgets or report HTML.

Why: every view draws the same ``Figure`` into the notebook (an ``ipywidgets.Image``) and into the
static report (an ``<img>`` with the PNG inline), so both show one picture. Figures are built on
demand: a ``LazyPane`` holds a builder and runs it when its tab is first opened. The views import
``ipywidgets`` (~2 s on a 2-core machine) and matplotlib inside the functions that draw widgets and
figures: the static report never loads ipywidgets, and importing the views loads neither.

    fig = new_figure(6, 3)
    fig.add_subplot().imshow(np.arange(12).reshape(3, 4), cmap="viridis")
    html = figure_html(fig, alt="a heatmap")       # '<img class="tl-fig" src="data:image/png;base64,...">'
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Callable

#: Colour maps that read the same for colour-blind readers and in greyscale.
SEQUENTIAL = "viridis"
CATEGORY = "cividis"
DPI = 80


def new_figure(width: float, height: float):
    """A matplotlib ``Figure`` drawn with the Agg canvas (no pyplot state, no GUI backend)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI)
    fig.subplots_adjust(left=0.1, right=0.97, bottom=0.14, top=0.84, wspace=0.3)
    FigureCanvasAgg(fig)
    return fig


def figure_png(fig) -> bytes:
    """The figure as PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def png_html(png: bytes, alt: str) -> str:
    """An ``<img>`` holding ``png`` inline, for pages that must stand alone."""
    data = base64.b64encode(png).decode("ascii")
    return f'<img class="tl-fig" alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def figure_html(fig, alt: str) -> str:
    return png_html(figure_png(fig), alt)


def figure_widget(fig):
    """An ``ipywidgets.Image`` of the figure."""
    import ipywidgets as w

    return w.Image(value=figure_png(fig), format="png")


def table_html(header: list[str], rows: list[list], flagged: set[int] = frozenset()) -> str:
    """An HTML table; rows whose index is in ``flagged`` get the class ``tl-flag``."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = []
    for i, row in enumerate(rows):
        cls = ' class="tl-flag"' if i in flagged else ""
        cells = "".join(f"<td>{html.escape(str(c))}</td>" for c in row)
        body.append(f"<tr{cls}>{cells}</tr>")
    style = (
        "<style>.tl-vtable td,.tl-vtable th{padding:2px 10px;font-family:ui-monospace,Menlo,monospace;"
        "font-size:12px;text-align:left;white-space:nowrap}.tl-vtable .tl-flag{background:#fdf0c2}"
        ".tl-scroll{overflow-x:auto;max-width:100%}</style>"
    )
    # one line per row (no wrapped cells); a table wider than the pane scrolls instead of being cut
    return f'{style}<div class="tl-scroll"><table class="tl-vtable"><tr>{head}</tr>{"".join(body)}</table></div>'


def note_html(text: str) -> str:
    return f'<div class="tl-note">{html.escape(text)}</div>'


class LazyPane:
    """A tab body built on first use: ``build()`` returns the widgets; until then a one-line note.

    The pane builds when ``render()`` is called: by ``watch_tabs(tab)`` when its tab is opened, or by
    the "draw" button it shows meanwhile. Building twice does nothing.
    """

    def __init__(self, build: Callable[[], list], title: str, note: str | None = None, action: str = "draw"):
        import ipywidgets as w

        self._build = build
        self.built = False
        self.button = w.Button(description=action, tooltip=f"{action} the {title} view")
        self.button.on_click(lambda _: self.render())
        note = note or f"The {title} view is drawn when this tab opens."
        self.widget = w.VBox([w.HTML(note_html(note)), self.button])
        self.widget._tl_lazy = self

    def render(self) -> None:
        if self.built:
            return
        self.built = True
        try:
            self.widget.children = tuple(self._build())
        except Exception as e:  # a view that cannot be drawn says why, in its tab
            import ipywidgets as w

            self.widget.children = (w.HTML(note_html(f"cannot draw this view: {type(e).__name__}: {e}")),)


def render_selected(tab) -> None:
    """Renders the ``LazyPane`` of the selected tab of ``tab``, if it has one."""
    index = tab.selected_index
    if index is not None and 0 <= index < len(tab.children):
        pane = getattr(tab.children[index], "_tl_lazy", None)
        if pane is not None:
            pane.render()


def watch_tabs(tab) -> None:
    """Renders the ``LazyPane`` of each tab of ``tab`` (an ``ipywidgets.Tab``) when it is selected."""
    tab.observe(lambda _: render_selected(tab), names="selected_index")
    render_selected(tab)
