"""The roofline view: a kernel's FLOPs per byte against what the machine can do.

A kernel doing ``F`` FLOPs on ``B`` bytes of global memory in ``t`` seconds sits at
intensity ``I = F / B`` and speed ``F / t``; no kernel beats ``min(bandwidth x I, peak)``.
FLOPs and bytes are counted from the IR and the grid (``count_flops_bytes``): a vector add in
f32 is 1 FLOP per 12 bytes; an ``n x n`` matmul in one program ``2n^3`` FLOPs on ``3 n^2 x 4`` bytes.

    record(compiled, seconds, grid=(64,), args={"n": 65536})   # what %tile_bench feeds
    fig = roofline_figure(compiled)                             # every recorded kernel, one chart

Ceilings come from ``benchmarks/roofline_ceilings.py`` (stored per device as JSON in the tilelab
cache dir); without them the view uses rough defaults and says so.
"""

from __future__ import annotations

import json
import math
import os
import platform
from dataclasses import dataclass

import numpy as np

from tilelab.compiler.analysis.flops_bytes import count_flops_bytes
from tilelab.runtime import cuda_driver
from tilelab.runtime.cache import default_cache_dir

from .figures import LazyPane, figure_html, figure_png, new_figure, table_html

FILE_NAME = "roofline_ceilings.json"

#: Rough ceilings used until measured: (GB/s, GFLOP/s, f16 tensor-core GFLOP/s or None).
DEFAULTS = {"cpu": (20.0, 100.0, None), "cuda": (3000.0, 60000.0, 700000.0)}


@dataclass
class Ceilings:
    """Memory bandwidth, compute peak and (GPUs) f16 tensor-core peak of one device."""

    device: str
    bandwidth_gbs: float
    peak_gflops: float
    tensor_gflops: float | None = None
    measured: bool = False

    def attainable(self, intensity: float) -> float:
        """GFLOP/s the roof allows at ``intensity`` FLOP/byte (CUDA cores, not tensor cores)."""
        return min(self.bandwidth_gbs * intensity, self.peak_gflops)


def ceilings_path():
    return default_cache_dir() / FILE_NAME


def device_key(target: str) -> str:
    """``cpu:<processor>`` or ``cuda:<GPU name>``: the key ceilings are stored under."""
    kind = "cuda" if str(target).partition(":")[0] == "cuda" else "cpu"  # cuda-ir runs on the host's interpreter
    if kind == "cuda":
        try:
            return f"cuda:{cuda_driver.device_name()}"
        except Exception:
            return "cuda:0"
    return f"cpu:{platform.processor() or platform.machine()}"


def load_ceilings(target: str) -> Ceilings:
    """The stored ceilings of this machine's ``target`` device, else the defaults (``measured=False``)."""
    key = device_key(target)
    path = ceilings_path()
    if path.exists():
        stored = json.loads(path.read_text()).get(key)
        if stored:
            return Ceilings(key, stored["bandwidth_gbs"], stored["peak_gflops"], stored.get("tensor_gflops"), True)
    bw, peak, tensor = DEFAULTS["cuda" if key.startswith("cuda") else "cpu"]
    return Ceilings(key, bw, peak, tensor, False)


def save_ceilings(ceilings: Ceilings) -> None:
    """Stores ``ceilings`` under its device key (other devices' entries are kept; atomic write)."""
    path = ceilings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(path.read_text()) if path.exists() else {}
    data[ceilings.device] = {
        "bandwidth_gbs": ceilings.bandwidth_gbs,
        "peak_gflops": ceilings.peak_gflops,
        "tensor_gflops": ceilings.tensor_gflops,
    }
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2))
    os.replace(tmp, path)


# --------------------------------------------------------------------------- points


@dataclass
class Point:
    """One kernel launch on the chart: its counted cost and (when measured) its time."""

    name: str
    target: str
    grid: tuple
    cost: object  # KernelCost
    seconds: float | None = None

    @property
    def intensity(self) -> float:
        return self.cost.intensity

    @property
    def gflops(self) -> float | None:
        return self.cost.flops / self.seconds / 1e9 if self.seconds else None

    @property
    def gbs(self) -> float | None:
        return self.cost.bytes / self.seconds / 1e9 if self.seconds else None


_MEASURED: list[Point] = []


def count_point(compiled, grid=(1,), args: dict | None = None, seconds: float | None = None) -> Point:
    """The kernel's FLOPs and bytes for a launch on ``grid`` (``args``: argument name -> value)."""
    grid = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
    cost = count_flops_bytes(compiled.module, grid, args or {})
    return Point(compiled.name, compiled.target, grid, cost, seconds)


def record(compiled, seconds: float, grid, args: dict | None = None) -> Point:
    """Puts a measured launch on the roofline (a later one of the same kernel and grid replaces it)."""
    point = count_point(compiled, grid, args, seconds)
    _MEASURED[:] = [p for p in _MEASURED if (p.name, p.target, p.grid) != (point.name, point.target, point.grid)]
    _MEASURED.append(point)
    return point


def measured_points(target: str | None = None) -> list[Point]:
    kind = None if target is None else str(target).split(":")[0]
    return [p for p in _MEASURED if kind is None or p.target.split(":")[0] == kind]


def clear_measurements() -> None:
    _MEASURED.clear()


# --------------------------------------------------------------------------- chart and text


def _latest(compiled) -> Point:
    mine = [p for p in measured_points(compiled.target) if p.name == compiled.name]
    return mine[-1] if mine else count_point(compiled)


def roofline_figure(compiled):
    """The roof of ``compiled``'s device, every measured kernel of that target, this one highlighted."""
    ceil = load_ceilings(compiled.target)
    fig = new_figure(7, 4.4)
    ax = fig.add_subplot()
    x = np.logspace(-3, 4, 200)
    ax.loglog(x, [ceil.attainable(i) for i in x], color="black", label="roof (bandwidth, peak)")
    if ceil.tensor_gflops:
        ax.loglog(x, np.minimum(ceil.bandwidth_gbs * x, ceil.tensor_gflops), "k--", lw=0.8, label="f16 tensor cores")
    mine = _latest(compiled)
    for p in measured_points(compiled.target):
        me = p.name == compiled.name
        ax.scatter(
            [p.intensity],
            [p.gflops],
            s=60 if me else 30,
            marker="*" if me else "o",
            zorder=3,
            label=f"{p.name} {list(p.grid)}",
        )
    if mine.seconds is None and math.isfinite(mine.intensity):
        ax.axvline(mine.intensity, color="tab:orange", ls=":", label=f"{compiled.name} (not timed yet)")
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("performance (GFLOP/s)")
    state = "measured" if ceil.measured else "default (not measured: run benchmarks/roofline_ceilings.py)"
    ax.set_title(f"{ceil.device}: ceilings {state}", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    return fig


def cost_rows(compiled) -> list[list[str]]:
    """How the point was counted: FLOPs, bytes, programs, assumptions, time and the fraction of the roof."""
    p, ceil = _latest(compiled), load_ceilings(compiled.target)
    c = p.cost
    rows = [
        ["launch", f"grid {list(p.grid)} = {c.programs} programs" + ("" if p.seconds else " (per program: untimed)")],
        ["FLOPs", f"{c.flops:,} (float elementwise 1/elem, fma 2, dot 2*M*N*K, loops x trips)"],
        ["bytes", f"{c.bytes:,} = loads {c.load_bytes:,} + stores {c.store_bytes:,} (every element, masks ignored)"],
        ["intensity", f"{c.intensity:.4g} FLOP/byte"],
        [
            "ceilings",
            f"{ceil.bandwidth_gbs:g} GB/s, {ceil.peak_gflops:g} GFLOP/s"
            + ("" if ceil.measured else " (defaults, not measured)"),
        ],
    ]
    rows += [["assumption", a] for a in c.assumptions]
    if p.seconds:
        roof = ceil.attainable(c.intensity)
        rows.append(
            [
                "time",
                f"{p.seconds * 1e3:.4f} ms: {p.gflops:.3g} GFLOP/s, {p.gbs:.3g} GB/s, "
                f"{p.gflops / roof:.0%} of the roof",
            ]
        )
    else:
        rows.append(["time", "not measured: %tile_bench (or roofline.record) places the kernel on the chart"])
    return rows


def roofline_html(compiled) -> str:
    return table_html(["", ""], cost_rows(compiled)) + figure_html(roofline_figure(compiled), "roofline")


class RooflineTab:
    """The counting table and the chart; "refresh" redraws after new measurements."""

    def __init__(self, compiled):
        import ipywidgets as w

        self.compiled = compiled
        self.table = w.HTML()
        self.image = w.Image(format="png")
        self.button = w.Button(description="refresh")
        self.button.on_click(lambda _: self.refresh())
        self.widget = w.VBox([self.button, self.table, self.image])
        self.refresh()

    def refresh(self) -> None:
        self.table.value = table_html(["", ""], cost_rows(self.compiled))
        self.image.value = figure_png(roofline_figure(self.compiled))


def roofline_tab(compiled):
    return LazyPane(lambda: [RooflineTab(compiled).widget], "roofline").widget
