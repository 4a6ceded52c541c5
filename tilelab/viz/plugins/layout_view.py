"""The layouts view: for a tile of the kernel, which warp, lane and register owns each element.

A layout is a linear map from (register, lane, warp) bits to element coordinates; this view draws
its inverse: each element coloured by its owning thread, with the owner written in small tiles,
and the layout's parameters and basis vectors beside it.

    tiles = kernel_tiles(compiled)           # one entry per distinct (shape, layout) in the IR
    fig = layout_figure(tiles[0])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilelab.compiler.layouts import contiguous_elements, default_blocked

from .figures import CATEGORY, LazyPane, figure_html, figure_png, new_figure, note_html, table_html

ANNOTATE_MAX = 256


@dataclass
class TileLayout:
    """A tile of the kernel: its first value's line and type, and the layout its elements follow."""

    label: str
    shape: tuple
    layout: object
    origin: str

    def owners(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(warp, lane, register)`` of every element, tile-shaped."""
        return self.layout.owner_of(np.stack(np.indices(self.shape), axis=-1))

    def parameters(self) -> list[tuple[str, str]]:
        rows = [("layout", str(self.layout)), ("origin", self.origin)]
        rows += [(k, str(v)) for k, v in self.layout.params.items() if k not in ("parent", "shape")]
        rows += [(f"{d} bases", str([list(v) for v in self.layout.in_bases(d)])) for d in self.layout.in_dims]
        rows.append(("elements per thread in a row", str(contiguous_elements(self.layout))))
        return rows


def kernel_tiles(compiled) -> list[TileLayout]:
    """One ``TileLayout`` per distinct tile shape and layout among the kernel's op results."""
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
            key = (tuple(ty.shape), str(layout))
            if key in seen:
                continue
            seen.add(key)
            tiles.append(TileLayout(f"line {op.loc.line}: {op.name} -> {ty}", tuple(ty.shape), layout, origin))
    return tiles


def layout_figure(tile: TileLayout):
    """Elements coloured by owning thread (warp x 32 + lane); small tiles say ``w.l:r`` in each cell."""
    warp, lane, reg = tile.owners()
    grid = (warp * 32 + lane).reshape(-1, tile.shape[-1])
    fig = new_figure(7, 4.2)
    ax = fig.add_subplot()
    image = ax.imshow(grid, cmap=CATEGORY, aspect="auto", interpolation="nearest")
    fig.colorbar(image, ax=ax, label="thread (warp x 32 + lane)")
    if grid.size <= ANNOTATE_MAX:
        w2, l2, r2 = (a.reshape(grid.shape) for a in (warp, lane, reg))
        for (i, j), _ in np.ndenumerate(grid):
            ax.text(j, i, f"{w2[i, j]}.{l2[i, j]}:{r2[i, j]}", ha="center", va="center", fontsize=6, color="white")
    ax.set_xlabel(f"dim{len(tile.shape) - 1} (element)")
    ax.set_ylabel("dim0 (row)" if len(tile.shape) > 1 else "-")
    ax.set_title(f"{tile.label}\n{tile.layout}", fontsize=8)
    return fig


def layouts_html(compiled) -> str:
    tiles = kernel_tiles(compiled)
    if not tiles:
        return note_html("No tiles in this kernel.")
    parts = []
    for t in tiles:
        parts.append(table_html(["parameter", "value"], [list(r) for r in t.parameters()]))
        parts.append(figure_html(layout_figure(t), t.label))
    return "".join(parts)


class LayoutsTab:
    """A tile picker, its layout parameters and its ownership picture."""

    def __init__(self, compiled):
        import ipywidgets as w

        self.tiles = kernel_tiles(compiled)
        self.picker = w.Dropdown(
            options=[(t.label, i) for i, t in enumerate(self.tiles)], description="tile", layout=w.Layout(width="560px")
        )
        self.params = w.HTML()
        self.image = w.Image(format="png")
        self.picker.observe(lambda _: self.draw(), names="value")
        self.widget = w.VBox([self.picker, self.params, self.image])
        self.draw()

    def draw(self) -> None:
        if self.picker.value is None:
            return
        tile = self.tiles[self.picker.value]
        self.params.value = table_html(["parameter", "value"], [list(r) for r in tile.parameters()])
        self.image.value = figure_png(layout_figure(tile))


def layouts_tab(compiled):
    return LazyPane(lambda: [LayoutsTab(compiled).widget], "layouts").widget
