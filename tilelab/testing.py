"""Testing and benchmarking helpers, compatible with ``triton.testing``.

* ``do_bench(fn)`` times ``fn`` in milliseconds: with CUDA events for GPU work (L2 flushed
  between runs, like Triton), with ``perf_counter`` on the host otherwise;
* ``assert_close(actual, expected)`` compares arrays with a dtype-aware tolerance;
* ``perf_report`` / ``Benchmark`` run a function over a grid of sizes and print (or plot)
  a table, so that the benchmark code of Triton's tutorials runs unchanged::

    @tilelab.testing.perf_report(tilelab.testing.Benchmark(
        x_names=["n"], x_vals=[2**i for i in range(10, 14)], line_arg="provider",
        line_vals=["tilelab", "numpy"], line_names=["tilelab", "numpy"], ylabel="GB/s", plot_name="add",
        args={}))
    def bench(n, provider): ...

    bench.run(print_data=True)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from tilelab.runtime.arrays import array_info
from tilelab.runtime.bench import FLUSH_BYTES, do_bench


def _as_numpy(x) -> np.ndarray:
    info = array_info(x)
    if info is not None and info.host is not None:
        return info.host
    if info is not None:  # a device array: copy it to the host
        return np.asarray(x.cpu()) if hasattr(x, "cpu") else np.asarray(x)
    return np.asarray(x)


_TOLERANCE = {2: (1e-2, 1e-2), 1: (1e-1, 1e-1), 4: (1e-5, 1e-4), 8: (1e-8, 1e-7)}


def assert_close(actual, expected, atol=None, rtol=None, err_msg=""):
    """Raise ``AssertionError`` unless the arrays agree within a tolerance fitting their float width."""
    a, e = _as_numpy(actual), _as_numpy(expected)
    if a.dtype.kind in "biu" and e.dtype.kind in "biu":
        np.testing.assert_array_equal(a, e, err_msg=err_msg)
        return
    default = _TOLERANCE.get(min(a.dtype.itemsize, e.dtype.itemsize), (1e-5, 1e-4))
    atol = default[0] if atol is None else atol
    rtol = default[1] if rtol is None else rtol
    a64, e64 = a.astype(np.float64), e.astype(np.float64)
    np.testing.assert_allclose(a64, e64, atol=atol, rtol=rtol, err_msg=err_msg)


@dataclass
class Benchmark:
    """What ``perf_report`` runs: ``x_names`` over ``x_vals``, one line per ``line_vals`` entry."""

    x_names: list
    x_vals: list
    line_arg: str
    line_vals: list
    line_names: list
    plot_name: str = ""
    args: dict = field(default_factory=dict)
    xlabel: str = ""
    ylabel: str = ""
    x_log: bool = False
    y_log: bool = False
    styles: list | None = None


class Mark:
    """A benchmark function with its ``Benchmark`` specs: ``.run(print_data=True, show_plots=False)``."""

    def __init__(self, fn, benchmarks):
        self.fn = fn
        self.benchmarks = benchmarks

    def run(self, show_plots=False, print_data=False, save_path=None, return_df=False, **kwargs):
        specs = self.benchmarks if isinstance(self.benchmarks, list) else [self.benchmarks]
        tables = [self._run_one(b, show_plots, print_data, save_path, **kwargs) for b in specs]
        if return_df:
            return tables[0] if len(tables) == 1 else tables

    def _run_one(self, bench: Benchmark, show_plots, print_data, save_path, **kwargs) -> list[dict]:
        rows = []
        for x in bench.x_vals:
            xs = x if isinstance(x, (tuple, list)) else [x] * len(bench.x_names)
            x_args = dict(zip(bench.x_names, xs))
            row = dict(x_args)
            for value, name in zip(bench.line_vals, bench.line_names):
                result = self.fn(**x_args, **{bench.line_arg: value}, **bench.args, **kwargs)
                row[name] = result[0] if isinstance(result, (tuple, list)) else result
            rows.append(row)
        if print_data:
            print(format_table(bench, rows))
        if show_plots or save_path:
            plot_rows(bench, rows, show_plots, save_path)
        return rows

    __call__ = run


def format_table(bench: Benchmark, rows: list[dict]) -> str:
    """The results as an aligned text table, headed by the plot name."""
    columns = list(bench.x_names) + list(bench.line_names)
    cells = [[f"{r[c]:.4g}" if isinstance(r[c], float) else str(r[c]) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = [f"{bench.plot_name}:"] if bench.plot_name else []
    lines.append("  ".join(c.rjust(w) for c, w in zip(columns, widths)))
    lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


def plot_rows(bench: Benchmark, rows: list[dict], show: bool, save_path: str | None):
    """Plot one line per provider with matplotlib; save as ``<save_path>/<plot_name>.png`` when asked."""
    import matplotlib.pyplot as plt  # here: pyplot picks a backend on import; tables need no plot

    fig, ax = plt.subplots()
    xs = [r[bench.x_names[0]] for r in rows]
    for i, name in enumerate(bench.line_names):
        style = bench.styles[i] if bench.styles else None
        kw = {"color": style[0], "linestyle": style[1]} if style else {}
        ax.plot(xs, [r[name] for r in rows], label=name, **kw)
    ax.set_xlabel(bench.xlabel or bench.x_names[0])
    ax.set_ylabel(bench.ylabel)
    ax.set_title(bench.plot_name)
    ax.set_xscale("log" if bench.x_log else "linear")
    ax.set_yscale("log" if bench.y_log else "linear")
    ax.legend()
    if save_path:
        fig.savefig(os.path.join(save_path, f"{bench.plot_name or 'benchmark'}.png"))
    if show:
        plt.show()
    plt.close(fig)
    return fig


def perf_report(benchmarks):
    """Decorator: ``@perf_report(Benchmark(...))`` turns a function into a ``Mark`` with ``.run``."""
    return lambda fn: Mark(fn, benchmarks)


__all__ = ["Benchmark", "FLUSH_BYTES", "Mark", "assert_close", "do_bench", "perf_report"]
