"""Errors the frontend reports to the kernel's author.

Every problem found while turning a kernel into tile IR becomes one
``CompilationError`` that names the user's file and line, shows that source line
and puts a caret under the column::

    add.py:4: incompatible shapes for +: [128] and [64]
        out = x + y
              ^

The semantic layer raises ``SemanticError`` (a message, no location); the code
generator, which knows which AST node it is visiting, turns it into a
``CompilationError`` for that node.
"""

from __future__ import annotations


class SemanticError(Exception):
    """A user error found by the semantic layer; the code generator adds the location."""


class CompilationError(Exception):
    """A kernel that cannot be compiled: ``str(e)`` is ``file:line: message`` plus the line and a caret."""

    def __init__(self, message: str, filename: str = "<unknown>", line: int = 0, col: int = 0, source_line: str = ""):
        self.message = message
        self.filename = filename
        self.line = line
        self.col = col
        self.source_line = source_line
        super().__init__(self._render())

    def _render(self) -> str:
        head = f"{self.filename}:{self.line}: {self.message}"
        if not self.source_line:
            return head
        text = self.source_line.rstrip()
        stripped = text.lstrip()
        indent = len(text) - len(stripped)
        caret = " " * max(0, self.col - indent)
        return f"{head}\n    {stripped}\n    {caret}^"
