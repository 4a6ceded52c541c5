"""No stale results: what the compiled code depends on is in its key, and checked at launch.

Before, the key covered the sources of the kernel and its jit callees but not the globals
they read (``SCALE = 2.0`` / ``5.0`` in two scripts sharing a cache both printed 2.0, on the
CPU and the interpreter), nor a plain function passed as a constexpr beyond its bytecode
(``v * 2`` edited to ``v * 7`` stayed ``v * 2``), and a notebook helper ``@jit`` cell run
again kept the old helper.
"""

import linecache

import numpy as np
import pytest

from .helpers import run_script

SCALED = """
SCALE = {scale}

@tilelab.jit
def scaled(x, out, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(out + i, tl.load(x + i) * SCALE)

x = np.arange(16, dtype=np.float32)
out = np.zeros_like(x)
scaled[(1,)](x, out, BLOCK=16, target="{target}")
print("out", out[3])
"""


@pytest.mark.parametrize("target", ["cpu", "interpret"])
@pytest.mark.parametrize("wrap", ["{}", "tl.constexpr({})"])
def test_two_scripts_differing_in_a_global_share_a_cache(tmp_path, target, wrap):
    for scale in (2.0, 5.0):
        body = SCALED.format(scale=wrap.format(scale), target=target)
        result = run_script(body, tmp_path, {"TILELAB_TIERED": "0"})
        assert f"out {3 * scale}" in result.stdout, result.stdout + result.stderr[-2000:]


def test_constexpr_function_edited_in_its_constants(tmp_path):
    body = """
    def act(v):
        return v * {factor}

    @tilelab.jit
    def apply(x, out, F: tl.constexpr, BLOCK: tl.constexpr):
        i = tl.arange(0, BLOCK)
        tl.store(out + i, F(tl.load(x + i)))

    x = np.arange(16, dtype=np.float32)
    out = np.zeros_like(x)
    apply[(1,)](x, out, F=act, BLOCK=16, target="cpu")
    print("out", out[3])
    """
    for factor in (2, 7):
        result = run_script(body.format(factor=factor), tmp_path, {"TILELAB_TIERED": "0"})
        assert f"out {3.0 * factor}" in result.stdout, result.stdout + result.stderr[-2000:]


def _cell(namespace: dict, source: str, name: str) -> None:
    """Run ``source`` as a notebook cell does: its text in linecache under a cell file name."""
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    exec(compile(source, name, "exec"), namespace)


@pytest.mark.parametrize("target", ["cpu", "interpret"])
def test_global_changed_in_process_recompiles(target, rng):
    namespace: dict = {}
    _cell(namespace, "import tilelab\nimport tilelab.language as tl\nSCALE = 2.0\n", "<cell-g1>")
    _cell(namespace, SCALED_KERNEL, "<cell-g2>")
    x = rng.standard_normal(16).astype(np.float32)
    for scale in (2.0, 5.0, 5.0, -1.5):
        namespace["SCALE"] = scale
        out = np.zeros_like(x)
        namespace["scaled"][(1,)](x, out, BLOCK=16, target=target)
        np.testing.assert_allclose(out, x * np.float32(scale))


SCALED_KERNEL = """
@tilelab.jit
def scaled(x, out, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(out + i, tl.load(x + i) * SCALE)
"""


@pytest.mark.parametrize("target", ["cpu", "interpret"])
def test_notebook_helper_cell_run_again_is_used(target, rng):
    namespace: dict = {}
    helper = "import tilelab\nimport tilelab.language as tl\n@tilelab.jit\ndef helper(v):\n    return v {op} 1.0\n"
    _cell(namespace, helper.format(op="+"), "<cell-h1>")
    kernel = (
        "@tilelab.jit\ndef k(x, out, BLOCK: tl.constexpr):\n"
        "    i = tl.arange(0, BLOCK)\n    tl.store(out + i, helper(tl.load(x + i)))\n"
    )
    _cell(namespace, kernel, "<cell-h2>")
    x = rng.standard_normal(16).astype(np.float32)
    out = np.zeros_like(x)
    namespace["k"][(1,)](x, out, BLOCK=16, target=target)
    np.testing.assert_allclose(out, x + 1)
    _cell(namespace, helper.format(op="-"), "<cell-h3>")  # the helper's cell again, edited; not the kernel's
    namespace["k"][(1,)](x, out, BLOCK=16, target=target)
    np.testing.assert_allclose(out, x - 1)


OOB = """
@tilelab.jit
def oob(x, out, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(out + i, tl.load(x + i + 1000))

x = np.zeros(16, np.float32)
try:
    oob[(1,)](x, np.zeros_like(x), BLOCK=16, target="{target}", sanitize=True)
except Exception as e:
    print(str(e).splitlines()[0])
"""


@pytest.mark.parametrize("target", ["cpu", "interpret"])
def test_sanitizer_error_names_the_launching_file_and_line(tmp_path, target):
    """The same kernel text in two files shares a cache entry; each error names its own file and line."""
    first = run_script(OOB.format(target=target), tmp_path, {"TILELAB_TIERED": "0"})
    assert "script_" in first.stdout and ".py:14: out-of-bounds load" in first.stdout, first.stdout + first.stderr
    shifted = "\n\n\n# three lines further down, and another file\n" + OOB.format(target=target)
    second = run_script(shifted, tmp_path, {"TILELAB_TIERED": "0"})
    name = next(p.name for p in tmp_path.glob("script_*.py") if p.read_text().endswith(shifted))
    assert f"{name}:18: out-of-bounds load" in second.stdout, second.stdout + second.stderr[-2000:]
