"""The frontend: a kernel's Python source -> tile IR (see ``build.py``)."""

from .build import build_module, get_jit_fn, type_string
from .errors import CompilationError, SemanticError

__all__ = ["build_module", "get_jit_fn", "type_string", "CompilationError", "SemanticError"]
