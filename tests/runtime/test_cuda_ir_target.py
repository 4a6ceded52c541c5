"""The ``cuda-ir`` target: a launch compiled as for a GPU (the ``cuda`` pipeline) whose final tile IR the
interpreter runs, on numpy arrays, with no GPU."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.gpu_kernels import masked_matmul_kernel as matmul
from tilelab.errors import InterpreterError
from tilelab.runtime import LaunchError
from tilelab.runtime.errors import TargetUnavailable

from .kernels import add


def _matmul(rng, target, **options):
    m, n, k = 100, 72, 80  # tails in every dimension, three trips of the K loop
    a, b = rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    ck = matmul[(2, 2)](a, b, c, m, n, k, BM=64, BN=64, BK=32, target=target, **options)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)
    return ck, {op.name for op in ck.module.walk()}


def test_hopper_compile_runs_its_warpgroup_dot_and_pipeline(rng):
    """By default sm_90a: the dot becomes a wgmma over shared buffers that cp.async fills num_stages ahead."""
    ck, ops = _matmul(rng, "cuda-ir", num_warps=4, num_stages=3)
    assert ck.target == "cuda-ir" and ck.options.arch == "sm_90a" and ck.metadata["arch"] == "sm_90a"
    assert {"ttng.warp_group_dot", "ttg.async_copy_global_to_local", "ttg.local_alloc"} <= ops
    assert ck.metadata["shared"] > 0


def test_architecture_and_launch_options_reach_the_compile(rng):
    """``cuda-ir:sm_80``: mma.sync (no wgmma); ``num_stages=1``: no cp.async ring."""
    ck, ops = _matmul(rng, "cuda-ir:sm_80", num_warps=8, num_stages=1)
    assert ck.options.arch == "sm_80" and ck.options.num_warps == 8 and ck.options.num_stages == 1
    assert "tt.dot" in ops and "ttng.warp_group_dot" not in ops and "ttg.async_copy_global_to_local" not in ops


def test_specialization_comes_from_the_arguments(rng):
    """As a CUDA launch: a 16-byte aligned array and a multiple of 16 are promised divisible, others not."""
    x = rng.standard_normal(65).astype(np.float32)
    y, out = x.copy(), np.full(64, np.nan, np.float32)
    aligned = add[(1,)](x, y, out, 64, BLOCK=64, target="cuda-ir")
    np.testing.assert_array_equal(out, x[:64] + y[:64])
    out[:] = np.nan
    shifted = add[(1,)](x[1:], y[1:], out, 63, BLOCK=64, target="cuda-ir")  # 4 bytes past an aligned start
    np.testing.assert_array_equal(out[:63], x[1:64] + y[1:64])
    assert aligned.module.kernel.attrs["arg_divisibility"] == (16, 16, 16, 16)
    assert shifted.module.kernel.attrs["arg_divisibility"] == (1, 1, 16, 1)


def test_kernel_loaded_from_the_disk_cache_runs_its_parsed_ir(rng):
    """A cache hit parses the final IR back (layouts, shared buffers, async copies) and runs it the same."""
    matmul.forget()  # compiled by an earlier test, into another cache folder
    _matmul(rng, "cuda-ir")
    matmul.forget()
    ck, _ = _matmul(rng, "cuda-ir")
    assert ck.from_cache


def test_bad_arguments_are_named_as_on_the_interpreter(rng):
    x = rng.standard_normal(64).astype(np.float32)
    out = np.empty_like(x)
    for target in ("interpret", "cuda-ir"):
        with pytest.raises(LaunchError, match=r"add\(\): argument 'y': unsupported type list"):
            add[(1,)](x, [1.0, 2.0], out, 64, BLOCK=64, target=target)
        with pytest.raises(LaunchError, match=r"argument 'out': unsupported dtype complex64"):
            add[(1,)](x, x, np.zeros(64, np.complex64), 64, BLOCK=64, target=target)


def test_out_of_bounds_access_names_the_kernel_line(rng):
    x = rng.standard_normal(64).astype(np.float32)
    out = np.empty(32, np.float32)
    with pytest.raises(InterpreterError, match=r"kernels.py:\d+: out-of-bounds store"):
        add[(1,)](x, x, out, 64, BLOCK=64, target="cuda-ir")


def test_unknown_architecture_is_refused_by_name():
    x = np.zeros(16, np.float32)
    with pytest.raises(TargetUnavailable, match="unknown CUDA architecture 'gfx942' for target cuda-ir"):
        add[(1,)](x, x, x, 16, BLOCK=16, target="cuda-ir:gfx942")
