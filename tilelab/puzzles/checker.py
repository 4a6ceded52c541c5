"""``check(kernel)``: run a puzzle kernel on fresh random cases, sanitizer on, and say exactly what is wrong.

Each trial draws a new case (sizes and values), poisons the outputs (a NaN with a payload no
arithmetic produces; the minimum for integers), launches the kernel with ``sanitize=True`` and
compares with the numpy spec. The first problem found is the verdict:

* the kernel does not compile, or takes the wrong parameters;
* an out-of-bounds access (the sanitizer's message, which names the kernel line);
* outputs left unwritten (still poisoned after the launch): how many, and where;
* wrong values: how many, and the first few as ``index: expected ..., got ...``.

    >>> check(copy)               # the puzzle is named by the kernel's function name
    PASS copy: 3 random cases (n=517; n=812; n=390)
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np

import tilelab
from tilelab.compiler.frontend import CompilationError, get_jit_fn
from tilelab.compiler.interpreter import KernelRuntimeError
from tilelab.runtime import LaunchError

from .spec import REGISTRY, Case, Puzzle

# Bit patterns of NaNs no float arithmetic produces (a quiet-bit-clear NaN with a payload).
_POISON_BITS = {2: np.uint16(0x7DAD), 4: np.uint32(0x7FBADBAD), 8: np.uint64(0x7FF4BADBADBADBAD)}
_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}
SHOWN = 5


class PuzzleFailed(AssertionError):
    """Raised by ``check(..., strict=True)`` when the kernel is wrong; the message says how."""


@dataclass
class Verdict:
    """The outcome of ``check``: ``passed``, and ``message`` (shown as the cell's output)."""

    puzzle: str
    passed: bool
    message: str

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return self.message


def poison(arr: np.ndarray) -> np.ndarray:
    """Fill ``arr`` in place with the poison value of its dtype, and return it."""
    if arr.dtype.kind == "f" or arr.dtype.name == "bfloat16":
        arr.view(_UINT[arr.itemsize])[...] = _POISON_BITS[arr.itemsize]
    elif arr.dtype.kind in "iu":
        arr[...] = np.iinfo(arr.dtype).min
    else:
        raise TypeError(f"poison: unsupported dtype {arr.dtype}")
    return arr


def poisoned(arr: np.ndarray) -> np.ndarray:
    """Boolean mask of the elements of ``arr`` still holding the poison value."""
    if arr.dtype.kind == "f" or arr.dtype.name == "bfloat16":
        return arr.view(_UINT[arr.itemsize]) == _POISON_BITS[arr.itemsize]
    return arr == np.iinfo(arr.dtype).min


def _find(name_or_kernel, kernel) -> tuple[Puzzle, object]:
    if kernel is None:
        kernel, name = name_or_kernel, _python_fn(name_or_kernel).__name__
    else:
        name = name_or_kernel
    if name not in REGISTRY:
        known = ", ".join(REGISTRY)
        raise KeyError(
            f"no puzzle named {name!r}: name the kernel after its puzzle or call check(name, kernel); puzzles: {known}"
        )
    return REGISTRY[name], kernel


def _python_fn(kernel):
    return get_jit_fn(kernel) or kernel


def _signature_problem(p: Puzzle, kernel, case: Case) -> str | None:
    """Why the kernel cannot take the puzzle's arguments, or None."""
    params = list(inspect.signature(_python_fn(kernel)).parameters)
    missing = [c for c in p.constants if c not in params]
    if missing:
        return f"the kernel needs the constexpr parameter(s) {', '.join(missing)}: add `{missing[0]}: tl.constexpr`"
    runtime = [q for q in params if q not in p.constants]
    if len(runtime) != len(case.args):
        wanted = ", ".join(list(case.args) + [f"{c}: tl.constexpr" for c in p.constants])
        return f"the kernel takes ({', '.join(params)}) but the puzzle calls it with ({wanted})"
    return None


def _describe(case: Case) -> str:
    sizes = [f"{k}={v}" for k, v in case.args.items() if isinstance(v, int)]
    return ", ".join(sizes) or "grid=" + str(case.grid)


def _prepare(p: Puzzle, case: Case) -> list:
    """The launch arguments: copies of the inputs, poisoned (or zeroed) outputs."""
    args = []
    for name, value in case.args.items():
        if isinstance(value, np.ndarray):
            value = value.copy()
            if name in p.zeroed:
                value[...] = 0
            elif name in p.outputs:
                poison(value)
        args.append(value)
    return args


def _launch(p: Puzzle, kernel, case: Case, args: list, target: str) -> str | None:
    """Run the kernel; the fault it raised, as a message, or None."""
    try:
        kernel[case.grid](*args, **p.constants, target=target, sanitize=True)
    except CompilationError as e:
        return f"the kernel does not compile:\n{e}"
    except KernelRuntimeError as e:
        return f"the kernel faulted (grid={case.grid}):\n{e}"
    except LaunchError as e:
        return f"the kernel cannot be launched: {e}"
    return None


def _index(flat: int, shape) -> str:
    idx = np.unravel_index(flat, shape)
    return "[" + ", ".join(str(int(i)) for i in idx) + "]"


def _unwritten(name: str, got: np.ndarray) -> str | None:
    left = poisoned(got)
    if not left.any():
        return None
    where = np.flatnonzero(left)
    shown = ", ".join(_index(i, got.shape) for i in where[:SHOWN])
    return (
        f"{name}: {where.size} of {got.size} elements were never written (at {shown}"
        f"{', ...' if where.size > SHOWN else ''}): do the grid and the mask cover every element?"
    )


def _wrong(p: Puzzle, name: str, got: np.ndarray, want: np.ndarray) -> str | None:
    if got.shape != want.shape:
        return f"{name}: the spec gives shape {want.shape} but the output has shape {got.shape}"
    ok = np.isclose(got.astype(np.float64), want.astype(np.float64), atol=p.atol, rtol=p.rtol)
    if ok.all():
        return None
    where = np.flatnonzero(~ok)
    lines = [f"{name}: {where.size} of {got.size} elements are wrong:"]
    for i in where[:SHOWN]:
        lines.append(f"  {name}{_index(i, got.shape)}: expected {want.flat[i]:.6g}, got {got.flat[i]:.6g}")
    if where.size > SHOWN:
        lines.append(f"  ... and {where.size - SHOWN} more")
    return "\n".join(lines)


def _trial(p: Puzzle, kernel, case: Case, target: str) -> str | None:
    """What is wrong with the kernel on ``case``, or None."""
    problem = _signature_problem(p, kernel, case)
    if problem:
        return problem
    args = _prepare(p, case)
    problem = _launch(p, kernel, case, args, target)
    if problem:
        return problem
    expected = p.expected(case)
    names = list(case.args)
    for name in p.outputs:
        got = args[names.index(name)]
        problem = _unwritten(name, got) or _wrong(p, name, got, np.asarray(expected[name]))
        if problem:
            return problem
    return None


def check(
    name_or_kernel,
    kernel=None,
    *,
    trials: int = 3,
    seed: int | None = None,
    target: str = "interpret",
    strict: bool = False,
) -> Verdict:
    """Check a puzzle kernel on ``trials`` fresh random cases with the sanitizer on.

    ``check(copy)`` finds the puzzle by the kernel's name; ``check("copy", my_kernel)`` names it.
    A plain Python function is accepted too (it is wrapped with ``tilelab.jit``). Returns a
    ``Verdict`` that prints as ``PASS ...`` or ``FAIL ...`` with what is wrong; ``strict=True``
    raises ``PuzzleFailed`` instead of returning a failing verdict.
    """
    p, kernel = _find(name_or_kernel, kernel)
    if not hasattr(kernel, "__getitem__"):
        kernel = tilelab.jit(kernel)
    rng = np.random.default_rng(seed)
    seen = []
    for _ in range(trials):
        case = p.make(rng)
        seen.append(_describe(case))
        problem = _trial(p, kernel, case, target)
        if problem:
            verdict = Verdict(p.name, False, f"FAIL {p.name} ({seen[-1]}): {problem}")
            if strict:
                raise PuzzleFailed(verdict.message)
            return verdict
    return Verdict(p.name, True, f"PASS {p.name}: {trials} random cases ({'; '.join(seen)})")
