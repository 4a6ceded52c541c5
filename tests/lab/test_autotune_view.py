"""Autotuning you can watch: the text line in plain Python, the progress bar and summary in a notebook."""

import importlib

import numpy as np
import pytest

import tilelab
import tilelab.language as tl
from tilelab.viz.autotune_view import AutotuneProgress, summary_rows, times_figure

autotune = importlib.import_module("tilelab.runtime.autotune")  # the module (the package exports the decorator)


@tilelab.jit
def scale(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs, mask=offs < n) * 2.0, mask=offs < n)


def _tuned(blocks, fake_ms):
    configs = [tilelab.Config({"BLOCK": b}) for b in blocks]

    def bench(fn):
        fn()
        return fake_ms.pop(0)

    return tilelab.autotune(configs, key=["n"], do_bench=bench)(scale)


def _launch(rng, kernel, n=1000):
    x = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    kernel[lambda meta: (tilelab.cdiv(n, meta["BLOCK"]),)](x, out, n, target="cpu")
    np.testing.assert_allclose(out, 2 * x)


def test_plain_python_prints_one_progress_line(capsys, monkeypatch, rng):
    monkeypatch.setattr(autotune, "PROGRESS", [])
    kernel = _tuned([64, 128, 256], [0.3, 0.1, 0.2])
    _launch(rng, kernel)
    err = capsys.readouterr().err
    assert "autotune scale: 2/3 BLOCK: 128" in err and "benchmark" in err
    assert err.rstrip().split("\r")[-1].startswith("autotune scale: best BLOCK: 128")


def test_a_failing_config_is_skipped_with_its_reason(monkeypatch, rng):
    monkeypatch.setattr(autotune, "PROGRESS", [lambda *a: None])
    kernel = _tuned([64, 100, 128], [0.2, 0.1])  # BLOCK=100: tl.arange needs a power of two
    _launch(rng, kernel)
    (failed,) = kernel.failures
    assert failed.kwargs == {"BLOCK": 100} and "power of" in kernel.failures[failed]
    rows = summary_rows(kernel)
    assert [r[3] for r in rows][:2] == ["winner", ""] and rows[0][0].startswith("BLOCK: 128,")
    assert rows[-1][3].startswith("failed: ") and rows[-1][1] == "-"
    assert len(times_figure(kernel).axes[0].patches) == 2


def test_notebook_listener_shows_a_bar_then_the_table_and_chart(monkeypatch, rng):
    import ipywidgets as w

    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, **kw: shown.append(obj))
    listener = AutotuneProgress()
    monkeypatch.setattr(autotune, "PROGRESS", [listener])
    kernel = _tuned([64, 128], [0.2, 0.1])
    _launch(rng, kernel)
    (box,) = shown
    bar, label = box.children[0].children
    assert isinstance(bar, w.IntProgress) and bar.value == bar.max == 4 and "best: BLOCK: 128" in label.value
    table, chart = box.children[1:]
    assert "winner" in table.value and bytes(chart.value).startswith(b"\x89PNG")


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELAB_CACHE_DIR", str(tmp_path))
