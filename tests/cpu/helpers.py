"""Run one tile IR module on the CPU backend and on the interpreter, and compare.

The interpreter is the reference semantics: integers must match bit for bit, floats
within the tolerance of their dtype. Outputs are poisoned before each run so an
element a backend forgot to write shows up.
"""

from __future__ import annotations

import numpy as np

from tests.support.ir_builders import KernelBuilder, io_kernel, poisoned  # noqa: F401
from tilelab.compiler.interpreter import run_kernel
from tilelab.runtime.cpu_target import CpuTarget

TOL = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-6, "float64": 1e-12}


def cpu_launcher(module):
    target = CpuTarget()
    return target.load(target.compile(module, {}), module)


def run_cpu(module, grid, args, sanitize=False):
    cpu_launcher(module)(grid, args, sanitize)


def run_both(module, grid, args, outputs):
    """Run on both backends on copies of ``args``; returns ``[(cpu, interp)]`` per output index."""
    cpu_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    ref_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    run_cpu(module, grid, cpu_args)
    run_kernel(module, grid, ref_args)
    return [(cpu_args[i], ref_args[i]) for i in outputs]


def assert_same(got, want, rtol=None):
    """Integers and bools bit-identical; floats within their dtype's tolerance (NaNs in place)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype.kind in "iub":
        np.testing.assert_array_equal(got, want)
        return
    tol = rtol if rtol is not None else TOL[got.dtype.name]
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol, equal_nan=True)
