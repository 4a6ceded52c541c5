"""The magics in a real IPython shell, with ``tilelab.compile`` replaced by a recorder returning a fake result.

The end-to-end runs with the real compiler are in test_magics_e2e.py.
"""

import ipywidgets as w
import numpy as np
import pytest

import tilelab
import tilelab.magics.magics as magics_mod
from tests.lab.fake import make_compiled
from tilelab.compiler.frontend.errors import CompilationError
from tilelab.magics.cell import CellError
from tilelab.magics.options import OptionError, parse_consts, parse_line, parse_signature, signature_from_args

CELL = """def add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs) + tl.load(y + offs))
"""
SIG = '--signature "x=*fp32, y=*fp32, out=*fp32, n=i32" --const BLOCK=128'


@pytest.fixture
def ip(shell, monkeypatch):
    shown, calls = [], []
    monkeypatch.setattr(magics_mod, "display", lambda obj, **kw: shown.append(obj))

    def fake_compile(kernel, **kwargs):
        calls.append((kernel, kwargs))
        if getattr(shell, "compile_error", None):
            raise shell.compile_error
        return make_compiled()

    monkeypatch.setattr(tilelab.runtime, "compile", fake_compile)
    shell.shown, shell.calls, shell.compile_error = shown, calls, None
    yield shell
    shell.user_ns.pop("add", None)


def test_parse_options():
    assert parse_signature(" x = *fp16 ,n=i64") == {"x": "*fp16", "n": "i64"}
    assert parse_consts(["A=1,B=(2, 3)", "C=relu", "D='x,y'"]) == {"A": 1, "B": (2, 3), "C": "relu", "D": "x,y"}
    ns = parse_line('--target cuda:sm_80 --num-warps 8 --show passes --run "k[(1,)](x)"')
    assert (ns.target, ns.num_warps, ns.show, ns.run) == ("cuda:sm_80", 8, "passes", "k[(1,)](x)")
    assert parse_line("--target amd:gfx942").target == "amd:gfx942"  # inspection only: the AMD ISA tab
    assert parse_line("--target hip:gfx942").target == "hip:gfx942"


@pytest.mark.parametrize(
    "line, message",
    [
        ("--target tpu", "unknown target 'tpu'"),
        ("--num-warps four", "invalid int value: 'four'"),
        ('--signature "x"', None),
        ("--bogus 1", "unrecognized arguments: --bogus"),
        ('--signature "x=*fp32', "No closing quotation"),
    ],
)
def test_bad_options_are_one_line_messages(line, message):
    with pytest.raises(OptionError) as info:
        parse_signature(parse_line(line).signature) if message is None else parse_line(line)
    assert "\n" not in str(info.value)
    assert (message or "expected NAME=VALUE, got 'x'") in str(info.value)


def test_signature_from_array_args(rng):
    ns = {"a": rng.random(int(rng.integers(1, 100))).astype(np.float16), "n": int(rng.integers(0, 2**31)), "s": 0.5}
    ns["big"] = 2**40
    assert signature_from_args("a, n s,big", ns) == {"a": "*f16", "n": "i32", "s": "fp32", "big": "i64"}
    ns["d"] = tilelab.TensorDescriptor.from_tensor(np.zeros((64, 32), np.float16), [16, 32])
    assert signature_from_args("d", ns) == {"d": "tensordesc<f16[16, 32]>"}
    with pytest.raises(OptionError, match="no variable named 'nope'"):
        signature_from_args("a,nope", ns)
    with pytest.raises(OptionError, match="'f' is a function"):
        signature_from_args("f", {"f": test_parse_options})


def test_cell_defines_a_jit_kernel_and_shows_the_inspector(ip):
    ip.run_cell_magic("tile_kernel", f"--target cpu {SIG} --show llvm", CELL)
    assert isinstance(ip.user_ns["add"], tilelab.JITFunction)
    (kernel, kwargs), (gpu_kernel, gpu_kwargs) = ip.calls  # the run's compile, then the GPU tabs' one
    assert kernel is ip.user_ns["add"] and kwargs["target"] == "cpu" and kwargs["snapshots"] is True
    assert kwargs["signature"]["out"] == "*fp32" and kwargs["constants"] == {"BLOCK": 128}
    assert gpu_kernel is kernel and gpu_kwargs["target"] == "cuda:sm_90"
    assert gpu_kwargs["signature"] == kwargs["signature"]
    (box,) = ip.shown
    tab = box.children[1]
    assert isinstance(tab, w.Tab) and tab.titles[tab.selected_index] == "LLVM IR"
    assert "tl.store(out + offs" in ip.user_ns["add"].src  # the compiler can read the cell's source back


def test_args_specialize_from_notebook_arrays(ip, rng):
    ip.user_ns.update(xs=rng.random(10).astype(np.float64), m=7)
    ip.run_cell_magic("tile_kernel", "--args xs,m --const BLOCK=16", "def k(xs, m, BLOCK: tl.constexpr):\n    pass\n")
    assert ip.calls[0][1]["signature"] == {"xs": "*f64", "m": "i32"}
    ip.user_ns.pop("k")


DESC_CELL = """def rows(src_desc, dst_desc, BM: tl.constexpr, BN: tl.constexpr):
    i = tl.program_id(0)
    dst_desc.store([i * BM, 0], src_desc.load([i * BM, 0]) * 2)
"""


