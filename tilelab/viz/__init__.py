"""Views of compiled kernels: the inspector widget, plug-in tabs and the static HTML report.

from tilelab.viz import Inspector, register_view, write_report

Inspector(compiled, show="passes")     # the widget
write_report(compiled, "add.html")     # the same views as one HTML page
"""

from .views import register_view, unregister_view, views


def __getattr__(name):
    # The widget and report modules import ipywidgets and pygments: load them on first use.
    if name == "Inspector":
        from .inspector import Inspector

        return Inspector
    if name == "write_report":
        from .report import write_report

        return write_report
    raise AttributeError(f"module 'tilelab.viz' has no attribute {name!r}")


__all__ = ["Inspector", "register_view", "unregister_view", "views", "write_report"]
