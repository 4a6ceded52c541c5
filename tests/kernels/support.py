"""Helpers shared by the kernel suite: grid sizes and error measures with dtype-fitting tolerances."""

from __future__ import annotations

import numpy as np

# Relative norm error a dot product may show. f32 inputs default to tf32 (Triton's
# input_precision="tf32": 10-bit mantissa products) on every backend; "ieee" asks for full
# f32 products. f16/bf16 inputs are exact products accumulated in f32.
DOT_TOL = {
    ("interpret", "f32"): 2e-3,
    ("cpu", "f32"): 2e-3,
    ("cuda", "f32"): 2e-3,
    ("interpret", "ieee"): 1e-5,
    ("cpu", "ieee"): 1e-5,
    ("cuda", "ieee"): 1e-5,
    ("interpret", "f16"): 2e-3,
    ("cpu", "f16"): 2e-3,
    ("cuda", "f16"): 2e-3,
}
DOT_TOL.update({("cuda-ir", kind): tol for (backend, kind), tol in list(DOT_TOL.items()) if backend == "cuda"})


def cdiv(a: int, b: int) -> int:
    """Ceiling division: how many blocks of ``b`` cover ``a`` elements."""
    return (a + b - 1) // b


def rel_norm_error(got: np.ndarray, ref: np.ndarray) -> float:
    """``||got - ref|| / ||ref||`` in float64 (NaN when ``got`` has a NaN, so poison shows)."""
    got, ref = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))


def assert_rel_norm(got: np.ndarray, ref: np.ndarray, tol: float) -> None:
    """Fail unless shapes match, nothing is NaN and the relative norm error is within ``tol``."""
    assert got.shape == ref.shape, f"shape {got.shape} != {ref.shape}"
    assert not np.isnan(np.asarray(got, dtype=np.float64)).any(), "output has NaN (unwritten elements?)"
    err = rel_norm_error(got, ref)
    assert err <= tol, f"relative norm error {err:.3g} > {tol:.3g}"
