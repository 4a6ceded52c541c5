"""The examples in the layout modules' docstrings run and stay true."""

import doctest
import importlib

import pytest

MODULES = ["gf2", "linear", "distributed", "shared", "queries", "text", "indexing"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"tilelab.compiler.layouts.{name}")
    assert doctest.testmod(module).failed == 0
