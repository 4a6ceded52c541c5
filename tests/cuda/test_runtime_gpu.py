"""GPU runtime: do_bench with CUDA events, DLPack and host-tensor arguments on the cuda target."""

from __future__ import annotations

import numpy as np
import pytest

import tilelab
import tilelab.language as tl
from tilelab import testing
from tilelab.runtime import bench

pytestmark = pytest.mark.gpu


@tilelab.jit
def axpy(x, y, out, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, alpha * tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


class Exported:
    """An array seen only through DLPack."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_do_bench_times_kernels_with_events(rng, monkeypatch):
    import tilelab.cuda as tc

    n = 1 << 24
    x = tc.to_device(rng.standard_normal(n).astype(np.float32))
    out = tc.empty(n)
    used = []
    gpu_times = bench._gpu_times
    monkeypatch.setattr(bench, "_gpu_times", lambda *a: used.append(1) or gpu_times(*a))
    ms = testing.do_bench(lambda: axpy[(n // 1024,)](x, x, out, 2.0, n, BLOCK=1024), return_mode="median")
    assert used, "a CUDA launch should be timed with events"
    gbs = 3 * n * 4 / (ms * 1e-3) / 1e9
    assert 20 < gbs < 20_000, f"{gbs:.0f} GB/s is not a plausible bandwidth"
    np.testing.assert_allclose(out.numpy(), 3.0 * x.numpy(), rtol=1e-6)
    times = testing.do_bench(lambda: axpy[(n // 1024,)](x, x, out, 2.0, n, BLOCK=1024), return_mode="all")
    assert len(times) >= 1 and all(t > 0 for t in times)


def test_torch_cuda_tensors_through_dlpack(rng):
    torch = pytest.importorskip("torch")
    x, y = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    out = torch.full_like(tx, float("nan"))
    axpy[(4,)](Exported(tx), Exported(ty), Exported(out), 0.5, 1000, BLOCK=256)
    np.testing.assert_allclose(out.cpu().numpy(), 0.5 * x + y, rtol=1e-6)


def test_cupy_arrays_through_dlpack(rng):
    cp = pytest.importorskip("cupy")
    x, y = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    out = cp.full(1000, cp.nan, cp.float32)
    axpy[(4,)](Exported(cp.asarray(x)), Exported(cp.asarray(y)), Exported(out), -1.5, 1000, BLOCK=256)
    fused = 1e-6 * np.abs(1.5 * x).max()  # an fma (on by default, as Triton) skips the product's rounding
    np.testing.assert_allclose(cp.asnumpy(out), -1.5 * x + y, rtol=1e-6, atol=fused)


def test_cpu_tensors_are_copied_in_and_back(rng):
    torch = pytest.importorskip("torch")
    x, y = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    out = torch.full((1000,), float("nan"))
    axpy[(4,)](torch.from_numpy(x), Exported(y), out, 2.0, 1000, BLOCK=256, target="cuda")
    np.testing.assert_allclose(out.numpy(), 2.0 * x + y, rtol=1e-6)


def test_arrays_on_another_gpu_are_refused(rng):
    torch = pytest.importorskip("torch")
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    x = torch.ones(1000, device="cuda:1")
    with pytest.raises(Exception, match="argument 'x': an array on cuda:1 cannot be used by a CUDA launch"):
        axpy[(4,)](Exported(x), x.to("cuda:0"), x.to("cuda:0"), 1.0, 1000, BLOCK=256)
