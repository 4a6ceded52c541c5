"""Autotuning you can watch: a progress bar over the configs, then a table and a bar chart of their times.

Why: ``@tilelab.autotune`` compiles and benchmarks every config before the first launch; in a notebook
that is seconds of silence. This view (registered in ``tilelab.runtime.autotune.PROGRESS`` when
``tilelab.viz`` is imported inside Jupyter) shows which config is compiling or being timed, and at the
end each config's median time, the winner marked, and the configs that failed with the reason.

    from tilelab.viz.autotune_view import summary_rows
    summary_rows(tuner)   # [[config, "0.0123 ms", "1.00x", "winner"], ..., [config, "-", "-", "failed: ..."]]
"""

from __future__ import annotations

import html


def summary_rows(tuner) -> list[list[str]]:
    """Per config, fastest first, then the failures: config, median time, slowdown over the best, note."""
    times = tuner.timings
    best = min(times.values()) if times else None
    rows = []
    for config, ms in sorted(times.items(), key=lambda kv: kv[1]):
        note = "winner" if ms == best else ""
        rows.append([str(config), f"{ms:.4f} ms", f"{ms / best:.2f}x", note])
    rows += [[str(c), "-", "-", f"failed: {why}"] for c, why in tuner.failures.items()]
    return rows


def times_figure(tuner):
    """A horizontal bar per config that ran (median ms), the winner in colour."""
    from .plugins.figures import new_figure

    items = sorted(tuner.timings.items(), key=lambda kv: kv[1])
    fig = new_figure(7, 0.6 + 0.32 * max(1, len(items)))
    ax = fig.add_subplot()
    labels = [str(c) for c, _ in items]
    values = [ms for _, ms in items]
    colours = ["tab:orange" if i == 0 else "tab:gray" for i in range(len(items))]
    ax.barh(range(len(items)), values, color=colours)
    ax.set_yticks(range(len(items)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("median time (ms)")
    ax.set_title(f"autotune {tuner.__name__}: winner in orange", fontsize=9)
    fig.subplots_adjust(left=0.45, right=0.97, bottom=0.2 if len(items) < 4 else 0.1, top=0.85)
    return fig


class AutotuneProgress:
    """The notebook listener: a progress bar while tuning, the summary when done."""

    def __init__(self):
        self.box = None

    def __call__(self, event: str, tuner, info: dict) -> None:
        import ipywidgets as w
        from IPython.display import display

        if event == "start":
            total = len(info["configs"])
            self.bar = w.IntProgress(value=0, min=0, max=max(1, 2 * total), description="autotune")
            self.label = w.HTML(f"{html.escape(tuner.__name__)}: {total} configs")
            self.box = w.VBox([w.HBox([self.bar, self.label])])
            display(self.box)
        elif self.box is None:
            return
        elif event in ("compile", "benchmark"):
            self.bar.value = 2 * info["index"] + (event == "benchmark")
            total = self.bar.max // 2
            self.label.value = html.escape(f"{info['index'] + 1}/{total} {info['config']}: {event}")
        elif event == "end":
            self.bar.value = self.bar.max
            self.label.value = html.escape(f"best: {info['best']}")
            self.box.children = (*self.box.children, *summary_widgets(tuner))


def summary_widgets(tuner) -> list:
    import ipywidgets as w

    from .plugins.figures import figure_png, table_html

    table = w.HTML(table_html(["config", "median", "vs best", ""], summary_rows(tuner)))
    return [table, w.Image(value=figure_png(times_figure(tuner)), format="png")]


def register_in_notebook() -> bool:
    """Adds the widget listener to the autotuner's when running inside a Jupyter kernel (once)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None or "IPKernelApp" not in getattr(shell, "config", {}):
        return False
    import importlib

    autotune = importlib.import_module("tilelab.runtime.autotune")  # the module, not the decorator
    if not any(isinstance(p, AutotuneProgress) for p in autotune.PROGRESS):
        autotune.PROGRESS.append(AutotuneProgress())
    return True
