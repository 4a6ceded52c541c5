"""The tile IR: types, values with use-lists, ops and their traits, a rewriter, a printer and a verifier."""

from . import traits, types
from .core import (
    UNKNOWN_LOC,
    Block,
    Loc,
    Module,
    Op,
    Region,
    Value,
)
from .ops import *  # noqa: F403
from .ops import __all__ as _ops_all
from .printer import print_module, print_op
from .rewriter import Builder, Rewriter
from .uses import Use
from .verifier import VerificationError, verify

__all__ = [
    "traits",
    "types",
    "Builder",
    "UNKNOWN_LOC",
    "Block",
    "Loc",
    "Module",
    "Op",
    "Region",
    "Value",
    "Rewriter",
    "Use",
    "print_module",
    "print_op",
    "VerificationError",
    "verify",
    *_ops_all,
]
