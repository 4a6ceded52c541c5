"""The tour notebook, executed headless with nbclient: no errors except the cell that shows one."""

import os

import nbformat
import pytest
from nbclient import NotebookClient

from tests.lab.tour import kernel_env, prepared_tour

pytestmark = pytest.mark.slow

WIDGET = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tour")
    path = prepared_tour(directory)
    nb = nbformat.read(path, as_version=4)
    old = dict(os.environ)
    os.environ.update(kernel_env())  # the kernel process inherits it
    try:
        NotebookClient(
            nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(directory)}}
        ).execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    return nb, directory


def _code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def _outputs_of(nb, startswith):
    return next(c.outputs for c in _code_cells(nb) if c.source.startswith(startswith))


def test_no_errors_except_the_error_demo(executed):
    nb, _ = executed
    failing = [c.source.splitlines()[0] for c in _code_cells(nb) if any(o.output_type == "error" for o in c.outputs)]
    assert len(failing) == 1 and failing[0].startswith("%%tile_kernel") and "broken" in _code_cells(nb)[-2].source


def test_kernel_cells_show_the_inspector(executed):
    nb, _ = executed
    kernel_cells = [c for c in _code_cells(nb) if c.source.startswith(("%%tile_kernel", "%tile_inspect"))]
    shown = [any(WIDGET in o.get("data", {}) for o in c.outputs) for c in kernel_cells]
    assert shown == [True, True, True, False]  # add, axpy, %tile_inspect; not the broken kernel


def test_error_demo_marks_the_offending_line(executed):
    nb, _ = executed
    html = next(o.data["text/html"] for o in _code_cells(nb)[-2].outputs if "text/html" in o.get("data", {}))
    marked = html.split('tl-line tl-hl"')[1][:20]
    assert 'data-no="3"' in marked  # `wrong = offs + tl.arange(0, 64)` is line 3 of the cell
    error = next(o for o in _code_cells(nb)[-2].outputs if o.output_type == "error")
    assert error.ename == "CellError" and "Traceback" not in "".join(error.traceback)


def test_bench_and_report(executed):
    nb, directory = executed
    text = "".join(o.get("data", {}).get("text/plain", "") for o in _outputs_of(nb, "%tile_bench"))
    assert text.endswith("ms (median)")
    page = (directory / "add.html").read_text()
    assert "tl-del" in page or "tl-add" in page
