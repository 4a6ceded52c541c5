"""The exceptions user code catches, with Triton's names and hierarchy.

Code written for Triton catches ``triton.TritonError`` (every error the compiler or the runtime
reports about a kernel), ``triton.CompilationError`` (a kernel that cannot be compiled),
``triton.OutOfResources`` (a kernel that needs more shared memory, registers or threads than the
device has) and ``triton.runtime.errors.InterpreterError``. tilelab raises the same classes, so the
same ``except`` clauses work::

    try:
        kernel[grid](x, BLOCK=1 << 20)
    except tilelab.OutOfResources as e:   # e.required, e.limit, e.name
        ...

This module sits below every layer (it imports nothing from tilelab); the frontend, the backends,
the interpreter and the runtime raise these classes or subclasses of them.
"""

from __future__ import annotations

import linecache


class TritonError(Exception):
    """Base of every error tilelab reports about a kernel (Triton's ``triton.TritonError``)."""


class CompilationError(TritonError):
    """A kernel that cannot be compiled: ``str(e)`` is ``file:line: message`` plus the line and a caret.

    ``e.__cause__`` is the underlying error when there is one (as in Triton, tests match the
    semantic message there): ``invalid axis 2``.
    """

    def __init__(self, message: str, filename: str = "<unknown>", line: int = 0, col: int = 0, source_line: str = ""):
        self.message = message
        self.filename = filename
        self.line = line
        self.col = col
        self.source_line = source_line
        super().__init__(self._render())

    @classmethod
    def at(cls, loc, message: str) -> CompilationError:
        """The error at an IR location (file, line, column), with the line's text when the file is readable."""
        file, line, col = getattr(loc, "file", "<unknown>"), getattr(loc, "line", 0) or 0, getattr(loc, "col", 0) or 0
        return cls(message, str(file), line, col, linecache.getline(str(file), line) if line else "")

    def _render(self) -> str:
        head = f"{self.filename}:{self.line}: {self.message}"
        if not self.source_line:
            return head
        text = self.source_line.rstrip()
        stripped = text.lstrip()
        indent = len(text) - len(stripped)
        caret = " " * max(0, self.col - indent)
        return f"{head}\n    {stripped}\n    {caret}^"

    def __reduce__(self):
        return (type(self), (self.message, self.filename, self.line, self.col, self.source_line))


class OutOfResources(TritonError):
    """A kernel needs more of a device resource than there is: ``OutOfResources(required, limit, name)``.

    ``name`` is the resource (``"shared memory"``, ``"registers"``, ``"threads"``), ``required`` what
    the kernel needs and ``limit`` what the device has, in the resource's unit (bytes, count).
    """

    def __init__(self, required, limit, name: str):
        self.required = required
        self.limit = limit
        self.name = name
        super().__init__(self.message)

    @property
    def message(self) -> str:
        return (
            f"out of resource: {self.name}, Required: {self.required}, Hardware limit: {self.limit}. "
            "Reducing block sizes or `num_stages` may help."
        )

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):
        return (type(self), (self.required, self.limit, self.name))


class InterpreterError(TritonError):
    """An error found while interpreting a kernel (Triton's ``InterpreterError``)."""

    def __init__(self, error_message: str | None = None):
        self.error_message = error_message
        super().__init__(error_message)

    def __str__(self) -> str:
        return self.error_message or ""


__all__ = ["CompilationError", "InterpreterError", "OutOfResources", "TritonError"]
