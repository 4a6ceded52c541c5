"""Builds the course notebooks from the modules in ``src/``: ``python notebooks/build.py``.

The notebooks are written as code so that they can be reviewed in diffs and regenerated
reproducibly; the ``.ipynb`` files are committed without outputs. Cell ids are derived from
the notebook name and the cell position, so building twice gives the same bytes.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from src import cells  # noqa: E402

CHAPTERS = [
    "ch01_vector_add",
    "ch02_softmax",
    "ch03_matmul",
    "ch04_layer_norm",
    "ch05_flash_attention",
    "ch06_compiler",
    "ch07_roofline",
    "ch08_debugging",
    "puzzles",
]


def build(name: str) -> Path:
    """Writes the notebook of chapter module ``name`` and returns its path."""
    module = importlib.import_module(f"src.{name}")
    nb = module.notebook()
    cells.finish_setup(nb)
    stem = Path(module.FILENAME).stem
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{stem[:20]}-{i:03d}"
    nbformat.validate(nb)
    path = HERE / module.FILENAME
    nbformat.write(nb, path)
    # the code cells are formatted as the project's Python is (ruff), so the course reads like the codebase
    subprocess.run([sys.executable, "-m", "ruff", "format", "--quiet", str(path)], check=True)
    return path


def main(names: list[str]) -> None:
    for name in names or CHAPTERS:
        print(build(name).relative_to(HERE))


if __name__ == "__main__":
    main(sys.argv[1:])
