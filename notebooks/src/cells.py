"""Cell helpers for the course notebooks: prose, code, and exercises with a hidden solution."""

from __future__ import annotations

import textwrap

import nbformat.v4 as nbf

SETUP = """\
import os

import numpy as np

import tilelab
import tilelab.language as tl{extra_imports}
from tilelab.testing import {testing}

# "cpu" runs everywhere; "cuda" on an NVIDIA GPU; "interpret" is the numpy reference interpreter.
TARGET = os.environ.get("TILELAB_TARGET", "cpu")
rng = np.random.default_rng()"""


def _clean(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


def md(text: str):
    """A markdown cell (the text is dedented)."""
    return nbf.new_markdown_cell(_clean(text))


def code(text: str):
    """A code cell (the text is dedented)."""
    return nbf.new_code_cell(_clean(text))


TESTING_HELPERS = ("assert_close", "do_bench")


def setup(extra_imports: str = ""):
    """The first code cell of every notebook: imports, the target, a random generator.

    ``extra_imports`` join the import block; which ``tilelab.testing`` helpers are imported is
    decided by ``finish_setup`` once the whole notebook is known.
    """
    extra = "\n" + _clean(extra_imports) if extra_imports else ""
    return code(SETUP.replace("{extra_imports}", extra))


def finish_setup(nb) -> None:
    """Imports in the setup cell only the testing helpers the notebook's other cells use."""
    first, *rest = [c for c in nb.cells if c.cell_type == "code"]
    used = [h for h in TESTING_HELPERS if any(h in c.source for c in rest)]
    line = f"from tilelab.testing import {', '.join(used)}\n" if used else ""
    first.source = first.source.replace("from tilelab.testing import {testing}\n", line)


def exercise(prompt: str, stub: str, check: str, solution: str) -> list:
    """An exercise: the prompt, a stub to complete, its check, and a collapsed solution cell.

    The stub runs as given (so the notebook runs top to bottom) and its check prints what is
    still wrong; the solution cell is hidden in JupyterLab until the learner opens it, and
    asserts that the solution passes.
    """
    answer = code(solution)
    answer.metadata["jupyter"] = {"source_hidden": True}
    answer.metadata["tags"] = ["solution"]
    return [md("**Exercise.** " + _clean(prompt)), code(stub), code(check), md("*Solution* (open the cell):"), answer]


def notebook(cells: list):
    """A notebook of ``cells`` with the Python 3 kernel and no outputs."""
    nb = nbf.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb
