"""The coalescing view: per global load/store, which thread touches which element and what it costs.

Global memory moves 32-byte sectors. One warp instruction (a *request*) of 32 lanes, each moving
``v`` consecutive elements, costs the distinct sectors its active lanes touch. Ideal for a
unit-stride access is ``v * elem_bytes`` sectors per request (32 lanes x v x bytes / 32): 4 for
scalar f32, 16 for f32 v4 or f16 v8. A stride-2 f32 access takes 8 (half of each sector is
wasted), a transposed one 32 (every lane its own sector).

    report = analyze_access(addresses, mask, layout, elem_bytes=4, vector_elems=1)
    report.sectors_per_request, report.efficiency, report.coalesced   # 4.0, 1.0, True

An access is flagged *uncoalesced* when it moves more sectors than the bytes it asks for need
(per request, ``ceil(bytes asked / 32)``); a masked tail is not flagged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from tilelab.compiler.analysis.axis_info import analyze
from tilelab.compiler.analysis.memory_access import SECTOR_BYTES, vector_width
from tilelab.compiler.layouts import blocked, contiguous_elements

from .figures import CATEGORY, SEQUENTIAL, LazyPane, figure_html, figure_png, new_figure, note_html, table_html
from .launch import traced_accesses


@dataclass
class AccessCost:
    """Sectors and threads of one access; per-element tiles (``thread``, ``cost``) feed the heatmap.

    ``thread``: ``warp * 32 + lane`` owning each element; ``cost``: sectors of the request that
    moves it; ``active``: lanes the mask lets through.
    """

    vector_elems: int
    elem_bytes: int
    requests: int
    sectors: int
    min_sectors: int
    asked_bytes: int
    thread: np.ndarray = field(repr=False)
    cost: np.ndarray = field(repr=False)
    active: np.ndarray = field(repr=False)
    per_request: np.ndarray = field(repr=False)

    @property
    def sectors_per_request(self) -> float:
        return self.sectors / self.requests if self.requests else 0.0

    @property
    def ideal_per_request(self) -> int:
        """Sectors of a full unit-stride request: 32 lanes x ``v`` x bytes / 32-byte sectors."""
        return max(1, 32 * self.vector_elems * self.elem_bytes // SECTOR_BYTES)

    @property
    def moved_bytes(self) -> int:
        return self.sectors * SECTOR_BYTES

    @property
    def efficiency(self) -> float:
        """Bytes asked over bytes moved (1.0: nothing wasted)."""
        return self.asked_bytes / self.moved_bytes if self.moved_bytes else 1.0

    @property
    def coalesced(self) -> bool:
        return self.sectors <= self.min_sectors

    @property
    def vector_label(self) -> str:
        return f"v{self.vector_elems}"


def analyze_access(addresses, mask, layout, elem_bytes: int, vector_elems: int = 1) -> AccessCost:
    """Cost of one access whose element ``i`` lives at byte ``addresses[i]``, threads given by ``layout``.

    Request ``r`` of warp ``w`` is registers ``[r*v, (r+1)*v)`` of its 32 lanes; a request whose
    lanes are all masked off is not issued.
    """
    addresses = np.asarray(addresses, np.int64).reshape(layout.shape)
    active = np.ones(layout.shape, bool) if mask is None else np.broadcast_to(np.asarray(mask, bool), layout.shape)
    v = max(1, min(int(vector_elems), contiguous_elements(layout, _fastest_dim(layout))))
    coords = layout.coords()  # [warp, lane, register, rank]
    where = tuple(coords[..., d] for d in range(layout.rank))
    addr, on = addresses[where], active[where]
    warps, lanes, regs = addr.shape
    request = np.broadcast_to(
        (np.arange(warps)[:, None, None] * (regs // v)) + np.arange(regs)[None, None, :] // v, addr.shape
    )
    req, a = request[on], addr[on]
    first, last = a // SECTOR_BYTES, (a + elem_bytes - 1) // SECTOR_BYTES
    sector_keys = np.unique(np.concatenate([req * (1 << 40) + first, req * (1 << 40) + last]))
    per_request = np.bincount(sector_keys >> 40, minlength=warps * (regs // v))
    asked = np.bincount(np.unique(req * (1 << 40) + a) >> 40, minlength=per_request.size) * elem_bytes
    issued = asked > 0
    min_sectors = int(sum(math.ceil(b / SECTOR_BYTES) for b in asked[issued]))
    warp, lane, reg = layout.owner_of(np.stack(np.indices(layout.shape), axis=-1))
    thread = warp * lanes + lane
    cost = per_request[warp * (regs // v) + reg // v]
    return AccessCost(
        v,
        elem_bytes,
        int(issued.sum()),
        int(per_request.sum()),
        min_sectors,
        int(asked.sum()),
        thread,
        cost,
        np.asarray(active),
        per_request,
    )


def _fastest_dim(layout) -> int:
    order = layout.params.get("order")
    return int(order[0]) if order else layout.rank - 1


# --------------------------------------------------------------------------- a kernel's accesses


@dataclass
class AccessRow:
    """One load/store of the kernel for the chosen program: where it is, its layout, its cost."""

    access: object  # launch.TracedAccess
    source: str
    layout: object
    layout_origin: str
    cost: AccessCost

    @property
    def label(self) -> str:
        arg = self.access.arg_name or "?"
        return f"line {self.access.line}: {self.access.kind} {arg} {list(self.access.addresses.shape)}"


def access_layout(op, ptr_info, elem_bytes: int, num_warps: int, mask_info=None):
    """The layout threads use for ``op``: the one the GPU passes assigned, else the coalesce prediction.

    Returns ``(layout, origin)``; origin says which it is.
    """
    ty = op.operands[0].type
    if getattr(ty, "layout", None) is not None:
        return ty.layout, "assigned by the compiler"
    shape = list(ty.shape)
    rank = len(shape)
    order = sorted(range(rank), key=lambda d: (-ptr_info.contiguity[d], -d))
    threads = 32 * num_warps
    vector = _vector_elems(ptr_info, elem_bytes, order[0], mask_info)
    per_thread = min(vector, max(1, math.prod(shape) // threads))
    per_thread = min(per_thread, shape[order[0]])
    spt, tpw, wpc = [1] * rank, [1] * rank, [1] * rank
    spt[order[0]] = per_thread
    lanes, warps = 32, num_warps
    for d in order:
        tpw[d] = min(lanes, max(1, shape[d] // spt[d]))
        lanes //= tpw[d]
    tpw[order[-1]] *= lanes
    for d in order:
        wpc[d] = min(warps, max(1, shape[d] // (spt[d] * tpw[d])))
        warps //= wpc[d]
    wpc[order[-1]] *= warps
    return blocked(shape, spt, tpw, wpc, order), "predicted (what the coalesce pass picks for this access)"


def _vector_elems(ptr_info, elem_bytes: int, dim: int, mask_info=None) -> int:
    return vector_width(ptr_info, elem_bytes, dim, mask_info)


def kernel_accesses(compiled, program=(0, 0, 0)) -> tuple[list[AccessRow], object]:
    """The coalescing rows of every tile load/store of ``compiled`` for ``program``, and the launch used."""
    traced, launch = traced_accesses(compiled, program)
    info = analyze(compiled.module)
    num_warps = compiled.options.num_warps
    lines = (compiled.source or "").splitlines()
    rows = []
    for acc in traced:
        if acc.addresses.ndim == 0:
            continue
        ptr_info = info[acc.op.operands[0]]
        mask_info = info[acc.op.mask] if acc.op.mask is not None else None
        layout, origin = access_layout(acc.op, ptr_info, acc.elem_bytes, num_warps, mask_info)
        v = _vector_elems(ptr_info, acc.elem_bytes, _fastest_dim(layout), mask_info)
        cost = analyze_access(acc.addresses, acc.mask, layout, acc.elem_bytes, v)
        index = (acc.line or 0) - (compiled.first_line or 1)
        source = lines[index].strip() if 0 <= index < len(lines) else ""
        rows.append(AccessRow(acc, source, layout, origin, cost))
    return rows, launch


# --------------------------------------------------------------------------- pictures and tab


def _as_grid(tile: np.ndarray, row: int) -> np.ndarray:
    """A 1-d tile folded into rows of ``row`` elements (one warp request each); 2-d tiles as they are."""
    if tile.ndim == 1:
        row = min(row, tile.size)
        return tile.reshape(-1, row)
    return tile.reshape(-1, tile.shape[-1])


def access_figure(row: AccessRow):
    """Left: the thread owning each element; right: sectors of the request moving it. Masked: blank."""
    cost = row.cost
    width = 32 * cost.vector_elems
    fig = new_figure(9, 3.6)
    panels = [
        (cost.thread, CATEGORY, "thread (warp x 32 + lane)"),
        (cost.cost, SEQUENTIAL, "sectors of its request"),
    ]
    active = _as_grid(cost.active, width)
    for i, (tile, cmap, label) in enumerate(panels):
        ax = fig.add_subplot(1, 2, i + 1)
        data = np.ma.masked_where(~active, _as_grid(tile, width))
        image = ax.imshow(data, cmap=cmap, aspect="auto", interpolation="nearest")
        fig.colorbar(image, ax=ax, label=label)
        ax.set_xlabel("element (fastest dim)" if tile.ndim > 1 else f"element mod {active.shape[1]}")
        ax.set_ylabel("row" if tile.ndim > 1 else f"element // {active.shape[1]}")
        ax.set_title(label, fontsize=10)
    fig.suptitle(f"{row.label} - {cost.vector_label}, {cost.sectors_per_request:.1f} sectors/request", fontsize=10)
    return fig


def rows_table(rows: list[AccessRow]) -> str:
    """The per-access table: source line, vector width, sectors per request (ideal), efficiency, flag."""
    header = ["line", "access", "array", "vector", "requests", "sectors/request", "ideal", "efficiency", "", "source"]
    body, flagged = [], set()
    for i, r in enumerate(rows):
        c = r.cost
        mark = "ok" if c.coalesced else "UNCOALESCED"
        if not c.coalesced:
            flagged.add(i)
        body.append(
            [
                r.access.line,
                r.access.kind,
                r.access.arg_name,
                c.vector_label,
                c.requests,
                f"{c.sectors_per_request:.1f}",
                c.ideal_per_request,
                f"{c.efficiency:.0%}",
                mark,
                r.source,
            ]
        )
    return table_html(header, body, flagged)


def coalescing_html(compiled, program=(0, 0, 0)) -> str:
    """The report section: the table, then one heatmap per access."""
    rows, launch = kernel_accesses(compiled, program)
    if not rows:
        return note_html("No tile loads or stores in this kernel.")
    parts = [note_html(f"program {tuple(program)}; {launch.note}"), rows_table(rows)]
    parts += [figure_html(access_figure(r), r.label) for r in rows]
    parts.append(note_html(f"layouts: {rows[0].layout_origin}"))
    return "".join(parts)


class CoalescingTab:
    """Program id inputs, the access table, an access picker and the chosen access's heatmap."""

    def __init__(self, compiled):
        import ipywidgets as w

        self.compiled = compiled
        self.program = [
            w.BoundedIntText(value=0, min=0, max=1 << 20, description=a, layout=w.Layout(width="130px")) for a in "xyz"
        ]
        self.picker = w.Dropdown(description="access", layout=w.Layout(width="520px"))
        self.table = w.HTML()
        self.note = w.HTML()
        self.image = w.Image(format="png")
        for box in self.program:
            box.observe(lambda _: self.refresh(), names="value")
        self.picker.observe(lambda _: self.draw(), names="value")
        self.rows: list[AccessRow] = []
        self.widget = w.VBox([w.HBox(self.program), self.note, self.table, self.picker, self.image])
        self.refresh()

    def refresh(self) -> None:
        """Re-traces the chosen program and rebuilds the table and the access list."""
        pid = tuple(b.value for b in self.program)
        try:
            self.rows, launch = kernel_accesses(self.compiled, pid)
        except Exception as e:  # e.g. an out-of-bounds stand-in launch: say what to do
            self.rows, self.table.value = [], ""
            self.note.value = note_html(f"cannot trace program {pid}: {e}")
            self.picker.options = []
            return
        self.note.value = note_html(f"program {pid}; {launch.note}")
        self.table.value = rows_table(self.rows)
        current = self.picker.value
        self.picker.options = [(r.label, i) for i, r in enumerate(self.rows)]
        wanted = current if current is not None and current < len(self.rows) else 0
        if self.rows and self.picker.value != wanted:
            self.picker.value = wanted  # the observer draws it
        else:
            self.draw()

    def draw(self) -> None:
        index = self.picker.value
        if index is None or index >= len(self.rows):
            return
        self.image.value = figure_png(access_figure(self.rows[index]))


def coalescing_tab(compiled):
    return LazyPane(lambda: [CoalescingTab(compiled).widget], "coalescing").widget
