"""The shared-memory view of a CUDA kernel: the buffers the compiler allocated, checked against the IR."""

import random

import pytest

import tilelab.language as tl
from tests.viz import kernels
from tilelab.compiler.ir import ops
from tilelab.compiler.layouts import bank_conflicts, row_major_shared
from tilelab.viz.plugins.shared_memory import (
    HEADER,
    SharedMemoryTab,
    allocated_buffers,
    buffer_rows,
    kernel_buffers,
    shared_memory_html,
    summary_notes,
    wavefront_grid,
)

PNG = b"\x89PNG"


@pytest.fixture(scope="module")
def column_store():
    """A column store compiled for sm_90a: its layout change goes through shared memory."""
    block, dtype = random.choice([32, 64]), random.choice(["fp32", "fp16"])
    return kernels.compile_column_store(block, dtype)


def _ir_buffers(ck):
    """Per ``ttg.local_alloc``: the op, its first store's value layout and its first load's result layout."""
    walk = list(ck.module.walk())
    first = lambda kind, alloc: next(o for o in walk if isinstance(o, kind) and o.buf is alloc.result)  # noqa: E731
    allocs = [o for o in walk if isinstance(o, ops.LocalAllocOp)]
    return [
        (a, first(ops.LocalStoreOp, a).value.type.layout, first(ops.LocalLoadOp, a).result.type.layout) for a in allocs
    ]


def _expected(traffic):
    return [f"{traffic.wavefronts} ({traffic.ideal})", f"{-(-traffic.wavefronts // traffic.ideal)}-way"]


def test_rows_are_the_allocated_buffers_with_the_irs_offsets_and_bytes(column_store):
    ir = _ir_buffers(column_store)
    rows = buffer_rows(kernel_buffers(column_store))
    assert len(ir) >= 1 and len(rows) == len(ir)
    for row, (alloc, _, _) in zip(rows, ir):
        ty = alloc.result.type
        assert row[1:5] == [alloc.attrs["offset"], alloc.nbytes, str(ty.element), "x".join(map(str, ty.shape))]
        assert row[5] == ("swizzled" if ty.layout.params["max_phase"] > 1 else "row-major")
        assert row[6] == "{vec}/{per_phase}/{max_phase}".format(**ty.layout.params)
        assert f"line {alloc.loc.line}:" in row[0]
    assert max(r[1] + r[2] for r in rows) <= column_store.module.attrs["shared_bytes"]


def test_store_and_load_conflicts_are_bank_conflicts_of_the_ir_layouts(column_store):
    rows = buffer_rows(allocated_buffers(column_store))
    for row, (alloc, store, load) in zip(rows, _ir_buffers(column_store)):
        ty = alloc.result.type
        assert row[7:9] == _expected(bank_conflicts(ty.layout, store, ty.element.itemsize))
        assert row[9:11] == _expected(bank_conflicts(ty.layout, load, ty.element.itemsize))


def test_swizzle_toggle_recomputes_with_a_row_major_buffer(column_store):
    swizzled = buffer_rows(allocated_buffers(column_store), swizzled=True)
    plain = buffer_rows(allocated_buffers(column_store), swizzled=False)
    for row, (alloc, store, load) in zip(plain, _ir_buffers(column_store)):
        ty = alloc.result.type
        flat = row_major_shared(ty.shape, ty.layout.params["order"])
        assert row[6] == "1/1/1" and row[5] == "row-major"
        assert row[7:9] == _expected(bank_conflicts(flat, store, ty.element.itemsize))
        assert row[9:11] == _expected(bank_conflicts(flat, load, ty.element.itemsize))
    # the column read of a row-major buffer conflicts; the compiler's swizzle removes most of it
    assert [r[7:] for r in plain] != [r[7:] for r in swizzled]
    assert any(int(p[9].split()[0]) > int(s[9].split()[0]) for p, s in zip(plain, swizzled))


def test_notes_give_the_allocated_total_and_the_private_scratch(column_store):
    allocated, total = column_store.module.attrs["shared_bytes"], column_store.metadata["shared"]
    text = " ".join(summary_notes(column_store, kernel_buffers(column_store)))
    assert (
        f"{allocated} bytes in all" in text and f"scratch of ops (after the buffers): {total - allocated} bytes" in text
    )
    assert "Predicted" not in text


