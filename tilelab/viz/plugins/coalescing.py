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
from tilelab.compiler.layouts import blocked, contiguous_elements, fastest_dim

from .figures import LazyPane, figure_html, figure_png, new_figure, note_html, table_html
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
    addr: np.ndarray = field(default=None, repr=False)  # [warp, lane, register] byte address
    on: np.ndarray = field(default=None, repr=False)  # [warp, lane, register] lane active

    def request(self, warp: int, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(lanes, first byte, bytes)`` of each active element of request ``index`` of ``warp``."""
        v = self.vector_elems
        a = self.addr[warp, :, index * v : (index + 1) * v]
        on = self.on[warp, :, index * v : (index + 1) * v]
        lanes = np.broadcast_to(np.arange(a.shape[0])[:, None], a.shape)
        return lanes[on], a[on], np.full(int(on.sum()), self.elem_bytes)

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
    v = max(1, min(int(vector_elems), contiguous_elements(layout, fastest_dim(layout))))
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
        addr,
        on,
    )


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
    def kind(self) -> str:
        """``load``, ``store``, or ``cp.async`` (a pipelined loop's copy from global into shared memory)."""
        return "cp.async" if getattr(self.access.op, "ptrs", None) is not None else self.access.kind

    @property
    def label(self) -> str:
        arg = self.access.arg_name or "?"
        return f"line {self.access.line}: {self.kind} {arg} {list(self.access.addresses.shape)}"


def access_layout(op, ptr_info, elem_bytes: int, num_warps: int, mask_info=None):
    """The layout threads use for ``op``: the one the GPU passes assigned, else the coalesce prediction.

    Returns ``(layout, origin)``; origin says which it is.
    """

    ty = pointer_operand(op).type
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


def pointer_operand(op):
    """The pointer tile of a global access: a load's or store's first operand, an async copy's ``ptrs``.

    A pipelined loop's loads become ``ttg.async_copy_global_to_local`` (cp.async) whose first operand
    is the shared-memory destination; the threads' global addresses are its ``ptrs``.
    """
    return getattr(op, "ptrs", None) or op.operands[0]


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
        ptr_info = info[pointer_operand(acc.op)]
        mask_info = info[acc.op.mask] if acc.op.mask is not None else None
        layout, origin = access_layout(acc.op, ptr_info, acc.elem_bytes, num_warps, mask_info)
        v = _vector_elems(ptr_info, acc.elem_bytes, fastest_dim(layout), mask_info)
        cost = analyze_access(acc.addresses, acc.mask, layout, acc.elem_bytes, v)
        index = (acc.line or 0) - (compiled.first_line or 1)
        source = lines[index].strip() if 0 <= index < len(lines) else ""
        rows.append(AccessRow(acc, source, layout, origin, cost))
    return rows, launch


# --------------------------------------------------------------------------- pictures and tab


SHOWN_REQUESTS = 4


def _lane_colour(lane: int):
    from matplotlib import colormaps

    return colormaps["viridis"](0.9 * lane / 31)


def _request_sectors(cost: AccessCost, warp: int, index: int):
    """Per 32-byte sector a request touches (in address order): its id, the lanes and bytes in it."""
    lanes, first, size = cost.request(warp, index)
    out: dict[int, list] = {}
    for lane, a, n in zip(lanes, first, size):
        for byte in range(int(a), int(a) + int(n)):
            out.setdefault(byte // SECTOR_BYTES, []).append((byte % SECTOR_BYTES, int(lane)))
    return sorted(out.items())


def _lane_ranges(lanes) -> str:
    lanes = sorted(set(lanes))
    parts, start = [], lanes[0]
    for prev, cur in zip(lanes, lanes[1:] + [None]):
        if cur != prev + 1:
            parts.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = cur
    return ",".join(parts)


def access_figure(row: AccessRow, warp: int = 0):
    """The memory line of warp ``warp``'s first requests: each 32-byte sector they touch, in address order.

    A sector is a box of 32 bytes; a byte some lane asked for is coloured by that lane (the lanes are
    written above the box), an unused byte stays grey and hatched: what the access wastes. A gap
    mark ``//`` separates sectors that are not next to each other in memory.
    """
    from matplotlib.patches import Rectangle

    cost = row.cost
    issued = [i for i in range(cost.per_request.size // max(1, cost.addr.shape[0])) if cost.request(warp, i)[0].size]
    shown = issued[:SHOWN_REQUESTS]
    sectors = [_request_sectors(cost, warp, i) for i in shown]
    width = max([len(s) for s in sectors] + [1])
    fig = new_figure(min(11, 1.2 + 0.62 * width), 1.2 + 0.75 * max(1, len(shown)))
    ax = fig.add_subplot()
    for y, (index, secs) in enumerate(zip(shown, sectors)):
        for x, (sector, hits) in enumerate(secs):
            ax.add_patch(Rectangle((x, -y), 0.92, 0.6, fc="#e6e6e6", hatch="////", lw=0.8, ec="#9e9e9e"))
            for byte, lane in hits:
                ax.add_patch(Rectangle((x + 0.92 * byte / 32, -y), 0.92 / 32, 0.6, color=_lane_colour(lane), lw=0))
            label = _lane_ranges([lane for _, lane in hits])
            ax.text(x + 0.46, -y + 0.66, f"lanes {label}", ha="center", va="bottom", fontsize=6)
            if x and sector != secs[x - 1][0] + 1:
                ax.text(x - 0.04, -y + 0.3, "//", ha="center", va="center", fontsize=8, color="#b71c1c")
        ax.text(-0.1, -y + 0.3, f"request {index}\n{len(secs)} sectors", ha="right", va="center", fontsize=7)
    ax.set_xlim(-1.6, width + 0.1)
    ax.set_ylim(-len(shown) + 0.2, 1.05)
    ax.axis("off")
    ideal = cost.ideal_per_request
    fig.suptitle(
        f"{row.label}: warp {warp}, {cost.vector_label}; {cost.sectors_per_request:.1f} sectors/request "
        f"(ideal {ideal}), efficiency {cost.efficiency:.0%}",
        fontsize=9,
    )
    fig.text(0.5, 0.02, "colour: lane (viridis, lane 0 dark); grey hatched: bytes moved but not asked for", ha="center",
             fontsize=7, color="#616161")  # fmt: skip
    fig.subplots_adjust(left=0.02, right=0.99, top=0.8, bottom=0.1)
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
                r.kind,
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
