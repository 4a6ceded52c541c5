"""Every course notebook runs top to bottom on the CPU target, headless, without an error; build.py reproduces them."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")  # the lab extra: absent on a bare GPU machine
NotebookClient = pytest.importorskip("nbclient").NotebookClient

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb") if p.name != "00_tour.ipynb")
SLOW = {"05_flash_attention.ipynb"}


def kernel_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p)
    return env


def execute(path: Path, workdir: Path):
    """Runs the notebook at ``path`` in ``workdir`` and returns it with its outputs."""
    nb = nbformat.read(path, as_version=4)
    old = dict(os.environ)
    os.environ.update(kernel_env())
    try:
        NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(workdir)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    return nb


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in NOTEBOOKS])
def test_notebook_runs_without_error(name, tmp_path):
    nb = execute(ROOT / "notebooks" / name, tmp_path)
    errors = [c.source.splitlines()[0] for c in nb.cells if any(o.output_type == "error" for o in c.get("outputs", []))]
    assert errors == []
    solutions = [c for c in nb.cells if "solution" in c.metadata.get("tags", [])]
    assert solutions and all(c.metadata["jupyter"]["source_hidden"] for c in solutions)
    # every chapter and the puzzles: the lab is in it, with a question its picture answers
    assert any("**Question.**" in c.source for c in nb.cells if c.cell_type == "markdown")
    assert pictures(nb), "no inspector or picture shown"


def pictures(nb) -> list[str]:
    """The outputs that draw: inspector widgets and the course's HTML pictures (layout and bank grids)."""
    found = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "application/vnd.jupyter.widget-view+json" in data:
                found.append("widget")
            elif any(k in data.get("text/html", "") for k in ("tl-grid", "tl-banks")):
                found.append("picture")
    return found


def test_the_course_has_all_chapters_and_no_outputs_committed():
    assert [n[:2] for n in NOTEBOOKS if n[0] == "0"] == ["01", "02", "03", "04", "05", "06", "07", "08"]
    assert "puzzles.ipynb" in NOTEBOOKS
    for name in NOTEBOOKS:
        nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
        assert all(not c.get("outputs") and c.get("execution_count") is None for c in nb.cells if c.cell_type == "code")


def test_build_reproduces_the_committed_notebooks(tmp_path):
    before = {n: (ROOT / "notebooks" / n).read_bytes() for n in NOTEBOOKS}
    subprocess.run([sys.executable, str(ROOT / "notebooks" / "build.py")], check=True, capture_output=True)
    assert {n: (ROOT / "notebooks" / n).read_bytes() for n in NOTEBOOKS} == before


def test_puzzle_notebook_has_a_check_per_puzzle():
    import tilelab.puzzles as puzzles

    nb = nbformat.read(ROOT / "notebooks" / "puzzles.ipynb", as_version=4)
    checks = [c.source for c in nb.cells if c.source.startswith("puzzles.check(")]
    assert checks == [f"puzzles.check({n})" for n in puzzles.names()]
