"""The analysis tabs of the inspector and the report: coalescing, shared memory, layouts, roofline.

Importing this package registers them with ``tilelab.viz.register_view``; each tab draws its
figures when first opened (``figures.watch_tabs``), and the report embeds them as PNG.

    import tilelab.viz.plugins
    from tilelab.viz.plugins import set_launch, record
    set_launch(compiled, (cdiv(n, 1024),), x, y, out, n)   # coalescing traces this launch
    record(compiled, seconds, grid=(cdiv(n, 1024),), args={"n": n})   # a point on the roofline
"""

from __future__ import annotations

from tilelab.viz.views import register_view

from . import coalescing, layout_view, roofline, shared_memory
from .figures import watch_tabs
from .launch import set_launch
from .roofline import record


def _register() -> None:
    register_view("coalescing", coalescing.coalescing_tab, html=coalescing.coalescing_html)
    register_view("shared memory", shared_memory.shared_memory_tab, html=shared_memory.shared_memory_html)
    register_view("layouts", layout_view.layouts_tab, html=layout_view.layouts_html)
    register_view("roofline", roofline.roofline_tab, html=roofline.roofline_html)


_register()

__all__ = ["set_launch", "record", "watch_tabs"]
