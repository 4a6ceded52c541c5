"""Warm launches on a GPU: repeated launches with changing arrays and scalars stay correct."""

import numpy as np
import pytest

import tilelab
import tilelab.language as tl

pytestmark = pytest.mark.gpu


@tilelab.jit
def axpy_warm(x, y, out, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, alpha * tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


@pytest.mark.parametrize("kind", ["device", "torch"])
def test_repeated_launches_read_each_calls_arguments(rng, kind):
    import tilelab.cuda as tc

    if kind == "torch":
        torch = pytest.importorskip("torch")
        wrap, back = (lambda a: torch.from_numpy(a).cuda()), (lambda d: d.cpu().numpy())
    else:
        wrap, back = tc.to_device, (lambda d: d.numpy())
    for n in (1000, 777, 1024):
        x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
        alpha = float(rng.standard_normal())
        out = wrap(np.full_like(x, np.nan))
        axpy_warm[(tilelab.cdiv(n, 256),)](wrap(x), wrap(y), out, alpha, n, BLOCK=256)
        np.testing.assert_allclose(back(out), np.float32(alpha) * x + y, rtol=1e-5, atol=1e-6)
    assert axpy_warm.launches


def test_a_warm_launch_over_the_grid_limit_is_refused_before_the_driver(rng):
    """A warm launch checks the grid as a cold one does: a clear error naming the grid, then it still launches."""
    import tilelab.cuda as tc
    from tilelab.runtime.errors import LaunchError

    n = 1000
    x = tc.to_device(rng.standard_normal(n).astype(np.float32))
    out = tc.to_device(np.full(n, np.nan, np.float32))
    axpy_warm[(4,)](x, x, out, 2.0, n, BLOCK=256)
    axpy_warm[(4,)](x, x, out, 2.0, n, BLOCK=256)  # warm now
    with pytest.raises(LaunchError, match=r"grid\[1\] = 131072 is over the limit of 65535"):
        axpy_warm[(4, 1 << 17)](x, x, out, 2.0, n, BLOCK=256)  # grid y is limited to 65535
    axpy_warm[(4,)](x, x, out, 3.0, n, BLOCK=256)  # the kernel still launches afterwards
    np.testing.assert_allclose(out.numpy(), 3 * x.numpy() + x.numpy(), rtol=1e-6)
