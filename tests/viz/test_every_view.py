"""Every view draws every kernel of the suite compiled for the GPU (no GPU needed: the CUDA pipeline runs anywhere).

Each kernel is compiled once per target (sm_90: mma.sync with cp.async pipelines; sm_90a: wgmma; cuda-ir: the
sm_90a passes' IR, run on the interpreter, with no PTX) and
each inspector view is built as the notebook builds it: no exception, no "cannot draw" note, a picture
wherever the kernel has what the view shows (the memory line of its accesses, the ownership grid of its
tiles, the bank grids of its shared buffers, swizzled and not), and roofline bytes equal
to the analysis' loads plus stores, the same pipelined or not.
"""

import pytest

from tests.viz.suite import CASES, TARGETS, compile_case
from tilelab.compiler.analysis import count_flops_bytes
from tilelab.viz.plugins.coalescing import CoalescingTab
from tilelab.viz.plugins.layout_view import SHOWN_MAX, LayoutsTab, grid_rows
from tilelab.viz.plugins.roofline import RooflineTab, count_point
from tilelab.viz.plugins.shared_memory import SharedMemoryTab

PNG = b"\x89PNG"


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELAB_CACHE_DIR", str(tmp_path))


def _drawn(image) -> bool:
    return bytes(image.value).startswith(PNG) and len(image.value) > 2000


# sm_90a (and cuda-ir) differ from sm_90 where a kernel has a dot (wgmma instead of mma.sync): those run on all.
PAIRS = [(c, t) for c in CASES for t in TARGETS if t == TARGETS[0] or c.has_dot]


@pytest.mark.parametrize(("case", "target"), PAIRS, ids=[f"{c.name}-{t}" for c, t in PAIRS])
def test_every_view_draws(case, target):
    compiled = compile_case(case, target)
    coalescing = CoalescingTab(compiled)
    assert coalescing.rows and "cannot" not in coalescing.note.value, coalescing.note.value
    assert _drawn(coalescing.image)
    layouts = LayoutsTab(compiled)
    grid, _, _ = grid_rows(layouts.tiles[0])
    assert layouts.view.value.count("<td ") == min(grid.shape[0], SHOWN_MAX) * min(grid.shape[1], SHOWN_MAX)
    shared = SharedMemoryTab(compiled)
    if "ttg.local_alloc" in compiled.asm["tile"]:
        assert shared.buffers and shared.grid.value.count("<table class='tl-banks'>") == 2
    roofline = RooflineTab(compiled)
    assert _drawn(roofline.image) and "loads 0 " not in roofline.table.value


@pytest.mark.parametrize("target", TARGETS)
def test_roofline_bytes_are_loads_plus_stores_pipelined_or_not(target):
    by_name = {c.name: c for c in CASES}
    counted = []
    for name in ("matmul_f16", "matmul_f16_unpipelined"):
        compiled = compile_case(by_name[name], target)
        assert ("ttg.async_copy_global_to_local" in compiled.asm["tile"]) == (name == "matmul_f16")
        for args in ({}, {"K": 512, "M": 64, "N": 64}):
            point = count_point(compiled, (1,), args)
            cost = count_flops_bytes(compiled.module, (1,), args)
            assert cost.load_bytes > 0
            assert point.cost.bytes == cost.load_bytes + cost.store_bytes
            counted.append((name, tuple(args), cost.load_bytes, cost.store_bytes, cost.flops))
    pipelined, unpipelined = counted[:2], counted[2:]
    assert [c[2:] for c in pipelined] == [c[2:] for c in unpipelined]
    # 512 / 32 iterations of a 64x32 and a 32x64 f16 tile
    assert pipelined[1][2] == 16 * 2 * (64 * 32 * 2)
