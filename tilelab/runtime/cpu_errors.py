"""What a CPU kernel reports back, as the interpreter says it: prints, failed asserts, out-of-bounds accesses.

The compiled code calls one callback (``cpu_launch.REPORT_FN``) for each ``device_print``
operand and for each failed check; ``print_operand`` prints like the interpreter, and
``runtime_error`` turns the first failure (lowest program id) into the interpreter's
``KernelRuntimeError``, naming the kernel's source line::

    raise runtime_error(module, ops, reports, arrays)   # "kernel.py:12: out-of-bounds load in program (3, 0, 0) ..."

Why a module of its own: none of it runs on a launch that succeeds, and the interpreter's
error helpers it imports cost ~10 ms, so they are imported on the first error
(``kernel_error``), never on the first launch.
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING

import numpy as np

from tilelab.compiler.backends import cpu as backend
from tilelab.compiler.ir.types import SCALARS

if TYPE_CHECKING:
    from tilelab.compiler.interpreter.errors import KernelRuntimeError


def kernel_error(message: str) -> KernelRuntimeError:
    """The interpreter's ``KernelRuntimeError`` for ``message``, imported here on the first error."""
    from tilelab.compiler.interpreter.errors import KernelRuntimeError

    return KernelRuntimeError(message)


def runtime_error(module, ops: dict, reports: list, arrays) -> KernelRuntimeError:
    """The error of the first failure in ``reports`` (``(kind, op_id, pid, index, addr)`` tuples).

    ``ops`` is the compiled op table (source line, op name, shape of each reporting op);
    ``arrays`` the ``(name, array)`` pointer arguments, described for an out-of-bounds access.
    """
    from tilelab.compiler.interpreter.errors import KernelRuntimeError, SourceLines, format_index
    from tilelab.compiler.interpreter.memory import Memory

    if not reports:
        return KernelRuntimeError(f"kernel {module.kernel.sym_name} failed without a report")
    kind, op_id, pid, index, addr = min(reports, key=lambda r: (r[2][2], r[2][1], r[2][0]))
    info = ops[str(op_id)]
    loc = _Loc(info["file"], info["line"])
    where = format_index(index, tuple(info.get("shape", ())))
    sources = SourceLines(module)
    if kind == backend.REPORT_ZERO_STEP:
        return KernelRuntimeError(sources.message(loc, "for loop with a step of 0 never ends"))
    if kind == backend.REPORT_ASSERT:
        text = f"device assertion failed in program {pid} at element {where}: {info['message']}"
        return KernelRuntimeError(sources.message(loc, text))
    what = {"tt.load": "load", "tt.store": "store"}.get(info["op"], "atomic")
    text = f"out-of-bounds {what} in program {pid} at element {where}: "
    text += f"address 0x{addr & (2**64 - 1):x} ({info['itemsize']} bytes)"
    text += " is outside every array argument"
    details = Memory(arrays).describe() if arrays else ["(the kernel has no array arguments)"]
    return KernelRuntimeError(sources.message(loc, text, details))


class _Loc:
    def __init__(self, file, line):
        self.file, self.line = file, line


def sanitizer_ranges(arrays) -> tuple[np.ndarray]:
    """The byte ranges of the argument arrays as ``[lo0, hi0, lo1, hi1, ...]`` (int64), for a sanitized launch."""
    from tilelab.compiler.interpreter.memory import Memory

    regions = Memory(arrays).regions
    flat = np.array([x for r in regions for x in (r.lo, r.hi)] or [0, 0], dtype=np.int64)
    return (flat,)


def _format_element(value, hex_: bool) -> str:
    if not hex_:
        return str(value.item())
    width = value.dtype.itemsize
    return "0x" + format(int(np.asarray(value).view(f"u{width}")), f"0{2 * width}x")


def print_operand(info, pid, operand, data, count) -> None:
    """Print one operand of a ``device_print`` like the interpreter: one line per element."""
    prefix = info.get("prefix", "").rstrip().rstrip(":")
    values = info.get("values", [])
    if operand < 0 or not values:
        print(f"pid {pid} {prefix}", flush=True)
        return
    type_name, shape = values[operand]
    t = SCALARS[type_name]
    dtype = t.host_dtype
    arr = np.ctypeslib.as_array(ctypes.cast(data, ctypes.POINTER(ctypes.c_uint8)), (count * dtype.itemsize,))
    arr = arr.view(dtype).reshape(shape).copy()
    if not t.has_numpy:  # raw bits of a float numpy lacks: print the values
        arr = t.decode(arr)
    label = f"{prefix} (operand {operand})" if len(values) > 1 else prefix
    lines = []
    for index in np.ndindex(arr.shape):
        idx = ", ".join(str(i) for i in index)
        lines.append(f"pid {pid} idx ({idx}) {label}: {_format_element(arr[index], info.get('hex'))}")
    print("\n".join(lines), flush=True)


__all__ = ["kernel_error", "print_operand", "runtime_error", "sanitizer_ranges"]
