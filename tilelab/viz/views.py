"""Plug-in tabs of the inspector: analyses add a view by name, without editing the inspector.

Why: coalescing heatmaps, shared-memory banks, layouts and the roofline are built by other
modules; each registers a factory that turns a CompiledKernel into a widget (and, for the
static report, optionally into HTML).

    from tilelab.viz import register_view

    def coalescing_tab(compiled):
        return ipywidgets.HTML(heatmap_html(compiled))

    register_view("coalescing", coalescing_tab, html=heatmap_html)

Until a view is registered its tab is announced with a one-line note of what will appear.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class View:
    """A plug-in tab: ``factory(compiled)`` returns a widget; ``html(compiled)`` a report section."""

    name: str
    factory: Callable | None = None
    html: Callable | None = None
    note: str = ""


_VIEWS: dict[str, View] = {}

_PLANNED = {
    "coalescing": "Per load/store, the bytes each warp touches and the memory transactions, as a heatmap.",
    "shared memory": "Shared-memory buffers: offsets, lifetimes, swizzle and bank conflicts.",
    "layouts": "Which thread, warp and register holds each tile element, for every layout in the kernel.",
    "roofline": "The kernel's FLOPs and bytes against the device's peak compute and bandwidth.",
}


def register_view(name: str, factory: Callable, *, html: Callable | None = None, note: str = "") -> None:
    """Adds (or replaces) the inspector tab ``name`` built by ``factory(compiled)``."""
    _VIEWS[name] = View(name, factory, html, note or _PLANNED.get(name, ""))


def unregister_view(name: str) -> None:
    """Removes a registered tab (a planned one goes back to its note)."""
    _VIEWS.pop(name, None)


def load_builtin_views() -> None:
    """Registers the analysis views shipped with tilelab (``tilelab.viz.plugins``), once."""
    import tilelab.viz.plugins  # noqa: F401  (here: the plug-ins import this module; importing them registers them)


def views() -> list[View]:
    """The plug-in tabs in order: the planned analyses first (registered or not), then the others."""
    out = [_VIEWS.get(name) or View(name, note=note) for name, note in _PLANNED.items()]
    return out + [v for name, v in _VIEWS.items() if name not in _PLANNED]
