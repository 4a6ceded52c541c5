"""The tile IR: types, values and ops, op traits, a builder, a printer and a verifier."""

from . import traits, types
from .builder import Builder
from .core import (
    UNKNOWN_LOC,
    Block,
    Loc,
    Module,
    Op,
    Region,
    Value,
    replace_uses,
    users,
)
from .ops import *  # noqa: F403
from .ops import __all__ as _ops_all
from .printer import print_module, print_op
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
    "replace_uses",
    "users",
    "print_module",
    "print_op",
    "VerificationError",
    "verify",
    *_ops_all,
]
