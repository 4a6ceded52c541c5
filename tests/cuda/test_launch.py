"""Launching on a GPU: device arrays, numpy copies, torch tensors, scalars of every width."""

import numpy as np
import pytest

import tilelab
import tilelab.language as tl

pytestmark = pytest.mark.gpu


@tilelab.jit
def axpy_kernel(x, y, out, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, alpha * tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


def _inputs(rng, n=1000):
    return rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)


def test_device_arrays(rng):
    import tilelab.cuda as tc

    x, y = _inputs(rng)
    out = tc.to_device(np.full_like(x, np.nan))
    axpy_kernel[(4,)](tc.to_device(x), tc.to_device(y), out, 1.5, x.size, BLOCK=256, target="cuda")
    fused = 1e-6 * np.abs(1.5 * x).max()  # an fma (on by default, as Triton) skips the product's rounding
    np.testing.assert_allclose(out.numpy(), 1.5 * x + y, rtol=1e-6, atol=fused)


def test_numpy_arrays_are_copied_in_and_back(rng):
    x, y = _inputs(rng)
    out = np.full_like(x, np.nan)
    axpy_kernel[(4,)](x, y, out, -2.0, x.size, BLOCK=256, target="cuda")
    np.testing.assert_allclose(out, -2.0 * x + y, rtol=1e-6)


def test_torch_tensors(rng):
    torch = pytest.importorskip("torch")
    x, y = _inputs(rng)
    tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    out = torch.full_like(tx, float("nan"))
    axpy_kernel[(4,)](tx, ty, out, 0.5, x.size, BLOCK=256)
    np.testing.assert_allclose(out.cpu().numpy(), 0.5 * x + y, rtol=1e-6)


def test_metadata_reports_resources():
    ck = tilelab.compile(
        axpy_kernel,
        signature={"x": "*fp32", "y": "*fp32", "out": "*fp32", "alpha": "fp32", "n": "i32"},
        constants={"BLOCK": 1024},
        target="cuda",
        cache=False,
    )
    assert ck.metadata["registers"] > 0 and ck.metadata["spills"] == 0 and "ptx" in ck.asm
