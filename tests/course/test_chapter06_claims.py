"""Chapter 06 says which pass removes which line of its kernel: each claim is checked against the pass list.

A kernel line commented ``# <what>: <pass> <verb> it`` claims that ``<pass>`` is the first pass to remove
(or rewrite) that line's ops. The test compiles the chapter's kernel with pass snapshots and finds, for
each such line, the first pass whose diff removes an op located on it.
"""

import importlib.util
import re
from pathlib import Path

import pytest

from tilelab.compiler.passes.pipeline import PIPELINES
from tilelab.viz.models import pass_diff_rows

nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parents[2]
PASS_NAMES = {p.name for passes in PIPELINES.values() for p in passes}
CLAIM = re.compile(r"#[^#]*:\s*(?P<pass>[a-z-]+) (?:folds|erases|shares|removes|hoists)")
ALL_CLAIMS = re.compile(r"\b(canonicalize|cse|dce|licm|inline)\b")


def _kernel_cell() -> str:
    nb = nbformat.read(ROOT / "notebooks" / "06_inside_the_compiler.ipynb", as_version=4)
    return next(c.source for c in nb.cells if c.cell_type == "code" and "def scale_add" in c.source)


PLUMBING = ("arith.constant", "tt.splat")  # the operands of a computation, not the computation


def _first_remover(records, line: int) -> str | None:
    """The first pass that removes a computation (not a constant or a splat) located on ``line``."""
    for rec in records:
        for row in pass_diff_rows(rec, locs=True):
            if (
                row.kind == "del"
                and re.search(rf"line {line}\)", row.text)
                and not any(p in row.text for p in PLUMBING)
            ):
                return rec.name
    return None


@pytest.mark.parametrize("target", ["cpu", "cuda:sm_90"])
def test_each_pass_claim_of_chapter_06_matches_the_pass_list(target, tmp_path):
    source = _kernel_cell()
    kernel_src = source[: source.index("compiled = ")]
    path = tmp_path / "chapter06_kernel.py"
    path.write_text("import tilelab\nimport tilelab.language as tl\n\n" + kernel_src)
    spec = importlib.util.spec_from_file_location("chapter06_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import tilelab

    sig = {"x": "*fp32", "out": "*fp32", "n": "i32", "alpha": "fp32"}
    ck = tilelab.compile(module.scale_add, sig, {"BLOCK": 128}, target=target, snapshots=True, cache=False)
    claims = [(i + 1, m["pass"]) for i, text in enumerate(path.read_text().splitlines()) if (m := CLAIM.search(text))]
    assert len(claims) == 3 and {p for _, p in claims} <= PASS_NAMES
    commented = [t for t in path.read_text().splitlines() if "#" in t and ALL_CLAIMS.search(t.split("#", 1)[1])]
    assert len(commented) == len(claims)  # every comment naming a pass makes a claim this test checks
    for line, claimed in claims:
        assert _first_remover(ck.passes, line) == claimed, f"line {line} claims {claimed}"
    dce = next(r for r in ck.passes if r.name == "dce")
    assert not dce.changed  # the chapter says so too: canonicalize left dce nothing to do
