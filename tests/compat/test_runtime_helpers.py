"""Every cast pair and every math function compiles and runs, against numpy (no call through a null pointer).

LLVM lowers some conversions and math to calls of runtime helpers (``__truncdfhf2`` for
``fptrunc double to half``, libm for ``exp``); a helper the JIT does not link is a call
through a null pointer that kills the process. Each kernel here runs on the quick tier,
then again on the optimized one, and its optimized assembly's external calls must all
resolve in this process.
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import tilelab
import tilelab.language as tl
from tilelab.runtime import tiers

DTYPES = {
    "bool": np.bool_,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "float32": np.float32,
    "float64": np.float64,
    "float8e4nv": ml_dtypes.float8_e4m3fn,
    "float8e5": ml_dtypes.float8_e5m2,
}
NAMES = list(DTYPES)
N = 64


@tilelab.jit
def _cast_store(x, out, offs):
    tl.store(out + offs, x.to(out.dtype.element_ty))


@tilelab.jit
def cast_to_all(x_ptr, o0, o1, o2, o3, o4, o5, o6, o7, o8, o9, o10, o11, o12, o13, o14, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    _cast_store(x, o0, offs)
    _cast_store(x, o1, offs)
    _cast_store(x, o2, offs)
    _cast_store(x, o3, offs)
    _cast_store(x, o4, offs)
    _cast_store(x, o5, offs)
    _cast_store(x, o6, offs)
    _cast_store(x, o7, offs)
    _cast_store(x, o8, offs)
    _cast_store(x, o9, offs)
    _cast_store(x, o10, offs)
    _cast_store(x, o11, offs)
    _cast_store(x, o12, offs)
    _cast_store(x, o13, offs)
    _cast_store(x, o14, offs)


def _source_values(name, rng) -> np.ndarray:
    """Values every destination holds or rounds: 0..119 (with fractions for floats), never negative."""
    if name == "bool":
        return rng.integers(0, 2, N).astype(bool)
    values = rng.integers(0, 120, N).astype(np.float64)
    if name.startswith(("float", "bfloat")):
        values += rng.integers(0, 8, N) / 8
    return values.astype(DTYPES[name])


def _reference(x: np.ndarray, dst: str) -> np.ndarray:
    if x.dtype.kind not in "iub" and np.dtype(DTYPES[dst]).kind in "iu":
        x = np.trunc(x.astype(np.float64))  # toward zero, as the kernels do
    return x.astype(DTYPES[dst])


def _external_calls_resolve(kernel, args) -> list[str]:
    """The symbols the optimized code calls that this process does not define (should be none)."""
    from llvmlite import binding as llvm

    ck = kernel.warmup(*args, B=N, grid=(1,), target="cpu")
    asm = ck.asm.get("asm") if hasattr(ck, "asm") else None
    if not asm:
        return []
    local = set(re.findall(r"^([A-Za-z_.$][\w.$]*):", asm, re.M))
    called = set(re.findall(r"\b(?:call|jmp)\w*\s+([A-Za-z_][\w.$@]*)", asm))
    return sorted(c for c in called - local if not llvm.address_of_symbol(c.split("@")[0]))


def _check_casts(src, x, outs):
    for dst, out in zip(NAMES, outs):
        want = _reference(x, dst)
        np.testing.assert_array_equal(out.astype(np.float64), want.astype(np.float64), err_msg=f"cast {src} -> {dst}")
        out[...] = 0


@pytest.mark.parametrize("src", NAMES)
def test_every_cast_pair_runs_on_the_cpu(src, rng):
    x = _source_values(src, rng)
    outs = [np.zeros(N, DTYPES[d]) for d in NAMES]
    for _ in ("quick", "optimized"):
        cast_to_all[(1,)](x, *outs, B=N, target="cpu")
        _check_casts(src, x, outs)
        tiers.wait()
    assert _external_calls_resolve(cast_to_all, [x, *outs]) == []


@pytest.mark.gpu
@pytest.mark.parametrize("src", NAMES)
def test_every_cast_pair_runs_on_cuda(src, rng):
    """The same kernel on the GPU (numpy arrays are copied in and back): every pair links and rounds as numpy."""
    x = _source_values(src, rng)
    outs = [np.zeros(N, DTYPES[d]) for d in NAMES]
    cast_to_all[(1,)](x, *outs, B=N, target="cuda")
    _check_casts(src, x, outs)


UNARY = {
    "exp": np.exp,
    "exp2": np.exp2,
    "log": np.log,
    "log2": np.log2,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "sqrt": np.sqrt,
    "sqrt_rn": np.sqrt,
    "rsqrt": lambda v: 1 / np.sqrt(v),
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "tanh": np.tanh,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "erf": None,  # math.erf, vectorized below
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "abs": np.abs,
}


@tilelab.jit
def math_all(x_ptr, out, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    tl.store(out + 0 * B + offs, tl.exp(x))
    tl.store(out + 1 * B + offs, tl.exp2(x))
    tl.store(out + 2 * B + offs, tl.log(x))
    tl.store(out + 3 * B + offs, tl.log2(x))
    tl.store(out + 4 * B + offs, tl.math.log1p(x))
    tl.store(out + 5 * B + offs, tl.math.expm1(x))
    tl.store(out + 6 * B + offs, tl.sqrt(x))
    tl.store(out + 7 * B + offs, tl.sqrt_rn(x))
    tl.store(out + 8 * B + offs, tl.rsqrt(x))
    tl.store(out + 9 * B + offs, tl.sin(x))
    tl.store(out + 10 * B + offs, tl.cos(x))
    tl.store(out + 11 * B + offs, tl.math.tan(x))
    tl.store(out + 12 * B + offs, tl.math.tanh(x))
    tl.store(out + 13 * B + offs, tl.math.sinh(x))
    tl.store(out + 14 * B + offs, tl.math.cosh(x))
    tl.store(out + 15 * B + offs, tl.math.asin(x))
    tl.store(out + 16 * B + offs, tl.math.acos(x))
    tl.store(out + 17 * B + offs, tl.math.atan(x))
    tl.store(out + 18 * B + offs, tl.erf(x))
    tl.store(out + 19 * B + offs, tl.floor(x))
    tl.store(out + 20 * B + offs, tl.ceil(x))
    tl.store(out + 21 * B + offs, tl.math.trunc(x))
    tl.store(out + 22 * B + offs, tl.abs(x))
    tl.store(out + 23 * B + offs, tl.math.pow(x, x))
    tl.store(out + 24 * B + offs, tl.math.atan2(x, x + 1))
    tl.store(out + 25 * B + offs, x % (x + 0.5))
    tl.store(out + 26 * B + offs, tl.fma(x, x, x))
    tl.store(out + 27 * B + offs, tl.div_rn(x, x + 1))


MATH_DTYPES = [np.float16, np.float32, np.float64, ml_dtypes.bfloat16]


def _math_case(dtype, rng):
    """Inputs in (0, 1), where every function above is defined, and the float64 references."""
    import math

    x = rng.uniform(0.05, 0.95, N).astype(dtype)
    xd = x.astype(np.float64)
    refs = [fn(xd) if fn else np.vectorize(math.erf)(xd) for fn in UNARY.values()]
    refs += [xd**xd, np.arctan2(xd, xd + 1), np.fmod(xd, xd + 0.5), xd * xd + xd, xd / (xd + 1)]
    return x, refs


def _check_math(out, refs, tol):
    got = out.astype(np.float64).reshape(28, N)
    for name, want, row in zip([*UNARY, "pow", "atan2", "fmod", "fma", "div_rn"], refs, got):
        np.testing.assert_allclose(row, want, rtol=tol, atol=tol, err_msg=name)
    out[...] = 0


@pytest.mark.parametrize("dtype", MATH_DTYPES)
def test_every_math_function_runs_on_the_cpu(dtype, rng):
    """Compared in float64 at the dtype's precision, on both tiers."""
    x, refs = _math_case(dtype, rng)
    out = np.zeros(28 * N, dtype)
    tol = {np.float16: 2e-3, np.float32: 2e-6, np.float64: 1e-12}.get(dtype, 2e-2)
    for _ in ("quick", "optimized"):
        math_all[(1,)](x, out, B=N, target="cpu")
        _check_math(out, refs, tol)
        tiers.wait()
    assert _external_calls_resolve(math_all, [x, out]) == []


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", MATH_DTYPES)
def test_every_math_function_runs_on_cuda(dtype, rng):
    """The same functions on the GPU: each links (NVVM intrinsics or libdevice) and keeps the dtype's precision."""
    x, refs = _math_case(dtype, rng)
    out = np.zeros(28 * N, dtype)
    math_all[(1,)](x, out, B=N, target="cuda")
    _check_math(out, refs, {np.float16: 2e-3, np.float32: 1e-5, np.float64: 1e-12}.get(dtype, 2e-2))