def test_a_cell_compiles_and_launches_host_descriptors(rng):
    """``--args`` over notebook descriptors gives Triton's ``tensordesc`` types; the kernel then launches with them."""
    from IPython.testing.globalipapp import get_ipython

    shell = get_ipython()
    shell.run_line_magic("load_ext", "tilelab")
    src, dst = rng.standard_normal((20, 16)).astype(np.float32), np.zeros((20, 16), np.float32)
    make = tilelab.TensorDescriptor.from_tensor
    shell.user_ns.update(src_desc=make(src, [8, 16]), dst_desc=make(dst, [8, 16]))
    shell.run_cell_magic("tile_kernel", "--target cpu --args src_desc,dst_desc --const BM=8 --const BN=16", DESC_CELL)
    shell.user_ns["rows"][(3,)](shell.user_ns["src_desc"], shell.user_ns["dst_desc"], BM=8, BN=16)
    np.testing.assert_array_equal(dst, src * 2)
    shell.user_ns.pop("rows")


def test_compile_error_marks_the_cell_line(ip):
    ip.compile_error = CompilationError("incompatible shapes for +: [128] and [64]", "<cell>", 3, 4, "  tl.store")
    ip.compile_error.filename = ip.compile.cache(CELL, ip.execution_count, raw_code=CELL)  # the cell's own file
    with pytest.raises(CellError) as info:
        ip.run_cell_magic("tile_kernel", SIG, CELL)
    assert info.value.message == "line 3: incompatible shapes for +: [128] and [64]"
    assert info.value._render_traceback_() == []  # no traceback wall
    page = ip.shown[-1]["text/html"]
    marked = page.split('tl-line tl-hl"')[1][:30]
    assert 'data-no="3"' in marked and "incompatible shapes" in page


def test_syntax_error_and_missing_function_and_signature(ip):
    with pytest.raises(CellError, match="line 2: syntax error"):
        ip.run_cell_magic("tile_kernel", SIG, "def f(x):\n    return (\n")
    assert "tl-hl" in ip.shown[-1]["text/html"]
    with pytest.raises(CellError, match="defines no function"):
        ip.run_cell_magic("tile_kernel", SIG, "x = 1\n")
    with pytest.raises(CellError, match="needs --signature"):
        ip.run_cell_magic("tile_kernel", "--const BLOCK=1", CELL)
    assert ip.shown[-1]["text/plain"].startswith("%%tile_kernel needs --signature")


def test_launch_error_is_short(ip):
    ip.compile_error = tilelab.LaunchError("add(): no parameter named 'z'")
    with pytest.raises(CellError, match="no parameter named 'z'"):
        ip.run_cell_magic("tile_kernel", SIG, CELL)


def test_run_shows_outputs_and_time_above_the_full_width_inspector(ip, rng):
    ip.user_ns.update(np=np, a=rng.random(5).astype(np.float32), b=rng.random(5).astype(np.float32))
    ip.user_ns["c"] = np.empty(5, np.float32)
    ip.run_cell_magic("tile_kernel", f'{SIG} --run "np.add(a, b, out=c)"', CELL)
    (box,) = ip.shown
    panel, inspector = box.children[0].value, box.children[1]
    assert box.layout.width == "100%" and inspector.layout.width == "100%"
    np.testing.assert_allclose(ip.user_ns["c"], ip.user_ns["a"] + ip.user_ns["b"])
    assert "ms" in panel and "float32[5]" in panel and f"{ip.user_ns['c'][0]:.4f}".rstrip("0")[:5] in panel


def test_tile_inspect_reopens_the_last_compile(ip):
    ip.run_cell_magic("tile_kernel", SIG, CELL)
    ip.run_line_magic("tile_inspect", "add")
    assert len(ip.shown) == 2 and isinstance(ip.shown[-1], w.VBox)
    with pytest.raises(CellError, match="no compiled kernel named 'sub'"):
        ip.run_line_magic("tile_inspect", "sub")


def test_tile_bench_reports_median_ms(ip, rng):
    ip.user_ns.update(np=np, v=rng.random(1000))
    ip.run_line_magic("tile_bench", "np.sort(v)")
    text = ip.shown[-1]["text/plain"]
    assert text.startswith("np.sort(v): ") and text.endswith("ms (median)") and float(text.split()[1]) > 0
    with pytest.raises(CellError, match="give a launch expression"):
        ip.run_line_magic("tile_bench", "  ")


def test_run_binds_the_compiled_kernel_and_reports_launch_errors_shortly(ip):
    def launch(*args):
        raise tilelab.LaunchError("add(): argument 'x' expects an array of f32, got an array of float64")

    ip.user_ns["check"] = lambda k: (k.name == "add" and hasattr(k, "passes")) or launch()
    ip.run_cell_magic("tile_kernel", f'{SIG} --run "check(add)"', CELL)  # `add` is the compiled kernel there
    ip.user_ns["check"] = lambda k: launch()
    with pytest.raises(CellError, match="^--run: add\\(\\): argument 'x' expects"):
        ip.run_cell_magic("tile_kernel", f'{SIG} --run "check(add)"', CELL)
    with pytest.raises(CellError, match="--run: not a Python expression"):
        ip.run_cell_magic("tile_kernel", f'{SIG} --run "add[("', CELL)
