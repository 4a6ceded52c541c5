"""The launch a view traces: the user's own arguments, or a stand-in built from the signature.

Why: coalescing depends on real addresses, and the interpreter gives them exactly
(``run_kernel(..., trace_program=pid)``). When no launch was given, pointers get zero-filled
arrays of ``SYNTHETIC_ELEMS`` elements (zeros keep gathers in bounds) and integer scalars
``SYNTHETIC_INT``; the views say so.

    set_launch(compiled, (cdiv(n, 1024),), x, y, out, n)     # trace with these arguments
    accesses, launch = traced_accesses(compiled, program=(3, 0, 0))
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from tilelab.compiler.interpreter.run import run_kernel
from tilelab.compiler.ir.types import parse_type

SYNTHETIC_ELEMS = 1 << 22
SYNTHETIC_INT = 1024

_LAUNCHES: dict[int, tuple[weakref.ref, Launch]] = {}


@dataclass
class Launch:
    """A grid and the kernel arguments (``arg_names`` order); ``synthetic`` when made up here."""

    grid: tuple
    args: list
    synthetic: bool = False

    @property
    def note(self) -> str:
        if not self.synthetic:
            return "addresses of the given launch"
        return (
            f"addresses of a stand-in launch: arrays of {SYNTHETIC_ELEMS} zeros, integer arguments = "
            f"{SYNTHETIC_INT}; call tilelab.viz.plugins.set_launch(kernel, grid, *args) for your own"
        )


@dataclass
class TracedAccess:
    """One load/store op of a traced program: relative byte addresses and active lanes, tile-shaped.

    ``op`` is the IR op, ``count`` how many times the program executed it (loops); the
    addresses are those of its first execution, relative to the start of the array.
    """

    op: object
    kind: str
    line: int | None
    arg_name: str | None
    addresses: np.ndarray
    mask: np.ndarray
    elem_bytes: int
    count: int = 1


def set_launch(compiled, grid, *args) -> None:
    """Makes the views trace ``compiled`` with this grid and these arguments (``arg_names`` order)."""
    grid = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
    _LAUNCHES[id(compiled)] = (weakref.ref(compiled), Launch(grid, list(args)))


def launch_of(compiled) -> Launch:
    """The launch given with ``set_launch``, else a synthetic one."""
    found = _LAUNCHES.get(id(compiled))
    if found is not None and found[0]() is compiled:
        return found[1]
    return synthetic_launch(compiled)


def synthetic_launch(compiled) -> Launch:
    """One program's stand-in arguments built from the kernel's signature."""
    args = []
    for name in compiled.arg_names:
        ty = parse_type(compiled.signature[name])
        if ty.is_pointer:
            args.append(np.zeros(SYNTHETIC_ELEMS, dtype=ty.pointee.host_dtype))
        elif ty.np_dtype.kind in "iu":
            args.append(SYNTHETIC_INT)
        else:
            args.append(ty.np_dtype.type(1))
    return Launch((1, 1, 1), args, synthetic=True)


def traced_accesses(compiled, program=(0, 0, 0), launch: Launch | None = None) -> tuple[list[TracedAccess], Launch]:
    """The loads and stores of ``program``, in op order, from an interpreter run of ``launch``.

    Programs ``0 .. program`` (per axis) run; the traced one's accesses are kept.
    """
    launch = launch or launch_of(compiled)
    program = tuple(program) + (0,) * (3 - len(program))
    grid = tuple(launch.grid) + (1,) * (3 - len(launch.grid))
    grid = tuple(max(g, p + 1) for g, p in zip(grid, program)) if launch.synthetic else grid
    if any(p >= g for p, g in zip(program, grid)):
        raise ValueError(f"program {program} is outside the launch grid {grid}")
    run_grid = tuple(p + 1 for p in program)
    result = run_kernel(compiled.module, run_grid, launch.args, trace_program=program)
    return _group(compiled.module, result.trace, _bases(compiled, launch)), launch


def _bases(compiled, launch: Launch) -> dict[str, int]:
    names = compiled.arg_names
    return {n: a.ctypes.data for n, a in zip(names, launch.args) if isinstance(a, np.ndarray)}


def _group(module, trace, bases: dict[str, int]) -> list[TracedAccess]:
    """One ``TracedAccess`` per op: the first record of each op, with the number of records."""
    ops = list(module.walk())
    by_op: dict[int, TracedAccess] = {}
    for rec in trace:
        if rec.op_index in by_op:
            by_op[rec.op_index].count += 1
            continue
        addresses = np.asarray(rec.addresses, dtype=np.int64)
        mask = np.ones(addresses.shape, bool) if rec.mask is None else np.asarray(rec.mask, bool)
        mask = np.broadcast_to(mask, addresses.shape)
        if rec.arg_name in bases:
            base = bases[rec.arg_name]
        else:
            base = int(addresses.min()) // 128 * 128 if addresses.size else 0
        line = rec.loc.line if rec.loc is not None else None
        by_op[rec.op_index] = TracedAccess(
            ops[rec.op_index], rec.kind, line, rec.arg_name, addresses - base, mask, rec.itemsize
        )
    return [by_op[i] for i in sorted(by_op)]
