"""Every analysis view is an inspector tab (drawn when opened) and a report section with its figures."""

import numpy as np
import pytest

import tilelab.viz.plugins  # noqa: F401  (registers the views)
from tests.viz import kernels
from tilelab.viz import Inspector
from tilelab.viz.plugins import figures
from tilelab.viz.report import report_html

VIEWS = ["coalescing", "shared memory", "layouts", "roofline"]
PNG = b"\x89PNG"


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELAB_CACHE_DIR", str(tmp_path))


def _images(widget):
    import ipywidgets as w

    if isinstance(widget, w.Image):
        return [widget]
    return [i for c in getattr(widget, "children", ()) for i in _images(c)]


def _html(widget) -> str:
    import ipywidgets as w

    if isinstance(widget, w.HTML):
        return widget.value
    return "".join(_html(c) for c in getattr(widget, "children", ()))


# what each view draws once opened: a PNG (matplotlib) or an HTML grid
DRAWN = {"coalescing": "png", "roofline": "png", "layouts": "tl-grid", "shared memory": "tl-banks"}


def test_tabs_draw_lazily_when_opened():
    ins = Inspector(kernels.compile_matmul(), gpu=kernels.compile_matmul(target="cuda:sm_90"))
    figures.watch_tabs(ins.tab)
    for name in VIEWS:
        pane = ins.tab.children[ins.tab_index(name)]
        assert pane._tl_lazy.built is False and not _images(pane) and DRAWN[name] not in _html(pane)
        ins.open(name)
        assert pane._tl_lazy.built
        if DRAWN[name] == "png":
            assert _images(pane) and all(bytes(i.value).startswith(PNG) for i in _images(pane))
        else:
            assert DRAWN[name] in _html(pane)


def test_shared_memory_toggle_recomputes_without_swizzle():
    from tilelab.viz.plugins.shared_memory import SharedMemoryTab

    tab = SharedMemoryTab(kernels.compile_matmul())
    swizzled = tab.table.value
    tab.swizzle.value = False
    assert "1/1/1" in tab.table.value and "1/1/1" not in swizzled


def test_coalescing_tab_retraces_the_chosen_program(rng):
    from tilelab.viz.plugins.coalescing import CoalescingTab
    from tilelab.viz.plugins.launch import set_launch

    ck = kernels.compile_add(block=128, n_divisible=False)
    n = 128 + int(rng.integers(1, 100))
    set_launch(ck, (2,), *(rng.standard_normal(256).astype(np.float32) for _ in range(3)), n)
    tab = CoalescingTab(ck)
    assert "UNCOALESCED" not in tab.table.value and len(tab.picker.options) == 3
    tab.program[0].value = 1
    assert "program (1, 0, 0)" in tab.note.value and bytes(tab.image.value).startswith(PNG)
    tab.program[0].value = 5
    assert "cannot trace program (5, 0, 0)" in tab.note.value


def test_report_embeds_every_view_figure():
    page = report_html(kernels.compile_matmul(), gpu=kernels.compile_matmul(target="cuda:sm_90"))
    for name in VIEWS:
        section = page.split(f'<section id="{name.replace(" ", "-")}">')[1].split("</section>")[0]
        assert ('src="data:image/png;base64,' if DRAWN[name] == "png" else DRAWN[name]) in section, name
    assert "buffer 0" in page and "UNCOALESCED" not in page and "tl-vtable" in page
