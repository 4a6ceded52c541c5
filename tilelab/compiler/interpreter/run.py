"""``run_kernel``: bind a launch's arguments and run every program of the grid.

The contract the runtime and the tests rely on::

    result = run_kernel(module, grid=(g0, g1, g2), args=[...], sanitize=False, trace_program=None)

``args`` follow the kernel's parameters (``FuncOp.attrs["arg_names"]``): a numpy array
for each pointer (any shape, contiguous or not; its address is ``arr.ctypes.data``), a
Python or numpy number for each scalar (ints wrap to the parameter's width).
"""

from __future__ import annotations

import weakref

import numpy as np

from ...errors import InterpreterError
from ..ir.core import Module
from ..ir.types import PointerType, ScalarType
from .errors import KernelRuntimeError
from .executor import Interpreter, InterpreterResult
from .memory import Memory
from .numeric import dtype_of, wrap_scalar


def run_kernel(module: Module, grid, args, sanitize: bool = False, trace_program=None) -> InterpreterResult:
    """Run ``module``'s kernel on every program of ``grid``; give the trace of ``trace_program``.

    Raises ``KernelRuntimeError`` for a bad launch argument, an out-of-bounds access, a
    failed ``device_assert``; ``sanitize=True`` also checks alignment and integer
    division by zero.
    """
    kernel = module.kernel
    _refuse_types_numpy_lacks(module)
    grid = _grid(grid)
    names = _arg_names(kernel)
    values, arrays = _bind(kernel, names, list(args))
    it = Interpreter(module, grid, Memory(arrays), sanitize)
    traced = _program_id(trace_program) if trace_program is not None else None
    result = InterpreterResult(num_programs=grid[0] * grid[1] * grid[2])
    if traced is not None:
        it.op_index = {op: i for i, op in enumerate(module.walk())}
    with np.errstate(all="ignore"):
        for z in range(grid[2]):
            for y in range(grid[1]):
                for x in range(grid[0]):
                    it.pid = (x, y, z)
                    it.trace = result.trace if it.pid == traced else None
                    it.run_block(kernel.body, values)
    return result


#: modules already found free of types numpy lacks (each launch of a kernel runs the same module)
_NUMPY_TYPES_ONLY: weakref.WeakSet = weakref.WeakSet()


def _refuse_types_numpy_lacks(module: Module) -> None:
    """The interpreter holds values in numpy: a kernel using a type numpy has no type for is refused, by name
    (looked for once per module, not at every launch)."""
    if module in _NUMPY_TYPES_ONLY:
        return
    types = [a.type for a in module.kernel.args] + [r.type for op in module.walk() for r in op.results]
    for t in types:
        elem = t.element
        while isinstance(elem, PointerType):
            elem = elem.pointee
        if isinstance(elem, ScalarType) and not elem.has_numpy:
            raise InterpreterError(elem.numpy_lacks)
    _NUMPY_TYPES_ONLY.add(module)


def _grid(grid) -> tuple[int, int, int]:
    dims = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
    if not 1 <= len(dims) <= 3 or any(int(d) < 0 for d in dims):
        raise KernelRuntimeError(f"launch grid {grid!r}: expected 1 to 3 non-negative sizes")
    dims = tuple(int(d) for d in dims)
    return dims + (1,) * (3 - len(dims))


def _program_id(pid) -> tuple[int, int, int]:
    """A program id padded with zeros: ``(3,)`` is program ``(3, 0, 0)``."""
    dims = tuple(int(d) for d in (pid if isinstance(pid, (tuple, list)) else (pid,)))
    return dims + (0,) * (3 - len(dims))


def _arg_names(kernel) -> list[str]:
    names = list(kernel.attrs.get("arg_names") or ())
    if len(names) != len(kernel.args):
        names = [a.name_hint or f"arg{i}" for i, a in enumerate(kernel.args)]
    return names


def _bind(kernel, names, args):
    """Kernel argument values (addresses and numpy scalars) and the named arrays."""
    if len(args) != len(names):
        raise KernelRuntimeError(
            f"kernel {kernel.sym_name} takes {len(names)} arguments ({', '.join(names)}), got {len(args)}"
        )
    values, arrays = [], []
    for name, param, arg in zip(names, kernel.args, args):
        if isinstance(param.type, PointerType):
            if not isinstance(arg, np.ndarray):
                raise KernelRuntimeError(
                    f"argument '{name}': a pointer parameter needs a numpy array, got {type(arg).__name__}"
                )
            arrays.append((name, arg))
            values.append(np.int64(arg.ctypes.data))
        else:
            if isinstance(arg, np.ndarray) and arg.ndim > 0:
                raise KernelRuntimeError(f"argument '{name}': a scalar parameter ({param.type}) got an array")
            try:
                values.append(wrap_scalar(arg, dtype_of(param.type)))
            except (TypeError, ValueError) as e:
                raise KernelRuntimeError(f"argument '{name}': cannot pass {arg!r} as {param.type}") from e
    return values, arrays
