"""Every pass of every pipeline turns its docstring's ``before:`` IR into exactly its ``after:`` IR."""

from __future__ import annotations

import importlib

import pytest

from tilelab.compiler.passes.pipeline import PASS_FILES

from .support import assert_docstring_example

FILES = sorted({file for files in PASS_FILES.values() for file in files})


@pytest.mark.parametrize("file", FILES)
def test_docstring_example_runs(file, monkeypatch):
    monkeypatch.delenv("TILELAB_CUDA_WGMMA", raising=False)  # the Hopper example shows the default path
    assert_docstring_example(importlib.import_module(f"tilelab.compiler.passes.{file}"))
