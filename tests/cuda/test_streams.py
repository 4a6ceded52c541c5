"""Launches follow the array library's current stream, as Triton's follow torch's: a kernel given torch
tensors runs on ``torch.cuda.current_stream()``, so it is ordered after the work queued there before it,
and a CUDA graph captures it."""

import numpy as np
import pytest

import tilelab
import tilelab.language as tl
from tilelab.testing import do_bench

pytestmark = pytest.mark.gpu


@tilelab.jit
def axpy_stream(x, y, out, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, alpha * tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


def launch(x, y, out, alpha):
    n = x.numel()
    axpy_stream[(tilelab.cdiv(n, 1024),)](x, y, out, alpha, n, BLOCK=1024)


def test_a_launch_on_a_side_stream_runs_after_the_work_queued_there(rng):
    """On a non-blocking side stream: a long matmul, then a fill of ``x`` from it, then the kernel.
    On the legacy stream the kernel would read ``x`` before the fill lands (no ordering with a
    non-blocking stream); on the side stream it reads the filled values, cold launch and warm."""
    torch = pytest.importorskip("torch")
    side = torch.cuda.Stream()
    n = 1 << 22
    big = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    y = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).cuda()
    torch.cuda.synchronize()
    for value in (3.0, -2.0, 5.0):  # the first launch compiles and loads; the others are warm
        x = torch.zeros(n, device="cuda")
        out = torch.full((n,), float("nan"), device="cuda")
        torch.cuda.synchronize()
        with torch.cuda.stream(side):
            for _ in range(8):
                big = big @ big * 1e-3  # keeps the side stream busy for a while
            x.fill_(value)
            launch(x, y, out, 2.0)
        side.synchronize()
        np.testing.assert_allclose(out.cpu().numpy(), 2.0 * value + y.cpu().numpy(), rtol=1e-6)


def test_a_cuda_graph_captures_and_replays_a_launch(rng):
    """Captured on torch's capture stream (a launch on the legacy stream would fail the capture), then
    replayed over new contents of the same tensors."""
    torch = pytest.importorskip("torch")
    n = 5000
    x, y = (torch.from_numpy(rng.standard_normal(n).astype(np.float32)).cuda() for _ in range(2))
    out = torch.empty(n, device="cuda")
    launch(x, y, out, 0.5)  # compile and load before capturing
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        launch(x, y, out, 0.5)
    for _ in range(2):
        x.copy_(torch.from_numpy(rng.standard_normal(n).astype(np.float32)))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        np.testing.assert_allclose(out.cpu().numpy(), 0.5 * x.cpu().numpy() + y.cpu().numpy(), rtol=1e-6)


def test_do_bench_times_a_launch_on_the_current_side_stream():
    """Events on the launches' stream: a kernel on a side stream is inside its events, not timed as zero."""
    torch = pytest.importorskip("torch")
    n = 1 << 26
    x, y, out = (torch.ones(n, device="cuda") for _ in range(3))
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        ms = do_bench(lambda: launch(x, y, out, 1.0), return_mode="median")
    moved = 3 * 4 * n  # bytes read and written
    assert moved / (ms * 1e-3) < 10e12  # under any GPU's bandwidth: the kernel's time was measured
