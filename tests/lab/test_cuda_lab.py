"""The CUDA target in the lab on a machine without a GPU: PTX, SASS and Resources, linked to the source.

These compile for real (no fake): PTX always comes from llvmlite; SASS and registers need ptxas
and nvdisasm, and those checks skip where the tools are missing.
"""

import random

import numpy as np
import pytest

import tilelab.magics.magics as magics_mod
from tilelab.cli import main
from tilelab.compiler.backends.cuda import find_tool
from tilelab.magics.cell import CellError
from tilelab.runtime import cuda_driver

CELL = """def vadd(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(x + offs, mask=mask)
    tl.store(out + offs, a * 2.0 + tl.load(y + offs, mask=mask), mask=mask)
"""
SIG = '--signature "x=*fp32, y=*fp32, out=*fp32, n=i32"'
needs_ptxas = pytest.mark.skipif(find_tool("ptxas") is None, reason="ptxas not found")
needs_sass = pytest.mark.skipif(find_tool("nvdisasm") is None and find_tool("cuobjdump") is None, reason="no nvdisasm")


@pytest.fixture
def ip(shell, monkeypatch):
    shown = []
    monkeypatch.setattr(magics_mod, "display", lambda obj, **kw: shown.append(obj))
    shell.shown = shown
    yield shell
    shell.user_ns.pop("vadd", None)


def _cuda_cell(ip, extra: str = ""):
    block, warps = random.choice([256, 512, 1024]), random.choice([2, 4, 8])
    ip.run_cell_magic("tile_kernel", f"--target cuda {SIG} --const BLOCK={block} --num-warps {warps} {extra}", CELL)
    magic = ip.magics_manager.registry["TileMagics"]
    return magic.last["vadd"], block, warps


def _tab(inspector_box, title):
    ins_tab = inspector_box.children[1]
    return ins_tab.children[list(ins_tab.titles).index(title)]


def test_ptx_tab_links_lines_to_the_cell(ip):
    compiled, _, warps = _cuda_cell(ip)
    ptx = _tab(ip.shown[-1], "PTX")
    search, pane = ptx.children[0].children[0], ptx.children[1]
    assert ".entry vadd" in compiled.asm["ptx"] and f".maxntid {32 * warps}" in compiled.asm["ptx"]
    src_select, code_select = ptx.children[3].children
    src_select.value = 4  # the cell's `a = tl.load(...)` line
    lines = [ptx_line.split("←")[0] for ptx_line, i in code_select.options if i in code_select.value]
    assert lines and any("ld.global" in t for t in lines)
    search.value = "st.global"
    assert "tl-match" in pane.value and code_select.value and src_select.value == 5


@needs_ptxas
def test_resources_tab_has_registers_and_occupancy(ip):
    compiled, _, warps = _cuda_cell(ip)
    html = _tab(ip.shown[-1], "Resources").value
    assert compiled.metadata["registers"] > 0
    assert f"<td>registers / thread</td><td>{compiled.metadata['registers']}</td>" in html
    assert f"<td>warps / program</td><td>{warps}</td>" in html
    assert "estimated occupancy" in html and "spilled bytes" in html and "shared memory" in html


@needs_ptxas
@needs_sass
def test_sass_tab_links_lines_to_the_cell(ip):
    compiled, _, _ = _cuda_cell(ip)
    sass = _tab(ip.shown[-1], "SASS")
    src_select, code_select = sass.children[3].children
    src_select.value = 5  # the store line
    chosen = [label for label, i in code_select.options if i in code_select.value]
    assert chosen and any("STG" in t for t in chosen)


@pytest.mark.skipif(cuda_driver.is_available(), reason="a GPU is present")
def test_run_without_gpu_says_so_and_still_shows_the_inspector(ip, rng):
    ip.user_ns.update(a=rng.random(100).astype(np.float32), b=rng.random(100).astype(np.float32))
    ip.user_ns["c"] = np.empty(100, np.float32)
    with pytest.raises(CellError, match="^--run: no GPU on this machine: vadd was compiled for inspection"):
        _cuda_cell(ip, '--run "vadd[(1,)](a, b, c, 100)"')
    assert any(hasattr(s, "children") for s in ip.shown)  # the inspector came out before the message
    assert "no GPU" in ip.shown[-1]["text/plain"]


def test_cli_compiles_ptx_without_gpu(tmp_path, capsys):
    src = tmp_path / "vadd.py"
    src.write_text("import tilelab\nimport tilelab.language as tl\n\n\n@tilelab.jit\n" + CELL)
    block = random.choice([128, 256, 512])
    argv = ["compile", f"{src}::vadd", "--target", "cuda", "--stage", "ptx", "--signature"]
    assert main(argv + ["x=*fp32, y=*fp32, out=*fp32, n=i32", "--const", f"BLOCK={block}"]) == 0
    out = capsys.readouterr().out
    assert ".entry vadd" in out and ".loc\t1 9 " in out  # line 9 of the file: the `a = tl.load` line


def test_cuda_ir_runs_the_gpu_passes_ir_without_a_gpu(ip, rng):
    """``--target cuda-ir``: compiled by every CUDA pass, run on the interpreter: values, and the inspector's IR."""
    a, b = rng.random(300).astype(np.float32), rng.random(300).astype(np.float32)
    ip.user_ns.update(a=a, b=b, c=np.full(300, np.nan, np.float32))
    ip.run_cell_magic("tile_kernel", f'--target cuda-ir {SIG} --const BLOCK=128 --run "vadd[(3,)](a, b, c, 300)"', CELL)
    np.testing.assert_allclose(ip.user_ns["c"], a * 2.0 + b, rtol=1e-6)
    compiled = ip.magics_manager.registry["TileMagics"].last["vadd"]
    assert compiled.target.startswith("cuda-ir") and "#blocked" in compiled.asm["tile"]  # the GPU layouts
    assert any(hasattr(s, "children") for s in ip.shown)
