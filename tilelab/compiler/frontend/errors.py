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

from ...errors import CompilationError, TritonError


class SemanticError(TritonError):
    """A user error found by the semantic layer; the code generator adds the location."""


__all__ = ["CompilationError", "SemanticError"]
