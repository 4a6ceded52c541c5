"""Every pass run in these tests is followed by the use-list check.

A pass edits the IR through the rewriter and the operand lists, which keep each value's
use-list; ``check_uses`` recomputes every use-list by walking the module and compares.
The fixture wraps each pass file's ``run`` so that a test calling ``dce.run(module)``
directly gets the check too (the pass manager's verifier already runs it between passes).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil

import pytest

import tilelab.compiler.passes as passes_pkg
from tilelab.compiler.ir.core import Module
from tilelab.compiler.ir.verifier import check_uses

_NOT_PASSES = {"manager", "pipeline", "tracing", "utils", "constant_math"}


def _pass_modules():
    for info in pkgutil.iter_modules(passes_pkg.__path__):
        if info.name not in _NOT_PASSES:
            module = importlib.import_module(f"{passes_pkg.__name__}.{info.name}")
            if callable(getattr(module, "run", None)):
                yield module


def _checked(run):
    @functools.wraps(run)
    def wrapper(module, *args, **kwargs):
        changed = run(module, *args, **kwargs)
        if isinstance(module, Module):
            check_uses(module)
        return changed

    return wrapper


@pytest.fixture(autouse=True)
def use_lists_checked_after_every_pass(monkeypatch):
    for module in _pass_modules():
        monkeypatch.setattr(module, "run", _checked(module.run))
    yield
