"""The shared-memory view: each buffer, its swizzle, which bank holds each element, and the conflicts.

Shared memory has 32 banks of 4 bytes; a warp's request takes one *wavefront* per distinct word
any bank must serve. A row-major f16 tile whose rows are 128 bytes puts a whole column in one
bank: reading it by columns takes 32 wavefronts. A swizzle (``vec``, ``perPhase``, ``maxPhase``)
XORs each row's 16-byte chunk index with its row: a column spreads over 8 banks and takes 4.

    buf = SharedBuffer.for_tile("A", [64, 64], 2, reader=column_reader)
    buf.conflicts(swizzled=True).wavefronts, buf.conflicts(swizzled=False).wavefronts   # 4, 32

For a CUDA kernel the view lists the buffers the compiler allocated (``ttg.local_alloc``, placed by
the ``allocate-shared-memory`` pass), each checked against the layouts that store and load it:

    buffers = allocated_buffers(tilelab.compile(k, ..., target="cuda:sm_90a"))
    buffers[0].offset, buffers[0].bytes, buffers[0].conflicts(reader=True).wavefronts

Targets that allocate nothing (cpu, interpret) get the buffers the kernel *would* need on the GPU:
the operands of each ``tl.dot`` (staged through shared memory for ``mma``), labelled as predicted.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np

from tilelab.compiler.ir import ops
from tilelab.compiler.layouts import (
    OFFSET,
    BankConflicts,
    bank_conflicts,
    default_blocked,
    dot_operand,
    mma_m16n8k16_accumulator,
    row_major_shared,
    shared_vector_width,
    swizzled_shared,
)

from .figures import LazyPane, note_html, table_html

BANKS, BANK_BYTES = 32, 4


def mma_swizzle(shape, elem_bytes: int, order=(1, 0)) -> tuple[int, int, int]:
    """``(vec, per_phase, max_phase)`` for a tile read by ``ldmatrix``: 16-byte vectors, 8 rows per 128 bytes.

    ``vec``: elements of one 16-byte chunk; ``per_phase``: rows sharing a phase (rows shorter than
    128 bytes pair up); ``max_phase``: 8 rows' worth of chunks, capped by the chunks in a row.
    """
    row = int(shape[order[0]])
    vec = max(1, min(row, 16 // elem_bytes))
    per_phase = max(1, 128 // (row * elem_bytes))
    max_phase = max(1, min(8 // per_phase, row // vec))
    return vec, per_phase, max_phase


@dataclass
class SharedBuffer:
    """One shared buffer: shape, element size, swizzle, offset, and the layouts that write and read it."""

    name: str
    shape: tuple
    elem_bytes: int
    elem_type: str
    swizzle: tuple[int, int, int]
    order: tuple
    offset: int = 0
    writer: object = None
    reader: object = None
    predicted: bool = True
    shared: object = None  # the allocated buffer's own shared layout (None: built from ``swizzle``)
    #: how the CUDA lowering moves each side: ``(store, load)`` conditions of ``matrix_plan`` (None: plain accesses)
    matrix: dict | None = None
    num_warps: int = 4

    @classmethod
    def for_tile(cls, name, shape, elem_bytes, reader=None, writer=None, elem_type="f16", order=(1, 0)):
        return cls(
            name,
            tuple(shape),
            elem_bytes,
            elem_type,
            mma_swizzle(shape, elem_bytes, order),
            tuple(order),
            writer=writer,
            reader=reader,
        )

    @property
    def bytes(self) -> int:
        return int(np.prod(self.shape)) * self.elem_bytes

    def layout(self, swizzled: bool = True):
        """The offset -> element map: the buffer's own (swizzled) layout, or a plain row-major one."""
        if not swizzled:
            return row_major_shared(self.shape, self.order)
        if self.shared is not None:
            return self.shared
        return swizzled_shared(self.shape, *self.swizzle, order=self.order)

    def conflicts(self, swizzled: bool = True, reader: bool = True):
        """``BankConflicts`` of the reading (or writing) layout on this buffer.

        Where the lowering moves the side with ``ldmatrix``/``stmatrix`` (16-bit mma fragments on the
        GPU), the instruction's own traffic: each 8x8 matrix one phase of eight 16-byte rows.
        """
        reg = self.reader if reader else self.writer
        groups = self.matrix_groups(swizzled, reader)
        if groups is None:
            return bank_conflicts(self.layout(swizzled), reg, self.elem_bytes)
        from tilelab.compiler.backends.cuda.lower_ldmatrix import matrix_wavefronts

        per = matrix_wavefronts(groups, self.elem_bytes)
        return BankConflicts(int(per.max()), len(groups[0].pairs), 8, 16, per[None, :])

    def matrix_groups(self, swizzled: bool = True, reader: bool = True):
        """The ``ldmatrix`` (reader) or ``stmatrix`` (writer) instructions of this side, or None (plain accesses)."""
        reg = self.reader if reader else self.writer
        if self.matrix is None or reg is None:
            return None
        from tilelab.compiler.backends.cuda.lower_shared import buffer_places, matrix_plan

        shared = self.layout(swizzled)
        vector = shared_vector_width(shared, reg, self.elem_bytes)
        places = buffer_places(shared)
        return matrix_plan(reg, places, 8 * self.elem_bytes, self.num_warps, store=not reader, vector=vector,
                           **self.matrix)  # fmt: skip

    def banks(self, swizzled: bool = True) -> np.ndarray:
        """The bank of every element (tile-shaped)."""
        offsets = (
            self.layout(swizzled).invert().apply(**{f"dim{d}": g for d, g in enumerate(np.indices(self.shape))})[..., 0]
        )
        return (offsets * self.elem_bytes // BANK_BYTES) % BANKS


def _mma_warps(m: int, n: int, num_warps: int) -> list[int]:
    wm = max(1, min(num_warps, m // 16))
    return [wm, max(1, num_warps // wm)]


def predicted_buffers(compiled) -> list[SharedBuffer]:
    """The shared buffers the kernel's ``tl.dot`` operands need, laid out back to back (16-byte aligned)."""
    num_warps = compiled.options.num_warps
    buffers, offset = [], 0
    for op in compiled.module.walk():
        if not isinstance(op, ops.DotOp):
            continue
        a, b = op.operands[0].type, op.operands[1].type
        (m, k), n = a.shape[-2:], b.shape[-1]
        if m < 16 or n < 8 or a.element.itemsize > 2:
            continue
        acc = mma_m16n8k16_accumulator([m, n], _mma_warps(m, n, num_warps))
        k_width = 4 // a.element.itemsize
        for idx, (ty, which) in enumerate(((a, "A"), (b, "B"))):
            shape = list(ty.shape[-2:])
            reader = dot_operand(acc, idx, k_width, k=k)
            writer = default_blocked(shape, num_warps)
            name = f"line {op.loc.line}: tl.dot operand {which} {shape}"
            buf = SharedBuffer.for_tile(name, shape, ty.element.itemsize, reader, writer, str(ty.element))
            buf.offset = offset
            offset += -(-buf.bytes // 16) * 16
            buffers.append(buf)
    return buffers


def _allocated(index: int, alloc, store, load, options=None) -> SharedBuffer:
    """A ``SharedBuffer`` for one ``ttg.local_alloc``, its store's and its load's register layouts.

    ``options`` (the compile's) say whether the lowering may move 16-bit fragments with
    ``ldmatrix``/``stmatrix``: the architecture and ``CompileOptions.ldmatrix``.
    """
    ty = alloc.result.type
    params = ty.layout.params
    swizzle = tuple(int(params.get(k, 1)) for k in ("vec", "per_phase", "max_phase"))
    order = tuple(params.get("order", range(len(ty.shape))[::-1]))
    name = f"line {alloc.loc.line}: buffer {index} {list(ty.shape)}"
    elem_bytes = max(1, ty.element.itemsize)
    offset = int(alloc.attrs.get("offset") or 0)
    matrix = None
    if options is not None and str(options.arch or "").startswith("sm_"):
        sm = int("".join(ch for ch in options.arch[3:] if ch.isdigit()) or 0)
        stage = alloc.stage_bytes // elem_bytes
        aligned = offset % 16 == 0 and (not alloc.attrs.get("stages") or stage % 8 == 0)
        matrix = {"sm": sm, "enabled": options.ldmatrix, "aligned": aligned}
    return SharedBuffer(
        name, tuple(ty.shape), elem_bytes, str(ty.element), swizzle, order, offset,
        writer=store, reader=load, predicted=False, shared=ty.layout, matrix=matrix,
        num_warps=options.num_warps if options is not None else 4,
    )  # fmt: skip


def allocated_buffers(compiled) -> list[SharedBuffer]:
    """The buffers the compiler allocated (``ttg.local_alloc``), in program order, with their store/load layouts.

    A buffer's writer is the register layout of its first ``ttg.local_store`` (or ``cp.async`` copy), its
    reader that of its first ``ttg.local_load`` (ring stages count for their ring); an empty list for
    targets that allocate no shared memory.
    """
    from tilelab.compiler.ir import ops

    def buffer_of(view):
        """The ``local_alloc`` result behind ``view`` (a ring stage names its ring)."""
        op = view.defining_op
        return op.ring if isinstance(op, ops.MemDescIndexOp) else view

    allocs, stores, loads = [], {}, {}
    for op in compiled.module.walk():
        if isinstance(op, ops.LocalAllocOp):
            allocs.append(op)
        elif isinstance(op, ops.LocalStoreOp):
            stores.setdefault(id(buffer_of(op.buf)), op.value.type.layout)
        elif isinstance(op, ops.AsyncCopyGlobalToLocalOp):  # cp.async: each thread writes what it copies
            stores.setdefault(id(buffer_of(op.view)), op.ptrs.type.layout)
        elif isinstance(op, ops.LocalLoadOp):
            loads.setdefault(id(buffer_of(op.buf)), op.result.type.layout)
    options = getattr(compiled, "options", None)
    return [_allocated(i, a, stores.get(id(a.result)), loads.get(id(a.result)), options) for i, a in enumerate(allocs)]


def allocates_shared(compiled) -> bool:
    """Whether the target's pipeline allocates shared memory explicitly (the CUDA one does)."""
    return str(compiled.target).startswith("cuda")


def kernel_buffers(compiled) -> list[SharedBuffer]:
    """The allocated buffers on a CUDA target; elsewhere the predicted ``tl.dot`` operand buffers."""
    return allocated_buffers(compiled) if allocates_shared(compiled) else predicted_buffers(compiled)


def _traffic(b: SharedBuffer, swizzled: bool, reader: bool) -> list[str]:
    """``[wavefronts per request (ideal), conflict degree]`` of one access, ``-`` when nothing does it."""
    if (b.reader if reader else b.writer) is None:
        return ["-", "-"]
    c = b.conflicts(swizzled, reader=reader)
    return [f"{c.wavefronts} ({c.ideal})", f"{-(-c.wavefronts // c.ideal)}-way"]


def buffer_rows(buffers: list[SharedBuffer], swizzled: bool = True) -> list[list]:
    """Per buffer: offset, bytes, type, shape, layout, swizzle, and per store and load the wavefronts
    per request (ideal in brackets) and the conflict degree (wavefronts / ideal)."""
    rows = []
    for b in buffers:
        vec, per_phase, max_phase = b.swizzle if swizzled else (1, 1, 1)
        name = _layout_name(b.layout(swizzled))
        rows.append(
            [b.name, b.offset, b.bytes, b.elem_type, "x".join(map(str, b.shape)), name]
            + ["-" if name == MADE_FOR_THE_PAIR else f"{vec}/{per_phase}/{max_phase}"]
            + _traffic(b, swizzled, reader=False)
            + _traffic(b, swizzled, reader=True)
        )
    return rows


def _layout_name(layout) -> str:
    p = layout.params
    if p.get("kind") == "nvmma_shared":
        return f"nvmma {p.get('swizzle_bytes')}B swizzle"
    if p.get("kind") == "swizzled_shared":
        return "swizzled" if p.get("max_phase", 1) > 1 else "row-major"
    if p.get("kind") is None and layout.in_dims == (OFFSET,) and layout != row_major_shared(list(layout.shape)):
        return MADE_FOR_THE_PAIR  # ``conversion_shared``'s buffer (no swizzle parameters: its own offsets)
    return "row-major" if p.get("kind") is None or "row" in str(layout) else str(layout)


#: the layout column's name for a buffer ``layouts.conversion_shared`` made for a conversion's two layouts
MADE_FOR_THE_PAIR = "made for the conversion"


HEADER = ["buffer", "offset", "bytes", "type", "shape", "layout", "vec/perPhase/maxPhase"]
HEADER += ["store wavefronts/request", "store conflict", "load wavefronts/request", "load conflict"]


def wavefront_grid(buf: SharedBuffer, swizzled: bool = True, reader: bool = True) -> list[dict[int, list[int]]]:
    """Warp 0's first access to ``buf``, wavefront by wavefront: per bank, the lanes it serves then.

    One request of 32 lanes runs in phases (16-byte accesses: 4 phases of 8 lanes); in a phase each
    bank serves one distinct 4-byte word per wavefront, so a bank asked for k distinct words takes
    k wavefronts (lanes reading the same word share it). An ``ldmatrix``/``stmatrix`` runs one
    phase per 8x8 matrix: the 16-byte rows its 8 lanes name.
    """
    from tilelab.compiler.layouts import bank_conflicts

    reg = buf.reader if reader else buf.writer
    shared = buf.layout(swizzled)
    groups = buf.matrix_groups(swizzled, reader)
    if groups is not None:  # ldmatrix / stmatrix: lane 8j + i names row i (16 bytes) of matrix j
        from tilelab.compiler.backends.cuda.lower_ldmatrix import lane_rows

        starts, access = lane_rows(groups[0]) * buf.elem_bytes, 16
        lanes_per_phase = 8
    else:
        v = bank_conflicts(shared, reg, buf.elem_bytes).vector_elems
        offsets = reg.invert_and_compose(shared).coords()[0, :, :v, 0]  # warp 0, [lane, register]
        starts, access = offsets.min(axis=1) * buf.elem_bytes, v * buf.elem_bytes
        lanes_per_phase = min(32, max(1, 128 // access))
    lanes = 8 * len(groups[0].pairs) if groups is not None else offsets.shape[0]
    waves: list[dict[int, list[int]]] = []
    for start in range(0, lanes, lanes_per_phase):
        words_of = {}
        for lane in range(start, min(start + lanes_per_phase, lanes)):
            first = int(starts[lane])
            words_of[lane] = sorted({(first + b) // BANK_BYTES for b in range(access)})
        per_bank: dict[int, list[int]] = {}
        for words in words_of.values():
            for word in words:
                bank_words = per_bank.setdefault(word % BANKS, [])
                if word not in bank_words:
                    bank_words.append(word)
        depth = max(len(ws) for ws in per_bank.values())
        phase = [{} for _ in range(depth)]
        for lane, words in words_of.items():
            for word in words:
                wave = sorted(per_bank[word % BANKS]).index(word)
                phase[wave].setdefault(word % BANKS, []).append(lane)
        waves += phase
    return waves


def _grid_table(waves, ideal: int) -> str:
    head = "".join(f"<th>{b}</th>" for b in range(BANKS))
    rows = []
    for i, wave in enumerate(waves):
        cells = []
        for bank in range(BANKS):
            lanes = sorted(set(wave.get(bank, [])))
            text = ",".join(map(str, lanes[:2])) + ("…" if len(lanes) > 2 else "")
            title = f"wavefront {i}, bank {bank}: lanes {lanes}" if lanes else f"bank {bank}: idle"
            cls = "tl-bank-used" if lanes else ""
            cells.append(f'<td class="{cls}" title="{title}">{text}</td>')
        flag = ' class="tl-bank-extra"' if i >= ideal else ""
        rows.append(f"<tr{flag}><th>wave {i}</th>{''.join(cells)}</tr>")
    return f"<table class='tl-banks'><tr><th>bank</th>{head}</tr>{''.join(rows)}</table>"


BANK_CSS = """<style>
.tl-banks { border-collapse: collapse; font-family: ui-monospace, Menlo, monospace; font-size: 9px; }
.tl-banks td { border: 1px solid #e0e0e0; min-width: 18px; height: 16px; text-align: center; padding: 0 1px; }
.tl-banks th { font-weight: normal; color: #757575; padding: 0 3px; white-space: nowrap; }
.tl-banks .tl-bank-used { background: #bbdefb; }
.tl-banks .tl-bank-extra .tl-bank-used { background: #ffcdd2; }
.tl-side { display: flex; gap: 24px; flex-wrap: wrap; align-items: flex-start; }
</style>"""


def banks_html(buf: SharedBuffer, reader: bool = True) -> str:
    """Warp 0's first load (or store) of ``buf`` as the 32-bank grid per wavefront, swizzle on and off."""
    from .figures import note_html

    if (buf.reader if reader else buf.writer) is None:
        if reader:
            return note_html("No ttg.local_load reads this buffer into registers (wgmma reads it straight from "
                             "shared memory, in the layout the nvmma swizzle made for it): see its store.")  # fmt: skip
        return note_html("No store into this buffer to draw.")
    sides = []
    for swizzled in (True, False):
        c = buf.conflicts(swizzled, reader=reader)
        waves = wavefront_grid(buf, swizzled, reader)
        what = f"swizzled ({'/'.join(map(str, buf.swizzle))})" if swizzled else "without the swizzle (row-major)"
        access = "load" if reader else "store"
        title = f"<b>{what}</b>: {len(waves)} wavefronts for warp 0's first {access} (ideal {c.ideal})"
        sides.append(f"<div><div>{title}</div>{_grid_table(waves, c.ideal)}</div>")
    legend = note_html(
        "Rows: wavefronts (one 128-byte trip through the 32 banks); cells: the lanes a bank serves in that "
        "wavefront. Red rows are the extra wavefronts of bank conflicts: lanes asking one bank for different words."
    )
    return f"{BANK_CSS}{legend}<div class='tl-side'>{''.join(sides)}</div>"


PREDICTED_NOTE = (
    "Predicted: this target allocates no shared memory; these are the buffers the kernel's "
    "tl.dot operands would need on the GPU (written by the default blocked layout, read as mma operands)."
)


def summary_notes(compiled, buffers: list[SharedBuffer]) -> list[str]:
    """The lines above the table: what the rows are, and on CUDA the allocated total and private scratch."""
    if not allocates_shared(compiled):
        return [PREDICTED_NOTE] if buffers else ["No shared buffers: this kernel has no tl.dot on 16-bit tiles."]
    allocated = int(compiled.module.attrs.get("shared_bytes", 0) or 0)
    total = int((compiled.metadata or {}).get("shared", allocated) or 0)
    lines = [
        f"Allocated by the compiler: {len(buffers)} buffer(s) (ttg.local_alloc), {allocated} bytes in all "
        "(buffers whose lifetimes do not overlap share bytes).",
        f"Private scratch of ops (after the buffers): {total - allocated} bytes; {total} bytes of shared memory "
        "per program.",
    ]
    if not buffers:
        lines.insert(0, "No shared buffers: every layout change of this kernel stays in registers.")
    return lines


def shared_memory_html(compiled) -> str:
    """The report section: the buffer table with and without swizzle, and each buffer's bank picture."""
    from .figures import note_html

    buffers = kernel_buffers(compiled)
    parts = [note_html(line) for line in summary_notes(compiled, buffers)]
    if not buffers:
        return "".join(parts)
    for swizzled in (True, False):
        parts.append(note_html("swizzled" if swizzled else "without the swizzle (row-major)"))
        parts.append(table_html(HEADER, buffer_rows(buffers, swizzled)))
    parts += [f"<h3>{html.escape(b.name)}</h3>{banks_html(b)}" for b in buffers]
    return "".join(parts)


class SharedMemoryTab:
    """The buffer table, a buffer picker, a load/store choice, the chosen buffer's bank grids."""

    def __init__(self, compiled):
        import ipywidgets as w

        self.buffers = kernel_buffers(compiled)
        self.swizzle = w.Checkbox(value=True, description="swizzle", indent=False)
        self.picker = w.Dropdown(
            options=[(b.name, i) for i, b in enumerate(self.buffers)],
            description="buffer",
            layout=w.Layout(width="420px"),
        )
        self.access = w.ToggleButtons(options=["load", "store"], value="load", style={"button_width": "70px"})
        self.table = w.HTML(layout=w.Layout(width="100%"))
        self.grid = w.HTML(layout=w.Layout(width="100%"))
        self.swizzle.observe(lambda _: self.refresh(), names="value")
        self.access.observe(lambda _: self.refresh(), names="value")
        self.picker.observe(lambda _: self._pick(), names="value")
        notes = w.HTML("".join(note_html(line) for line in summary_notes(compiled, self.buffers)))
        if not self.buffers:
            self.widget = notes
            return
        self.widget = w.VBox([notes, self.table, w.HBox([self.picker, self.access, self.swizzle]), self.grid])
        self._pick()

    def _pick(self) -> None:
        """Shows the chosen buffer's load, or its store when nothing loads it into registers."""
        buf = self.buffers[self.picker.value] if self.picker.value is not None else None
        if buf is not None and buf.reader is None and buf.writer is not None:
            self.access.value = "store"  # the observer redraws
        self.refresh()

    def refresh(self) -> None:
        """Recomputes the table and the picture with or without the swizzle."""

        self.table.value = table_html(HEADER, buffer_rows(self.buffers, self.swizzle.value))
        if self.picker.value is not None:
            self.grid.value = banks_html(self.buffers[self.picker.value], reader=self.access.value == "load")


def shared_memory_tab(compiled):
    return LazyPane(lambda: [SharedMemoryTab(compiled).widget], "shared memory").widget
