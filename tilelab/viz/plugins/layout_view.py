"""The layouts view: for a tile of the kernel, which warp, lane and register owns each element.

A layout is a linear map from (register, lane, warp) bits to element coordinates; this view draws
its inverse as a grid: each cell is one element, written ``warp:lane:register`` when the tile is
small enough to read, coloured by warp (hue) and lane (shade) always, and named in the cell's hover
text. 1-D tiles are folded into rows of what one warp holds. Beside the grid, the bases: where
each bit of the register, lane and warp index moves an element.

    tiles = kernel_tiles(compiled)           # one entry per distinct register layout in the IR
    html = grid_html(tiles[0])               # <table class="tl-grid"> with one <td> per element
"""

from __future__ import annotations

import colorsys
import html
from dataclasses import dataclass

import numpy as np

from tilelab.compiler.layouts import contiguous_elements, default_blocked

from .figures import LazyPane, note_html, table_html

#: A grid with at most this many columns and cells writes ``warp:lane:register`` in each cell.
LABEL_MAX_COLS, LABEL_MAX_CELLS = 32, 1024
#: Larger tiles show their top-left corner of this many rows and columns (a note says so).
SHOWN_MAX = 64
#: One hue per warp (8 distinct, colour-blind safe where possible: Okabe-Ito).
WARP_HUES = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999"]

_KIND_TEXT = {"blocked": "blocked", "slice": "slice", "mma": "mma", "dot_op": "dot operand"}


def short_name(layout) -> str:
    """A readable name of a register layout: ``blocked 1x8 per thread, 8x4 lanes, 4x1 warps``."""
    p = layout.params
    kind = p.get("kind")

    def x(v):
        return "x".join(str(int(c)) for c in v)

    if kind == "blocked":
        spt, tpw, wpc = (x(p[k]) for k in ("size_per_thread", "threads_per_warp", "warps_per_cta"))
        return f"blocked {spt} per thread, {tpw} lanes, {wpc} warps"
    if kind == "mma":
        instr = "wgmma" if p.get("version") == 3 else "mma m16n8k16"
        return f"{instr} accumulator, {x(p['warps_per_cta'])} warps"
    if kind == "slice":
        return f"slice (dim {p['dim']} removed) of {short_name(p['parent'])}"
    if kind in ("dot_op", "dot_operand"):
        return f"dot operand {'AB'[int(p.get('op_idx', 0))]} of mma"
    sizes = ", ".join(f"{layout.in_size(d)} {d}s" for d in layout.in_dims)
    return f"linear ({sizes})"


