"""The examples in the analysis modules' docstrings run and stay true."""

import doctest
import importlib

import pytest

MODULES = ["axis_info", "memory_access", "flops_bytes"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"tilelab.compiler.analysis.{name}")
    assert doctest.testmod(module).failed == 0
