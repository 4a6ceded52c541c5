"""Round trips of IR built by the frontend, and the common passes on it, checked on the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from tilelab.compiler.frontend import build_module
from tilelab.compiler.interpreter import run_kernel
from tilelab.compiler.ir import print_module, verify
from tilelab.compiler.ir.parser import parse_module
from tilelab.compiler.ir.types import PointerType, f32, i32
from tilelab.compiler.passes.manager import PassManager
from tilelab.compiler.passes.pipeline import PIPELINES

from . import frontend_kernels as kernels

P = PointerType(f32)
ROWWISE = (kernels.rowwise, {"x_ptr": P, "out_ptr": P, "n": i32, "stride": i32}, {"BLOCK": 64})
MATMUL = (
    kernels.matmul,
    {"a_ptr": P, "b_ptr": P, "c_ptr": P, "M": i32, "N": i32, "K": i32},
    {"BM": 16, "BN": 16, "BK": 16},
)


def _build(case):
    fn, sig, consts = case
    return build_module(fn, signature=sig, constants=consts)


@pytest.mark.parametrize("case", [ROWWISE, MATMUL], ids=["rowwise", "matmul"])
@pytest.mark.parametrize("locs", [True, False])
def test_frontend_ir_round_trips(case, locs):
    module = _build(case)
    text = print_module(module, locs=locs)
    parsed = parse_module(text)
    verify(parsed)
    assert print_module(parsed, locs=locs) == text
    assert parsed.kernel.sym_name == module.kernel.sym_name


@pytest.mark.parametrize("target", ["cpu", "cuda"])
def test_optimized_ir_round_trips(target):
    module = _build(ROWWISE)
    PassManager(PIPELINES[target]).run(module)
    text = print_module(module)
    assert print_module(parse_module(text)) == text


def _rowwise_args(rng):
    x = rng.standard_normal((3, 64)).astype(np.float32)
    return [x, np.full((3, 64), np.nan, np.float32), 50, 64]


def _matmul_args(rng):
    a = rng.standard_normal((40, 24)).astype(np.float32)
    b = rng.standard_normal((24, 33)).astype(np.float32)
    return [a, b, np.full((40, 33), np.nan, np.float32), 40, 33, 24]


@pytest.mark.parametrize("target", sorted(PIPELINES))
@pytest.mark.parametrize(
    "case, make_args, grid, out",
    [(ROWWISE, _rowwise_args, (3,), 1), (MATMUL, _matmul_args, (3, 3), 2)],
    ids=["rowwise", "matmul"],
)
def test_pipeline_on_frontend_ir_preserves_values(case, make_args, grid, out, target, rng):
    args = make_args(rng)
    runs = []
    for optimize in (False, True):
        module = parse_module(print_module(_build(case)))  # through text, as the disk cache does
        if optimize:
            PassManager(PIPELINES[target]).run(module)
        copy = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        run_kernel(module, grid=grid, args=copy)
        runs.append(copy[out])
    assert not np.isnan(runs[0]).all()
    np.testing.assert_allclose(runs[1], runs[0], rtol=1e-6, atol=1e-6)
