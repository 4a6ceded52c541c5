"""The "AMD ISA" tab beside PTX: compiled for amd:gfx942 only when opened; registers beside PTX's."""

import html
import re
from pathlib import Path

import pytest

import tilelab
from tests.viz import kernels
from tilelab.viz import Inspector
from tilelab.viz.gpu import gpu_compiler
from tilelab.viz.plugins import figures
from tilelab.viz.report import report_html

SIGNATURE = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32"}
CONSTANTS = {"BLOCK": 1024}


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELAB_CACHE_DIR", str(tmp_path))


def _html(widget) -> str:
    if hasattr(widget, "value") and isinstance(widget.value, str):
        return widget.value
    return "".join(_html(c) for c in getattr(widget, "children", ()))


def _counting_compiler():
    """``gpu_compiler`` of ``kernels.add`` that records the archs it was asked for."""
    inner = gpu_compiler(kernels.add, SIGNATURE, CONSTANTS)
    asked = []

    def compile_for(arch):
        asked.append(arch)
        return inner(arch)

    return compile_for, asked


def _cpu_add():
    return tilelab.compile(kernels.add, signature=SIGNATURE, constants=CONSTANTS, target="cpu")


def test_amd_tab_sits_beside_ptx_and_compiles_only_when_opened():
    gpu, asked = _counting_compiler()
    ins = Inspector(_cpu_add(), gpu=gpu)
    figures.watch_tabs(ins.tab)
    assert ins.titles[ins.titles.index("PTX") + 1] == "AMD ISA"
    pane = ins.tab.children[ins.tab_index("AMD ISA")]
    assert "gfx942" not in asked and pane._tl_lazy.built is False  # the normal inspector never compiles for AMD
    assert "AMD compile" not in ins.tab.children[ins.tab_index("Resources")].value
    ins.open("amd")
    assert asked.count("gfx942") == 1 and pane._tl_lazy.built
    text = html.unescape(re.sub(r"<[^>]+>", "", _html(pane)))
    assert "global_load_dword" in text and "v_add_f32" in text and "s_endpgm" in text
    assert 'class="n' in _html(pane) or 'class="k' in _html(pane)  # highlighted (pygments' GAS lexer)
    note = _html(pane.children[0])
    vgprs = ins.gpu.amd().metadata["vgprs"]
    assert f"amd:gfx942: {vgprs} VGPRs / lane" in note and "cuda:sm_90:" in note and "inspection only" in note
    resources = ins.tab.children[ins.tab_index("Resources")].value
    assert "AMD compile" in resources and "VGPRs / lane" in resources and "SGPRs / wavefront" in resources


def test_amd_tab_links_isa_lines_to_source_lines():
    gpu, _ = _counting_compiler()
    ins = Inspector(_cpu_add(), gpu=gpu)
    ins.open("AMD ISA")
    ins.tab.children[ins.tab_index("AMD ISA")]._tl_lazy.render()
    amd = ins.gpu.amd()
    from tilelab.viz.models import code_lines

    lines = code_lines(amd.asm["amdgcn"], "amdgcn")
    loads = [c.src_line for c in lines if "global_load_dword" in c.text]
    assert loads and all(s is not None and s > 0 for s in loads)


def test_amd_tab_says_why_when_the_kernel_cannot_compile_for_amd():
    def failing(arch):
        if arch.startswith("gfx"):
            raise tilelab.CompilationError("math function tanh (f32) is not supported", "k.py", 3)
        return gpu_compiler(kernels.add, SIGNATURE, CONSTANTS)(arch)

    ins = Inspector(_cpu_add(), gpu=failing)
    ins.open("AMD ISA")
    ins.tab.children[ins.tab_index("AMD ISA")]._tl_lazy.render()
    assert "no AMD compile of this kernel" in _html(ins.tab.children[ins.tab_index("AMD ISA")])
    assert "tanh (f32) is not supported" in _html(ins.tab.children[ins.tab_index("AMD ISA")])


def test_a_kernel_compiled_for_amd_shows_its_own_isa_at_once():
    ck = tilelab.compile(kernels.add, signature=SIGNATURE, constants=CONSTANTS, target="amd:gfx942")
    ins = Inspector(ck)
    assert "compiled for amd:gfx942 (inspection only: no AMD runtime)" in ins.header.value
    body = _html(ins.tab.children[ins.tab_index("AMD ISA")])
    assert "v_add_f32" in html.unescape(re.sub(r"<[^>]+>", "", body))
    assert "VGPRs / lane" in ins.tab.children[ins.tab_index("Resources")].value


def test_report_has_the_amd_section_only_when_asked():
    gpu, asked = _counting_compiler()
    ck = _cpu_add()
    assert "AMD ISA" not in report_html(ck, gpu=gpu) and "gfx942" not in asked
    page = report_html(ck, gpu=gpu, amd="gfx942")
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert 'id="amdgcn"' in page and "v_add_f32" in text and "AMD compile: amd:gfx942" in page


def test_cli_prints_amd_isa_and_writes_the_amd_section(tmp_path, capsys):
    from tilelab.cli import main

    example = Path(__file__).resolve().parents[2] / "examples" / "add.py"
    common = [f"{example}::add", "--signature", "x=*fp32, y=*fp32, out=*fp32, n=i32", "--const", "BLOCK=1024"]
    assert main(["compile", *common, "--stage", "amdgcn"]) == 0
    out = capsys.readouterr().out
    assert ".amdgcn_target" in out and "v_add_f32" in out
    assert main(["report", *common, "--amd", "gfx942", "-o", str(tmp_path / "add.html")]) == 0
    assert "v_add_f32" in html.unescape(re.sub(r"<[^>]+>", "", (tmp_path / "add.html").read_text()))
