"""``tilelab.testing``: do_bench, assert_close, perf_report."""

from __future__ import annotations

import time

import matplotlib
import numpy as np
import pytest

from tilelab import testing

matplotlib.use("Agg")


def test_do_bench_measures_milliseconds():
    ms = testing.do_bench(lambda: time.sleep(0.002), warmup=2, rep=20)
    assert 1.5 < ms < 50
    low, mid, high = testing.do_bench(lambda: None, warmup=1, rep=2, quantiles=[0.2, 0.5, 0.8])
    assert 0 <= low <= mid <= high
    assert isinstance(testing.do_bench(lambda: None, rep=1, return_mode="all"), list)
    with pytest.raises(ValueError, match="return_mode must be one of"):
        testing.do_bench(lambda: None, return_mode="avg")


def test_assert_close(rng):
    a = rng.standard_normal(100).astype(np.float32)
    testing.assert_close(a + 1e-7, a)
    with pytest.raises(AssertionError):
        testing.assert_close(a + 1e-2, a)
    testing.assert_close(a.astype(np.float16), a, atol=1e-2, rtol=1e-2)
    with pytest.raises(AssertionError):
        testing.assert_close(np.arange(4), np.arange(4) + 1)


def bench_spec(**kw):
    return testing.Benchmark(
        x_names=["n"],
        x_vals=[8, 16],
        line_arg="provider",
        line_vals=["a", "b"],
        line_names=["A", "B"],
        plot_name="demo",
        ylabel="GB/s",
        args={"scale": 2},
        **kw,
    )


def test_perf_report_prints_a_table(capsys, tmp_path):
    @testing.perf_report(bench_spec())
    def bench(n, provider, scale):
        return float(n * scale) if provider == "a" else (1.0, 0.5, 2.0)

    rows = bench.run(print_data=True, save_path=str(tmp_path), return_df=True)
    text = capsys.readouterr().out
    assert text.splitlines()[0] == "demo:"
    assert text.split("\n")[2].split() == ["8", "16", "1"]
    assert rows == [{"n": 8, "A": 16.0, "B": 1.0}, {"n": 16, "A": 32.0, "B": 1.0}]
    assert (tmp_path / "demo.png").stat().st_size > 0
