"""Launches on the interpret target, checked against numpy on random inputs."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tilelab

from .kernels import add, add_twice, scale


@pytest.mark.parametrize("n, block", [(1, 16), (1000, 128), (4096, 1024), (33, 32)])
def test_vector_add(n, block, rng, poison):
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = poison(np.empty_like(x))
    add[(tilelab.cdiv(n, block),)](x, y, out, n, BLOCK=block, target="interpret")
    np.testing.assert_allclose(out, x + y, rtol=1e-6)


def test_grid_lambda_sees_constexprs(rng, poison):
    n = 777
    x, y = rng.standard_normal((2, n)).astype(np.float32)
    out = poison(np.empty_like(x))
    add[lambda meta: (tilelab.cdiv(meta["n"], meta["BLOCK"]),)](x, y, out, n, BLOCK=64, target="interpret")
    np.testing.assert_allclose(out, x + y, rtol=1e-6)


def test_non_contiguous_input(rng, poison):
    n = 300
    base = rng.standard_normal(3 * n).astype(np.float32)
    out = poison(np.empty(n, np.float32))
    scale[(tilelab.cdiv(n, 128),)](base[1:], out, n, 0.5, 3, BLOCK=128, target="interpret")
    np.testing.assert_allclose(out, base[1::3][:n] * np.float32(0.5), rtol=1e-6)


def test_called_jit_function(rng, poison):
    n = 200
    x = rng.standard_normal(n).astype(np.float32)
    out = poison(np.empty_like(x))
    add_twice[(tilelab.cdiv(n, 64),)](x, out, n, BLOCK=64, target="interpret")
    np.testing.assert_allclose(out, 2 * x, rtol=1e-6)


def test_bfloat16_arrays(rng, poison):
    n = 256
    x = rng.standard_normal(n).astype(ml_dtypes.bfloat16)
    y = rng.standard_normal(n).astype(ml_dtypes.bfloat16)
    out = poison(np.empty_like(x))
    ck = add[(2,)](x, y, out, n, BLOCK=128, target="interpret")
    assert ck.signature["x"] == "*bf16"
    expected = (x.astype(np.float32) + y.astype(np.float32)).astype(ml_dtypes.bfloat16)
    np.testing.assert_allclose(out.astype(np.float32), expected.astype(np.float32), rtol=1e-2)


def test_torch_cpu_tensors(rng):
    torch = pytest.importorskip("torch")
    n = 500
    x = torch.from_numpy(rng.standard_normal(n).astype(np.float32))
    y = torch.from_numpy(rng.standard_normal(n).astype(np.float32))
    out = torch.full_like(x, float("nan"))
    ck = add[(tilelab.cdiv(n, 128),)](x, y, out, n, BLOCK=128, target="interpret")
    assert ck.signature["x"] == "*f32"
    np.testing.assert_allclose(out.numpy(), (x + y).numpy(), rtol=1e-6)


def test_numpy_arrays_run_on_the_default_host_target(rng, poison):
    from tilelab.runtime.targets import default_host_target

    n = 1000
    x, y = rng.standard_normal((2, n)).astype(np.float32)
    out = poison(np.empty_like(x))
    ck = add[(tilelab.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    assert ck.target == default_host_target()
    np.testing.assert_allclose(out, x + y, rtol=1e-6)


@pytest.mark.parametrize("target", ["interpret", "cpu"])
def test_disk_cache_hit_launches_correctly(target, rng, poison):
    pytest.importorskip("tilelab.runtime.cpu_target")
    n = 300
    x, y = rng.standard_normal((2, n)).astype(np.float32)
    first = tilelab.jit(add.fn)[(3,)](x, y, poison(np.empty_like(x)), n, BLOCK=128, target=target)
    out = poison(np.empty_like(x))
    second = tilelab.jit(add.fn)[(3,)](x, y, out, n, BLOCK=128, target=target)
    assert second.from_cache and not first.from_cache
    assert second.asm.keys() == first.asm.keys()
    np.testing.assert_allclose(out, x + y, rtol=1e-6)


def test_compilation_error_names_the_line_and_the_launch(rng):
    from tilelab.compiler.frontend import CompilationError

    from .kernels import bad_shapes

    x = rng.standard_normal(64).astype(np.float32)
    with pytest.raises(CompilationError) as info:
        bad_shapes[(1,)](x, x.copy(), BLOCK=16, target="interpret")
    text = str(info.value)
    assert "kernels.py:" in text and "a + b" in text
    assert text.endswith("(launched with x: *f32, out: *f32)")


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_sanitize_reports_out_of_bounds(how, rng, monkeypatch):
    from tilelab.compiler.interpreter import KernelRuntimeError

    from .kernels import copy_all

    x = rng.standard_normal(100).astype(np.float32)
    kwargs = {"sanitize": True} if how == "argument" else {}
    if how == "environment":
        monkeypatch.setenv("TILELAB_SANITIZE", "1")
    with pytest.raises(KernelRuntimeError, match=r"out-of-bounds"):
        copy_all[(1,)](x, np.empty_like(x), 100, BLOCK=128, target="interpret", **kwargs)


def test_triton_only_launch_options_are_accepted(rng, poison):
    n = 64
    x, y = rng.standard_normal((2, n)).astype(np.float32)
    out = poison(np.empty_like(x))
    add[(1,)](x, y, out, n, BLOCK=64, num_ctas=1, enable_fp_fusion=False, maxnreg=None, target="interpret")
    np.testing.assert_allclose(out, x + y, rtol=1e-6)
