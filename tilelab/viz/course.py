"""One-call pictures for notebooks: inspect a kernel (with its GPU compile), draw a layout, draw banks.

Why: a course cell should show the picture its lesson is about in one line, on any machine:

    inspect(add, {"x": "*fp32", "n": "i32"}, {"BLOCK": 256}, target="cpu", show="coalescing")
    draw_layout(mma_m16n8k16_accumulator([16, 8], [1, 1]))      # warp:lane:register in each cell
    draw_banks([32, 32], 4, reader=by_cols, swizzle=(1, 1, 32))  # bank grids, swizzled and not
"""

from __future__ import annotations


def inspect(kernel, signature: dict, constants: dict | None = None, target: str = "cpu", show=None, gpu=None, **opts):
    """The inspector of ``kernel`` compiled for ``target``, its GPU tabs from ``cuda:<gpu>`` (sm_90 by default)."""
    from tilelab import runtime

    from .gpu import gpu_compiler
    from .inspector import Inspector

    opts.setdefault("snapshots", True)
    compiled = runtime.compile(kernel, signature=signature, constants=constants or {}, target=target, **opts)
    return Inspector(compiled, show=show, gpu=gpu_compiler(kernel, signature, constants, **opts), arch=gpu)


class Picture:
    """HTML that Jupyter shows as itself (and a test reads as ``.html``)."""

    def __init__(self, html: str):
        self.html = html

    def _repr_html_(self) -> str:
        return self.html


def draw_layout(layout, label: str = "") -> Picture:
    """The ownership grid of a register layout, with its bases explained."""
    from .plugins.layout_view import TileLayout, layout_html

    tile = TileLayout(None, label or "layout", tuple(layout.shape), "", layout, "given")
    return Picture(layout_html(tile))


def draw_banks(shape, elem_bytes: int, reader, swizzle=(1, 1, 1), writer=None, order=(1, 0)) -> Picture:
    """The bank grid per wavefront of ``reader`` (a register layout) loading a ``shape`` buffer, swizzled and not."""
    from .plugins.shared_memory import SharedBuffer, banks_html

    buf = SharedBuffer(f"{list(shape)} buffer", tuple(shape), elem_bytes, "", tuple(swizzle), tuple(order))
    buf.reader, buf.writer = reader, writer
    return Picture(banks_html(buf))
