"""``tilelab.testing``: do_bench, assert_close, perf_report."""

from __future__ import annotations

import sys
import time
from types import ModuleType, SimpleNamespace

import matplotlib
import numpy as np
import pytest

from tilelab import testing
from tilelab.runtime import bench

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


def test_do_bench_rejects_an_unknown_device():
    with pytest.raises(ValueError, match="device must be 'cpu', 'cuda' or None, got 'gpu'"):
        testing.do_bench(lambda: None, device="gpu")


class FakeDriver:
    """Stands in for the CUDA driver: events read the host clock, memsets are counted."""

    def __init__(self, monkeypatch):
        from tilelab.runtime import cuda_driver

        self.flushes = 0
        self.streams = set()  # of every event record and flush
        driver = self

        class Event:
            def record(self, stream=0):
                driver.streams.add(stream)
                self.at = time.perf_counter()

            @staticmethod
            def elapsed_ms(start, end):
                return (end.at - start.at) * 1e3

        def memset_d8(ptr, value, nbytes, stream=0):
            assert nbytes == testing.FLUSH_BYTES
            driver.streams.add(stream)
            driver.flushes += 1

        monkeypatch.setattr(cuda_driver, "Event", Event)
        monkeypatch.setattr(cuda_driver, "memset_d8", memset_d8)
        monkeypatch.setattr(cuda_driver, "mem_alloc", lambda nbytes: 0x1000)
        monkeypatch.setattr(cuda_driver, "synchronize", lambda: None)
        monkeypatch.setattr(bench, "_gpu_cache", {})


def test_gpu_timing_uses_events_and_flushes_l2(monkeypatch):
    fake = FakeDriver(monkeypatch)
    calls = []

    def work():
        calls.append(1)
        time.sleep(0.001)

    times = testing.do_bench(work, warmup=3, rep=10, device="cuda", return_mode="all")
    assert all(0.9 < t < 30 for t in times) and 1 <= len(times) <= 10
    assert fake.flushes == 5 + len(times)  # once per estimating run, once per timed run
    assert len(calls) > 1 + 5 + len(times)  # first call, estimate, warm-up, timed runs


def test_gpu_timing_records_and_flushes_on_torchs_current_stream(monkeypatch):
    """A launch over torch tensors goes on torch's current stream: the events and the flush go there too."""
    fake = FakeDriver(monkeypatch)
    torch = ModuleType("torch")
    torch.cuda = SimpleNamespace(
        is_initialized=lambda: True, current_stream=lambda device: SimpleNamespace(cuda_stream=77)
    )
    monkeypatch.setitem(sys.modules, "torch", torch)
    testing.do_bench(lambda: None, warmup=1, rep=1, device="cuda")
    assert fake.streams == {77}
    torch.cuda.is_initialized = lambda: False  # torch imported, CUDA never set up by it: the legacy stream
    fake.streams.clear()
    testing.do_bench(lambda: None, warmup=1, rep=1, device="cuda")
    assert fake.streams == {0}


def test_automatic_device_follows_cuda_launches(monkeypatch):
    from tilelab.runtime import cuda_driver
    from tilelab.runtime.cuda_target import CudaLauncher

    monkeypatch.setattr(bench, "_gpu_times", lambda fn, warmup, rep, grads: [7.0, 9.0])
    monkeypatch.setitem(cuda_driver._state, "context", None)
    assert testing.do_bench(lambda: time.sleep(1e-4), rep=1) < 5  # no CUDA context: host timing
    monkeypatch.setitem(cuda_driver._state, "context", object())
    monkeypatch.setattr(CudaLauncher, "launches", 0)
    assert testing.do_bench(lambda: time.sleep(1e-4), rep=1) < 5  # a context, but nothing launched on CUDA
    monkeypatch.setattr(CudaLauncher, "launches", 3)
    assert testing.do_bench(lambda: None, return_mode="median") == 8.0
    assert testing.do_bench(lambda: None, device="cpu", rep=1) < 5


def test_grad_to_none_clears_gradients_before_each_timed_run(monkeypatch):
    FakeDriver(monkeypatch)

    class Param:
        grad = "stale"

    p, seen = Param(), []
    testing.do_bench(lambda: seen.append(p.grad), warmup=1, rep=1, grad_to_none=[p], device="cuda")
    assert seen[-1] is None and seen[0] == "stale"


def test_gpu_timing_without_a_gpu_says_so():
    from tilelab.runtime import cuda_driver

    if cuda_driver.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(cuda_driver.CudaError, match="no CUDA device is available"):
        testing.do_bench(lambda: None, device="cuda")
