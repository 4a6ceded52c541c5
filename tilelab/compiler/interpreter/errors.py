"""What the interpreter reports: runtime errors, memory-access records, source lines.

A ``KernelRuntimeError`` is the one exception a kernel run raises for a fault of the
kernel (an out-of-bounds access, a failed ``device_assert``, a loop with a zero step).
Its message starts with the user's line, ``add.py:7: ...``, then the source text of
that line when the kernel's source is known, so it reads like a Python traceback::

    add.py:7: out-of-bounds load in program (3, 0, 0) at element [17]: address 0x7f3a...
        x = tl.load(x_ptr + offs)
      x_ptr: [0x7f3a1000, 0x7f3a2000) 4096 bytes

``AccessRecord`` is one load, store or atomic of a traced program; the coalescing
views replay a program's records to show which addresses each op touched.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import InterpreterError
from ..ir.core import Loc, Module


class KernelRuntimeError(InterpreterError, RuntimeError):
    """A kernel fault found while interpreting it; the message names the kernel's line."""


@dataclass
class AccessRecord:
    """One memory access of a traced program.

    ``op_index`` is the op's position in ``module.walk()`` order, ``kind`` is ``"load"``,
    ``"store"`` or ``"atomic"``, ``addresses`` the tile-shaped int64 byte addresses,
    ``mask`` the tile-shaped lanes that really accessed memory, ``itemsize`` the bytes per
    element and ``arg_name`` the pointer parameter whose array holds the first active
    address (``None`` when no lane was active).
    """

    op_index: int
    kind: str
    loc: Loc
    addresses: np.ndarray
    mask: np.ndarray
    itemsize: int
    arg_name: str | None


class SourceLines:
    """Finds the source text of a location from the functions' ``source`` attributes."""

    def __init__(self, module: Module):
        self.files: list[tuple[str, int, list[str]]] = []
        for func in module.funcs:
            source = func.attrs.get("source")
            if source:
                filename = func.attrs.get("filename", func.loc.file)
                first = func.attrs.get("first_line", func.loc.line or 1)
                self.files.append((filename, first, source.splitlines()))

    def text(self, loc: Loc) -> str | None:
        """The stripped source line at ``loc``, or ``None`` when no function holds it."""
        for filename, first, lines in self.files:
            index = loc.line - first
            if filename == loc.file and 0 <= index < len(lines):
                return lines[index].strip()
        return None

    def message(self, loc: Loc, text: str, details: list[str] = ()) -> str:
        """``file:line: text``, the source line under it, then indented ``details``."""
        parts = [f"{loc.file}:{loc.line}: {text}"]
        source = self.text(loc)
        if source:
            parts.append(f"    {source}")
        parts.extend(f"  {d}" for d in details)
        return "\n".join(parts)


def format_index(flat: int, shape: tuple[int, ...]) -> str:
    """The tile index of flat element ``flat``: ``[3, 1]`` (``[]`` for a scalar)."""
    if not shape:
        return "[]"
    return "[" + ", ".join(str(int(i)) for i in np.unravel_index(flat, shape)) + "]"
