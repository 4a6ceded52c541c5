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

import statistics
import time
from dataclasses import dataclass, field

import numpy as np

from tilelab.runtime.arrays import array_info

RETURN_MODES = ("min", "max", "mean", "median", "all")
DEVICES = (None, "cpu", "cuda")
FLUSH_BYTES = 256 * 1024 * 1024  # larger than any GPU's L2: writing it evicts the kernel's data
MAX_GPU_REPS = 10_000

_gpu_cache: dict = {}  # the L2 flush buffer and a pool of CUDA events, reused across calls


def _measure(fn, n: int) -> list[float]:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean", device=None):
    """Time ``fn()`` in milliseconds: about ``warmup`` ms of warm-up runs, then about ``rep`` ms of timed runs.

    ``quantiles=[0.5, 0.2, 0.8]`` returns those quantiles instead; ``return_mode`` is
    ``"min"``, ``"max"``, ``"mean"``, ``"median"`` or ``"all"`` (every time).

    GPU work is timed like Triton does: CUDA events around each run, the L2 cache flushed
    before each (a 256 MB memset), so a kernel's time is its own and not the host's. That
    happens with ``device="cuda"``, or by default when ``fn`` (or the last launch before it)
    launched a tilelab kernel on the cuda target; ``device="cpu"`` times on the host.

        ms = do_bench(lambda: add[grid](x, y, out, n, BLOCK=1024), return_mode="median")
    """
    if return_mode not in RETURN_MODES:
        raise ValueError(f"do_bench: return_mode must be one of {RETURN_MODES}, got {return_mode!r}")
    if device not in DEVICES:
        raise ValueError(f"do_bench: device must be 'cpu', 'cuda' or None, got {device!r}")
    if device is None:
        device = _device_of(fn)
    if device == "cuda":
        times = _gpu_times(fn, warmup, rep, grad_to_none)
    else:
        estimate = statistics.median(_measure(fn, 3))
        _measure(fn, max(1, int(warmup / max(estimate, 1e-6))))
        times = _measure(fn, max(1, min(int(rep / max(estimate, 1e-6)), 100_000)))
    return _summary(times, quantiles, return_mode)


def _summary(times: list[float], quantiles, return_mode: str):
    if quantiles is not None:
        result = np.quantile(np.array(times), quantiles).tolist()
        return result[0] if len(result) == 1 else result
    if return_mode == "all":
        return times
    return float(getattr(np, return_mode)(times))


def _device_of(fn) -> str:
    """``"cuda"`` when a CUDA context exists and a tilelab kernel was launched on the cuda target.

    ``fn`` runs once here (a first call also compiles), so a launch it makes counts too.
    Host code timed in a process that also launches on the GPU needs ``device="cpu"``.
    """
    from tilelab.runtime import cuda_driver
    from tilelab.runtime.cuda_target import CudaLauncher

    fn()
    has_context = cuda_driver._state.get("context") is not None
    return "cuda" if has_context and CudaLauncher.launches > 0 else "cpu"


def _events(n: int) -> list:
    """``n`` (start, end) CUDA event pairs, from a pool that grows as needed."""
    from tilelab.runtime.cuda_driver import Event

    pool = _gpu_cache.setdefault("events", [])
    while len(pool) < n:
        pool.append((Event(), Event()))
    return pool[:n]


def _flush_l2() -> None:
    from tilelab.runtime import cuda_driver

    if "flush" not in _gpu_cache:
        _gpu_cache["flush"] = cuda_driver.mem_alloc(FLUSH_BYTES)
    cuda_driver.memset_d8(_gpu_cache["flush"], 0, FLUSH_BYTES)


def _clear_grads(grad_to_none) -> None:
    for x in grad_to_none or ():
        x.grad = None


def _gpu_times(fn, warmup: float, rep: float, grad_to_none) -> list[float]:
    """Per-run milliseconds of ``fn()`` between CUDA events, the L2 flushed before each run."""
    from tilelab.runtime import cuda_driver

    fn()
    cuda_driver.synchronize()
    (start, end), *_ = _events(1)
    start.record()
    for _ in range(5):
        _flush_l2()
        fn()
    end.record()
    estimate = max(cuda_driver.Event.elapsed_ms(start, end) / 5, 1e-4)
    for _ in range(max(1, int(warmup / estimate))):
        fn()
    pairs = _events(max(1, min(int(rep / estimate), MAX_GPU_REPS)))
    for start, end in pairs:
        _clear_grads(grad_to_none)
        _flush_l2()
        start.record()
        fn()
        end.record()
    cuda_driver.synchronize()
    return [cuda_driver.Event.elapsed_ms(start, end) for start, end in pairs]


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
    import os

    import matplotlib.pyplot as plt

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
