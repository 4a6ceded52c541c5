"""Views of compiled kernels: the inspector widget, plug-in tabs and the static HTML report.

from tilelab.viz import Inspector, register_view, write_report

Inspector(compiled, show="passes")     # the widget
write_report(compiled, "add.html")     # the same views as one HTML page
inspect(add, signature, constants, target="cpu", show="ptx")   # compile, with the GPU compile beside it
"""

from .autotune_view import register_in_notebook
from .views import register_view, unregister_view, views

register_in_notebook()  # in Jupyter, @tilelab.autotune shows a progress bar and its results table


def __getattr__(name):
    # The widget and report modules import ipywidgets and pygments: load them on first use.
    if name == "Inspector":
        from .inspector import Inspector

        return Inspector
    if name == "write_report":
        from .report import write_report

        return write_report
    if name in ("inspect", "draw_layout", "draw_banks"):
        from . import course

        return getattr(course, name)
    raise AttributeError(f"module 'tilelab.viz' has no attribute {name!r}")


__all__ = [
    "Inspector",
    "draw_banks",
    "draw_layout",
    "inspect",
    "register_view",
    "unregister_view",
    "views",
    "write_report",
]
