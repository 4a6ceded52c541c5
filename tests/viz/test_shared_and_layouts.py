"""Bank conflicts with and without swizzle, predicted dot buffers, and the layout ownership model."""

import numpy as np

from tests.viz import kernels
from tilelab.compiler.layouts import blocked, default_blocked
from tilelab.viz.plugins.layout_view import TileLayout, bases_rows, grid_html, kernel_tiles
from tilelab.viz.plugins.shared_memory import SharedBuffer, buffer_rows, mma_swizzle, predicted_buffers

COLUMN_READER = blocked([64, 64], [1, 1], [32, 1], [1, 4], [0, 1])  # lane i reads row i of one column


def test_f16_tile_read_by_columns_conflicts_32_way_unswizzled_and_4_way_swizzled():
    # rows of 64 f16 = 128 bytes: a column sits in one bank; swizzling XORs the 16-byte chunk with row % 8
    buf = SharedBuffer.for_tile("t", [64, 64], 2, reader=COLUMN_READER)
    assert buf.swizzle == (8, 1, 8)
    assert buf.conflicts(swizzled=False).wavefronts == 32
    assert buf.conflicts(swizzled=True).wavefronts == 4
    banks = buf.banks(swizzled=False)
    assert np.all(banks[:, 0] == 0) and banks[0, :].tolist() == [j // 2 for j in range(64)]
    assert sorted(set(buf.banks(swizzled=True)[:32, 0].tolist())) == [4 * p for p in range(8)]


def test_mma_swizzle_for_short_rows_pairs_rows_in_a_phase():
    assert mma_swizzle([64, 32], 2) == (8, 2, 4)  # 64-byte rows: two rows per 128 bytes
    assert mma_swizzle([32, 32], 4) == (4, 1, 8)


def test_matmul_predicts_dot_operand_buffers_back_to_back():
    ck = kernels.compile_matmul(64, 64, 32)
    a, b = predicted_buffers(ck)
    assert (a.shape, b.shape, a.bytes, b.offset) == ((64, 32), (32, 64), 64 * 32 * 2, 64 * 32 * 2)
    assert a.predicted and "operand A" in a.name and a.name.startswith("line ")
    rows = buffer_rows([a, b], swizzled=True)
    assert rows[0][6] == "8/2/4" and rows[0][5] == "swizzled"
    assert buffer_rows([a], swizzled=False)[0][6] == "1/1/1"


def test_no_dot_means_no_buffers():
    assert predicted_buffers(kernels.compile_add()) == []


def test_kernel_tiles_default_layout_owners():
    tiles = {t.shape: t for t in kernel_tiles(kernels.compile_add(block=256))}
    tile = tiles[(256,)]
    assert tile.layout == default_blocked([256], 4) and "default blocked" in tile.origin
    warp, lane, reg = tile.owners()
    i = np.arange(256)
    assert np.array_equal(lane, i % 32) and np.array_equal(warp, (i // 32) % 4) and np.array_equal(reg, i // 128)
    params = dict(tile.parameters())
    assert params["threads_per_warp"] == "(32,)"
    assert tile.label == "line 9 · tt.make_range · 256 i32 · blocked 1 per thread, 32 lanes, 4 warps"
    assert ["lane bit 2 (lane 4)", "+(4)"] in bases_rows(tile.layout)


def test_layout_grid_writes_the_owner_in_each_cell_of_a_small_tile():
    import re

    from tilelab.compiler.layouts import mma_m16n8k16_accumulator

    tile = TileLayout(3, "tt.dot", (16, 16), "f32", mma_m16n8k16_accumulator([16, 16], [1, 1]), "test")
    cells = re.findall(r"<td [^>]*>([^<]*)</td>", grid_html(tile))
    assert len(cells) == 256 and cells[:4] == ["0:0:0", "0:0:1", "0:1:0", "0:1:1"]  # lane t: columns 2t, 2t+1
    assert cells[8 * 16] == "0:0:2"  # register bit 1: row 8
    big = TileLayout(3, "tt.load", (1024,), "f32", default_blocked([1024], 4), "test")
    grid = grid_html(big)
    assert grid.count("<tr>") == 1 + 32 and "warp 3" in grid and 'title="element (1023,): warp 3, lane 31' in grid
