"""Run one random program on several targets and compare what they wrote.

The interpreter is the reference; every other target must agree with it: bit for bit
on integers and booleans and on floats computed without a math library or a
reduction order (NaNs of any payload count as equal), and within ``TOLERANCE``
(relative to the largest magnitude of the output) on approximate floats (``exp``,
float sums and scans, float ``tl.dot``), where an infinity may face a finite value within
``OVERFLOW_MARGIN`` of the type's range (a sum in another order overflows). A target that raises where the reference
does not (or the other way round) is a mismatch too; both raising the same error
type means the generator wrote an ill-typed program ("rejected").

    outcome = run(generate(7), ["interpret", "cpu"])
    outcome.status   # "ok", "rejected" or "mismatch"; outcome.detail says where

The target ``cuda-ir`` (tilelab's launch target of that name) needs no GPU: the program compiled
for sm_90a (every pass of the CUDA pipeline: layouts, conversions through shared memory,
pipelining) and its final IR run by the interpreter. It checks what the passes did, not the PTX
they lead to.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from .programs import TOLERANCE, Program

HEADER = "import tilelab\nimport tilelab.language as tl\n\n\n"


#: an approximate value within this factor of its type's largest finite value may overflow in one
#: summation order and not in another (f16 sums: 2058 on one target, inf on the other)
OVERFLOW_MARGIN = 64


@dataclass
class Outcome:
    status: str  # "ok", "rejected" or "mismatch"
    detail: str = ""


_folder = None


def load(program: Program):
    """The ``@tilelab.jit`` kernel of ``program``, from a file of its own (tracebacks show its lines)."""
    global _folder
    if _folder is None:
        _folder = tempfile.mkdtemp(prefix="tilelab-fuzz-")
    path = os.path.join(_folder, f"fuzz_{program.seed}.py")
    with open(path, "w") as f:
        f.write(HEADER + program.source)
    spec = importlib.util.spec_from_file_location(f"fuzz_{program.seed}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules.pop(spec.name, None)
    return module.kernel


def launch(kernel, program: Program, target: str) -> dict | str:
    """The outputs after one launch on ``target`` (numpy arrays), or the error it raised as text."""
    args = {name: array.copy() for name, array in program.inputs.items()}
    for name, (dtype, count, *_) in program.outputs.items():
        args[name] = _poisoned(dtype, count) if name != "acc" else np.zeros(count, dtype)
    device = _device(target)
    moved = {name: device.put(a) for name, a in args.items()}
    size = int(np.prod(program.shape))
    try:
        # every operation rounded as the interpreter rounds it: no multiply-add fused on CUDA, libdevice keeping
        # subnormals (docs/semantics.md)
        kernel[(program.grid,)](
            *moved.values(), program.n, BLOCK=size, target=target, enable_fp_fusion=False, enable_reflect_ftz=False
        )
    except Exception as e:  # noqa: BLE001 - every error is a result to compare
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return {name: device.get(moved[name]) for name in program.outputs}


def run(program: Program, targets: list[str]) -> Outcome:
    """Launch ``program`` on each of ``targets`` (the first is the reference) and compare."""
    kernel = load(program)
    results = {t: launch(kernel, program, t) for t in targets}
    ref_target, ref = targets[0], results[targets[0]]
    for target in targets[1:]:
        got = results[target]
        if isinstance(ref, str) or isinstance(got, str):
            if isinstance(ref, str) and isinstance(got, str) and ref.split(":")[0] == got.split(":")[0]:
                continue
            return Outcome("mismatch", f"{ref_target}: {_short(ref)} | {target}: {_short(got)}")
        for name, (dtype, _count, exact, rtol) in program.outputs.items():
            problem = compare(ref[name], got[name], exact, rtol)
            if problem:
                return Outcome("mismatch", f"{name} ({dtype}{'' if exact else ', approximate'}): {target} {problem}")
    if isinstance(ref, str):
        return Outcome("rejected", ref)
    return Outcome("ok")


def compare(ref: np.ndarray, got: np.ndarray, exact: bool, rtol: float = 0.0) -> str:
    """``""`` when ``got`` agrees with ``ref``, else where and how it differs.

    Approximate floats agree within ``rtol`` (at least their type's ``TOLERANCE``) of the larger of the
    element and the output's largest finite magnitude.
    """
    if ref.dtype.kind in "biu" or (exact and ref.dtype.itemsize in (1, 2, 4, 8)):
        same = _same_bits(ref, got)
    else:
        same = _close(ref, got, rtol)
    if same.all():
        return ""
    i = int(np.flatnonzero(~same)[0])
    return f"differs at {i} of {ref.size} ({int((~same).sum())} elements): reference {ref[i]!r}, got {got[i]!r}"


def _same_bits(ref: np.ndarray, got: np.ndarray) -> np.ndarray:
    if ref.dtype.kind in "biu":
        return ref == got
    bits = np.dtype(f"u{ref.dtype.itemsize}")
    both_nan = np.isnan(ref.astype(np.float64)) & np.isnan(got.astype(np.float64))
    return (ref.view(bits) == got.view(bits)) | both_nan


def _close(ref: np.ndarray, got: np.ndarray, rtol: float = 0.0) -> np.ndarray:
    r, g = ref.astype(np.float64), got.astype(np.float64)
    rtol = max(rtol, TOLERANCE[ref.dtype.name])
    finite = np.isfinite(r)
    scale = np.abs(r[finite]).max() if finite.any() else 0.0
    with np.errstate(invalid="ignore"):  # inf - inf
        close = np.abs(r - g) <= rtol * np.maximum(np.abs(r), scale)
    # near the top of the range, partial sums in another order may overflow where these did not
    big = float(ml_dtypes.finfo(ref.dtype).max) / OVERFLOW_MARGIN  # numpy's finfo knows no bfloat16
    overflow = (np.isinf(r) & (np.abs(g) > big)) | (np.isinf(g) & (np.abs(r) > big))
    return close | (np.isnan(r) & np.isnan(g)) | (r == g) | overflow


def _poisoned(dtype: np.dtype, count: int) -> np.ndarray:
    out = np.empty(count, dtype)
    if dtype.kind == "b":
        out[...] = True
    elif dtype.kind in "iu":
        out[...] = np.iinfo(dtype).max
    else:
        out[...] = np.nan
    return out


def _short(result) -> str:
    return result if isinstance(result, str) else "ran"


class _Host:
    def put(self, a):
        return a

    def get(self, a):
        return a.copy()


def _device(target: str):
    if target != "cuda":
        return _Host()
    from tests.conftest import DeviceMemory  # only on a GPU machine

    return DeviceMemory("cuda")