@dataclass
class TileLayout:
    """A tile of the kernel: its first value's line and type, and the layout its elements follow."""

    line: int | None
    op_name: str
    shape: tuple
    element: str
    layout: object
    origin: str

    @property
    def label(self) -> str:
        """The picker's label: ``line 12 · tt.load · 64x32 f16 · blocked 1x8 per thread, ...``."""
        shape = "x".join(map(str, self.shape))
        return f"line {self.line} · {self.op_name} · {shape} {self.element} · {short_name(self.layout)}"

    def owners(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(warp, lane, register)`` of every element, tile-shaped."""
        return self.layout.owner_of(np.stack(np.indices(self.shape), axis=-1))

    def parameters(self) -> list[tuple[str, str]]:
        rows = [("layout", str(self.layout)), ("origin", self.origin)]
        rows += [(k, str(v)) for k, v in self.layout.params.items() if k not in ("parent", "shape", "kind")]
        rows.append(("elements per thread in a row", str(contiguous_elements(self.layout))))
        return rows


def kernel_tiles(compiled) -> list[TileLayout]:
    """One ``TileLayout`` per distinct tile shape and register layout among the kernel's op results.

    Shared-memory buffers (whose layouts map offsets, not threads) belong to the shared-memory view.
    """
    num_warps = compiled.options.num_warps
    seen, tiles = set(), []
    for op in compiled.module.walk():
        for value in op.results:
            ty = value.type
            if not getattr(ty, "is_tensor", False) or not ty.shape:
                continue
            layout, origin = ty.layout, "assigned by the compiler"
            if layout is None:
                layout, origin = default_blocked(list(ty.shape), num_warps), f"default blocked for {num_warps} warps"
            if "lane" not in layout.in_dims:
                continue
            key = (tuple(ty.shape), layout)
            if key in seen:
                continue
            seen.add(key)
            tiles.append(TileLayout(op.loc.line, op.name, tuple(ty.shape), str(ty.element), layout, origin))
    return tiles


# --------------------------------------------------------------------------- the grid


def owner_colour(warp: int, lane: int) -> str:
    """The cell colour: the warp's hue, lighter for higher lanes (lane 0 darkest)."""
    r, g, b = (int(WARP_HUES[warp % len(WARP_HUES)][i : i + 2], 16) / 255 for i in (1, 3, 5))
    h, light, s = colorsys.rgb_to_hls(r, g, b)
    light = 0.45 + 0.45 * (lane / 31)
    r, g, b = colorsys.hls_to_rgb(h, light, s)
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"


def grid_rows(tile: TileLayout) -> tuple[np.ndarray, list[str], str]:
    """The tile as a 2-D grid of element indices, the row labels, and what a row is.

    1-D tiles fold into rows of what one warp holds at a time (32 lanes x the elements a thread
    holds in a row); 3-D and larger fold their leading dims into rows.
    """
    from tilelab.compiler.layouts import contiguous_elements

    n = int(np.prod(tile.shape))
    flat = np.arange(n)
    if len(tile.shape) == 1:
        width = min(n, 32 * contiguous_elements(tile.layout))
        grid = flat.reshape(-1, width)
        warp, _, _ = tile.owners()
        labels = [f"warp {warp[row[0]]}" for row in grid]
        return grid, labels, f"one row = {width} elements: what one warp holds at a time"
    grid = flat.reshape(-1, tile.shape[-1])
    lead = np.stack(np.unravel_index(grid[:, 0], tile.shape)[:-1], axis=-1)
    labels = [",".join(map(str, r)) for r in lead]
    return grid, labels, "rows: " + ("dim0" if len(tile.shape) == 2 else f"dims 0..{len(tile.shape) - 2}")


def grid_html(tile: TileLayout) -> str:
    """The ownership grid: a ``<table class="tl-grid">``, one ``<td>`` per element (top-left 64x64 shown)."""
    warp, lane, reg = (a.reshape(-1) for a in tile.owners())
    grid, labels, rows_are = grid_rows(tile)
    shown = grid[:SHOWN_MAX, :SHOWN_MAX]
    labelled = shown.shape[1] <= LABEL_MAX_COLS and shown.size <= LABEL_MAX_CELLS
    head = "".join(f"<th>{j}</th>" for j in range(shown.shape[1]))
    body = []
    for i, row in enumerate(shown):
        cells = []
        for e in row:
            who = f"{warp[e]}:{lane[e]}:{reg[e]}"
            where = tuple(int(c) for c in np.unravel_index(e, tile.shape))
            title = f"element {where}: warp {warp[e]}, lane {lane[e]}, register {reg[e]}"
            text = who if labelled else ""
            cells.append(f'<td style="background:{owner_colour(warp[e], lane[e])}" title="{title}">{text}</td>')
        body.append(f"<tr><th>{html.escape(labels[i])}</th>{''.join(cells)}</tr>")
    cls = "tl-grid" + ("" if labelled else " tl-grid-small")
    crop = ""
    if shown.shape != grid.shape:
        rows, cols = shown.shape
        crop = f" Showing rows 0-{rows - 1} and columns 0-{cols - 1} of {grid.shape[0]}x{grid.shape[1]}."
    legend = (
        f"Each cell is one element, {'written' if labelled else 'named on hover as'} warp:lane:register; "
        f"colour = warp (hue) and lane (lighter = higher lane). {rows_are}.{crop}"
    )
    return (
        f"{GRID_CSS}<div class='tl-note'>{html.escape(legend)}</div>"
        f"<div class='tl-scroll'><table class='{cls}'><tr><th></th>{head}</tr>{''.join(body)}</table></div>"
    )


GRID_CSS = """<style>
.tl-grid { border-collapse: collapse; font-family: ui-monospace, Menlo, monospace; font-size: 9px; }
.tl-grid td { border: 1px solid #fff; padding: 1px 2px; text-align: center; white-space: nowrap; color: #111;
  min-width: 34px; }
.tl-grid th { font-weight: normal; color: #757575; padding: 0 3px; white-space: nowrap; }
.tl-grid-small td { min-width: 7px; height: 9px; padding: 0; border-width: 0 1px 1px 0; }
.tl-scroll { overflow-x: auto; max-width: 100%; }
</style>"""


def _move(vector) -> str:
    return "same element (a copy)" if not any(vector) else "+(" + ", ".join(map(str, vector)) + ")"


def bases_rows(layout) -> list[list[str]]:
    """Per index bit: what it is (``lane bit 2``) and where it moves an element (``+(0, 4)``).

    An owner's element is the XOR of the moves of its index's set bits: lane 5 = bits 0 and 2.
    """
    rows = []
    for d in layout.in_dims:
        for b, v in enumerate(layout.in_bases(d)):
            rows.append([f"{d} bit {b} ({d} {1 << b})", _move(v)])
    return rows


BASES_NOTE = (
    "Bases: each bit of the register, lane and warp index moves an element by a fixed step (coordinates "
    "per dim); an owner's element is the XOR of the steps of its set bits, e.g. lane 5 = lane bits 0 and 2."
)


def layout_html(tile: TileLayout) -> str:
    """The whole view of one tile: the grid, then the bases explained, then the parameters."""

    return (
        grid_html(tile)
        + note_html(BASES_NOTE)
        + table_html(["index bit", "moves the element by"], bases_rows(tile.layout))
        + table_html(["parameter", "value"], [list(r) for r in tile.parameters()])
    )


REPORT_MAX_TILES = 12


def layouts_html(compiled) -> str:

    tiles = kernel_tiles(compiled)
    if not tiles:
        return note_html("No tiles in this kernel.")
    parts = [f"<h3>{html.escape(t.label)}</h3>{layout_html(t)}" for t in tiles[:REPORT_MAX_TILES]]
    if len(tiles) > REPORT_MAX_TILES:
        parts.append(note_html(f"{len(tiles) - REPORT_MAX_TILES} more tiles: open the inspector's layouts tab."))
    return "".join(parts)


class LayoutsTab:
    """A tile picker (readable labels), its ownership grid and its bases."""

    def __init__(self, compiled):
        import ipywidgets as w

        self.tiles = kernel_tiles(compiled)
        self.picker = w.Dropdown(
            options=[(t.label, i) for i, t in enumerate(self.tiles)],
            description="tile",
            layout=w.Layout(width="95%"),
        )
        self.view = w.HTML(layout=w.Layout(width="100%"))
        self.picker.observe(lambda _: self.draw(), names="value")
        self.widget = w.VBox([self.picker, self.view])
        self.draw()

    def draw(self) -> None:
        if self.picker.value is None:
            return
        self.view.value = layout_html(self.tiles[self.picker.value])


def layouts_tab(compiled):
    return LazyPane(lambda: [LayoutsTab(compiled).widget], "layouts").widget