def test_tab_picks_a_buffer_and_toggles_the_swizzle(column_store):
    tab = SharedMemoryTab(column_store)
    assert len(tab.picker.options) == len(_ir_buffers(column_store)) and "Predicted" not in tab.widget.children[0].value
    before = (tab.table.value, tab.grid.value)
    assert "tl-banks" in before[1] and all(h in before[0] for h in HEADER)
    assert "swizzled" in before[1] and "without the swizzle" in before[1]  # both side by side
    tab.swizzle.value = False
    assert tab.table.value != before[0]
    tab.access.value = "store"
    assert tab.grid.value != before[1] and "first store" in tab.grid.value
    tab.picker.value = len(tab.picker.options) - 1
    assert "tl-banks" in tab.grid.value


def test_report_section_lists_the_allocated_buffers(column_store):
    section = shared_memory_html(column_store)
    assert "Predicted" not in section and "Private scratch" in section
    assert section.count("<table class='tl-banks'>") == 2 * len(_ir_buffers(column_store))


def test_cpu_target_keeps_the_predicted_dot_buffers_labelled():
    ck = kernels.compile_matmul(64, 64, 32)
    assert allocated_buffers(ck) == [] and all(b.predicted for b in kernel_buffers(ck))
    assert summary_notes(ck, kernel_buffers(ck))[0].startswith("Predicted") and "Predicted" in shared_memory_html(ck)


def test_cuda_kernel_without_buffers_says_so():
    ck = kernels.compile_add(block=256, target="cuda:sm_90a")
    assert kernel_buffers(ck) == []
    notes = summary_notes(ck, [])
    assert notes[0].startswith("No shared buffers") and "Predicted" not in " ".join(notes)


def test_a_matmul_result_stored_with_stmatrix_is_drawn_as_stmatrix(monkeypatch):
    """The f16 result of a Hopper matmul goes to shared memory with ``stmatrix``: the view counts its traffic.

    Each ``stmatrix.x4`` writes four 8x8 matrices, a phase of eight 16-byte rows each: 4 wavefronts, the
    ideal, where the pair-by-pair ``st.shared.b32`` model (the path off) gives what those would take.
    """
    import tilelab
    from tests.support.gpu_kernels import F16, masked_matmul_kernel

    monkeypatch.setenv("TILELAB_CUDA_WGMMA", "1")

    def result_buffer():
        consts = {"BM": 128, "BN": 128, "BK": 32}
        ck = tilelab.compile(masked_matmul_kernel, F16, consts, target="cuda:sm_90a", num_warps=8, cache=False)
        (buf,) = [b for b in allocated_buffers(ck) if b.elem_bytes == 2 and b.reader is not None]
        return buf

    buf = result_buffer()
    assert buf.matrix_groups(reader=False) is not None
    c = buf.conflicts(reader=False)
    assert (c.wavefronts, c.ideal, c.vector_bytes) == (4, 4, 16)
    waves = wavefront_grid(buf, reader=False)
    assert len(waves) == 4 and all(sorted(w) == list(range(32)) for w in waves)  # every bank, once a phase
    monkeypatch.setenv("TILELAB_CUDA_LDMATRIX", "0")
    plain = result_buffer()
    assert plain.matrix_groups(reader=False) is None
    got, want = plain.conflicts(reader=False), bank_conflicts(plain.shared, plain.writer, 2)
    assert (got.wavefronts, got.ideal, got.vector_bytes) == (want.wavefronts, want.ideal, want.vector_bytes)
    assert want.vector_bytes == 4  # pairs


def test_a_buffer_made_for_its_conversion_is_named_so_with_its_own_traffic():
    """A dot's f32 result goes to its store layout through a buffer made for the pair (``conversion_shared``):
    no swizzle parameters to show, 16-byte accesses on both sides, each conflict-free."""
    import tilelab

    ck = tilelab.compile(
        f32_dot, {"a": "*f32", "b": "*f32", "c": "*f32"}, {"BM": 64, "BN": 128, "BK": 32}, target="cuda:sm_90a",
        divisibility={"a": 16, "b": 16, "c": 16}, num_warps=4, num_stages=1, cache=False, snapshots=False,
    )  # fmt: skip
    buffers = allocated_buffers(ck)
    rows = buffer_rows(buffers)
    made = [i for i, row in enumerate(rows) if row[5] == "made for the conversion"]
    assert len(made) == 1
    row, buf = rows[made[0]], buffers[made[0]]
    assert row[6] == "-"
    for cells, reg in ((row[7:9], buf.writer), (row[9:11], buf.reader)):
        traffic = bank_conflicts(buf.shared, reg, 4)
        assert cells == _expected(traffic) and traffic.vector_elems == 4 and cells[1] == "1-way"


def f32_dot(a, b, c, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    x = tl.load(a + rm[:, None] * BK + rk[None, :])
    y = tl.load(b + rk[:, None] * BN + rn[None, :])
    tl.store(c + rm[:, None] * BN + rn[None, :], tl.dot(x, y))
