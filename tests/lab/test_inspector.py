"""Widget state of the inspector: every tab, the diff, the filters, the source links, plug-in tabs."""

import ipywidgets as w
import pytest

from tests.lab.fake import FIRST_LINE, make_compiled
from tilelab.viz import Inspector, register_view, unregister_view


def _child(ins, title):
    return ins.tab.children[ins.tab_index(title)]


def test_tabs_and_show():
    ins = Inspector(make_compiled(), show="passes,coalescing")
    assert ins.titles[:8] == ["Source", "Passes", "LLVM IR", "PTX", "AMD ISA", "SASS", "Assembly", "Resources"]
    assert "AMD ISA" not in Inspector(make_compiled(), amd=None).titles
    assert {"coalescing", "shared memory", "layouts", "roofline"} <= set(ins.titles)
    assert ins.tab.selected_index == 1
    ins.open("llvm")
    assert ins.titles[ins.tab.selected_index] == "LLVM IR"
    with pytest.raises(ValueError, match="no inspector tab 'bogus'"):
        ins.open("bogus")


def test_source_tab_is_highlighted_and_numbered_from_first_line():
    value = _child(Inspector(make_compiled()), "Source").value
    assert f'id="src-{FIRST_LINE}"' in value and 'class="k"' in value  # pygments keyword span for `def`


def test_passes_tab_starts_on_first_changed_pass_with_marked_diff():
    ins = Inspector(make_compiled())
    p = ins.passes
    assert ins.passes.records[p.pass_list.value].name == "cse"
    assert "tl-del" in p.code.html.value and "muli" in p.code.html.value.split("tl-del")[1][:300]
    assert "changed the IR" in p.title.value
    p.pass_list.value = 0
    assert "tl-del" not in p.code.html.value and "tl-add" not in p.code.html.value


def test_hide_unchanged_and_search_filter_the_pass_list():
    p = Inspector(make_compiled()).passes
    assert len(p.pass_list.options) == 3
    p.hide.value = True
    assert [label.split()[1] for label, _ in p.pass_list.options] == ["cse"]
    p.hide.value = False
    p.search.value = "dce"
    assert [i for _, i in p.pass_list.options] == [2] and p.pass_list.value == 2


def test_choosing_a_source_line_marks_its_ir_lines():
    p = Inspector(make_compiled()).passes
    p.code.src_select.value = FIRST_LINE + 4
    chosen = p.code.code_select.value
    assert len(chosen) == 4
    assert all(p.code.lines[i].src_line == FIRST_LINE + 4 for i in chosen)
    assert p.code.html.value.count("tl-hl") == 4
    assert p.code.source_html.value.count("tl-hl") == 1


def test_choosing_an_ir_line_marks_its_source_line():
    p = Inspector(make_compiled()).passes
    index = next(i for i, c in enumerate(p.code.lines) if c.src_line == FIRST_LINE + 3)
    p.code.code_select.value = (index,)
    assert p.code.src_select.value == FIRST_LINE + 3
    assert f'data-no="{FIRST_LINE + 3}"' in p.code.source_html.value.split("tl-hl")[1][:40]
    p.pass_list.value = 2  # another pass keeps the chosen source line and re-links it
    assert all(p.code.lines[i].src_line == FIRST_LINE + 3 for i in p.code.code_select.value)


def test_llvm_tab_links_and_searches():
    ins = Inspector(make_compiled())
    pane_box = _child(ins, "LLVM IR")
    search, html = pane_box.children[0].children[0], pane_box.children[1]
    search.value = "mul i32"
    assert html.value.count("tl-match") == 1 and pane_box.children[0].children[1].value.startswith("1 match, first")
    src_select, code_select = pane_box.children[3].children
    src_select.value = FIRST_LINE + 1
    assert code_select.value == (1,)


def test_missing_stage_says_not_produced():
    assert "not produced for this target (cpu)" in _child(Inspector(make_compiled()), "Assembly").value


@pytest.mark.parametrize("title", ["PTX", "SASS"])
def test_gpu_tabs_without_a_gpu_compile_say_so(title):
    assert "no GPU compile of this kernel" in _child(Inspector(make_compiled()), title).value


def test_gpu_tabs_come_from_the_gpu_compile_beside_the_cpu_one():
    cpu, gpu = make_compiled(), make_compiled(target="cuda:sm_90")
    asked = []
    ins = Inspector(cpu, gpu=lambda arch: asked.append(arch) or make_compiled(target=f"cuda:{arch}"))
    assert asked == ["sm_90"] and isinstance(_child(ins, "PTX"), w.VBox)
    assert "runs on cpu" in ins.header.value and "from cuda:sm_90 " in ins.header.value
    assert ins.arch.options == ("sm_90", "sm_80", "sm_90a")
    ins.arch.value = "sm_80"
    assert asked[-1] == "sm_80" and "cuda:sm_80" in ins.header.value
    assert "GPU compile" in _child(ins, "Resources").value
    assert Inspector(gpu).arch.layout.display == "none"  # a CUDA run is its own GPU view


def test_cuda_target_shows_ptx_and_occupancy():
    ins = Inspector(make_compiled(target="cuda"))
    assert isinstance(_child(ins, "PTX"), w.VBox)
    assert "estimated occupancy" in _child(ins, "Resources").value


def test_no_snapshots_says_so():
    ck = make_compiled()
    ck.passes = []
    assert "snapshots=True" in Inspector(ck).passes.widget.value


def test_plugin_tab_planned_registered_and_broken():
    import sys

    registry = sys.modules["tilelab.viz.views"]  # the module (tilelab.viz.views is also a function's name)

    saved = dict(registry._VIEWS)
    try:
        unregister_view("roofline")
        assert "(coming)" in _child(Inspector(make_compiled()), "roofline").value
        register_view("roofline", lambda ck: w.HTML(f"roofline of {ck.name}"))
        register_view("extra", lambda ck: 1 / 0)
        ins = Inspector(make_compiled())
        assert _child(ins, "roofline").value == "roofline of add"
        assert "extra failed: ZeroDivisionError" in _child(ins, "extra").value
        unregister_view("extra")
        assert "extra" not in Inspector(make_compiled()).titles
    finally:
        registry._VIEWS.clear()
        registry._VIEWS.update(saved)


def test_passes_search_marks_diff_rows_and_source_lines():
    p = Inspector(make_compiled()).passes
    p.pass_list.value = next(i for _, i in p.pass_list.options if p.records[i].name == "cse")
    p.search.value = "load"
    rows = p.code.html.value.split('<div class="tl-line')
    hits = [r for r in rows if "tl-match" in r.split(">")[0]]
    assert hits and all("load" in r for r in hits)
    assert "first at line" in p.code.count.value
    assert p.code.source_html.value.count("tl-match") == 1  # the one source line with tl.load
    p.search.value = ""
    assert "tl-match" not in p.code.html.value
