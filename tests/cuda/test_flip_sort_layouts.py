"""A flip or a sort whose result a differently laid-out value meets (a reduction's broadcast) compiles for sm_90a:
its result keeps its source's layout, as its type requires, and the final IR on the interpreter gives numpy's
values (before, assign-layouts gave the result its users' layout and the compile stopped with an internal error)."""

from __future__ import annotations

import numpy as np
import pytest

import tilelab
from tests.kernels.test_shapes import flip_sort_then_add_kernel
from tilelab.compiler.interpreter import run_kernel


@pytest.mark.parametrize("block, warps", [(32, 4), (128, 4), (64, 1)])
def test_the_final_ir_flips_and_sorts(block, warps):
    ck = tilelab.compile(flip_sort_then_add_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"BLOCK": block},
                         target="cuda:sm_90a", num_warps=warps, cache=False)  # fmt: skip
    x = np.random.default_rng(block).integers(-8, 8, block).astype(np.float32)
    out = np.full(2 * block, np.nan, np.float32)
    run_kernel(ck.module, (1,), [x, out])
    total = np.sum(np.outer(x, x))
    np.testing.assert_array_equal(out, np.concatenate([x[::-1] + total, np.sort(x) + total]))
