"""Frontend output executed by the reference interpreter, against numpy on random inputs."""

import numpy as np
import pytest

from tilelab.compiler.frontend import build_module
from tilelab.compiler.ir.types import PointerType, f16, f32, i32

from . import kernels

interpreter = pytest.importorskip("tilelab.compiler.interpreter")
P = PointerType


def test_vector_add(rng):
    x, y = rng.standard_normal((2, 1000)).astype(np.float32)
    out = np.full(1000, np.nan, np.float32)
    m = build_module(kernels.add, {"x_ptr": P(f32), "y_ptr": P(f32), "out_ptr": P(f32), "n": i32}, {"BLOCK": 128})
    interpreter.run_kernel(m, (8, 1, 1), [x, y, out, 1000])
    np.testing.assert_allclose(out, x + y, rtol=1e-6)


def test_softmax_rows(rng):
    a = rng.standard_normal((4, 100)).astype(np.float32)
    out = np.full_like(a, np.nan)
    sig = {"out_ptr": P(f32), "in_ptr": P(f32), "stride": i32, "n_cols": i32}
    m = build_module(kernels.softmax, sig, {"BLOCK": 128})
    interpreter.run_kernel(m, (4, 1, 1), [out, a, 100, 100])
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), atol=1e-6)


def test_matmul_with_runtime_loop(rng):
    M, N, K = 48, 40, 72
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float16)
    sig = {"a_ptr": P(f16), "b_ptr": P(f16), "c_ptr": P(f16), "M": i32, "N": i32, "K": i32}
    m = build_module(kernels.matmul, sig, {"BM": 32, "BN": 32, "BK": 16})
    interpreter.run_kernel(m, (2, 2, 1), [a, b, c, M, N, K])
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=2e-2, atol=2e-2)
