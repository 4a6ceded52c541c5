"""The static HTML report and the ``tilelab`` command (with ``tilelab.compile`` replaced by a fake)."""

import html.parser

import pytest

import tilelab
from tests.lab.fake import FIRST_LINE, make_compiled
from tilelab.cli import main
from tilelab.compiler.frontend.errors import CompilationError
from tilelab.viz.report import report_html, write_report


class _Collector(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.hrefs, self.classes = set(), [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.ids.add(a.get("id"))
        if tag == "a" and "href" in a:
            self.hrefs.append(a["href"])
        self.classes += (a.get("class") or "").split()


def _parse(page):
    c = _Collector()
    c.feed(page)
    return c


def test_report_sections_links_and_diffs(tmp_path):
    ck = make_compiled()
    path = write_report(ck, tmp_path / "add.html")
    page = _parse(path.read_text())
    assert {"source", "passes", "llir", "resources", "roofline"} <= page.ids
    assert f"src-{FIRST_LINE}" in page.ids
    ir_links = {h for h in page.hrefs if h.startswith("#src-")}
    assert ir_links and all(h[1:] in page.ids for h in ir_links)  # every IR line link lands on a source line
    assert page.classes.count("tl-del") == 1 and "tl-unchanged" in page.classes
    text = path.read_text()
    assert "ptx: not produced for this target (cpu)" in text


def test_report_uses_registered_html_views():
    import sys

    registry = sys.modules["tilelab.viz.views"]
    saved = dict(registry._VIEWS)
    tilelab.viz.register_view("roofline", lambda ck: None, html=lambda ck: f"<p id='rf'>{ck.name} roof</p>")
    try:
        assert "add roof" in report_html(make_compiled())
    finally:
        registry._VIEWS.clear()
        registry._VIEWS.update(saved)


@pytest.fixture
def fake_compile(monkeypatch):
    calls = []

    def fake(kernel, **kwargs):
        calls.append((kernel, kwargs))
        if calls[0][1]["constants"].get("FAIL"):
            raise CompilationError("bad thing", "k.py", 2, 4, "    y = x + 1")
        return make_compiled()

    monkeypatch.setattr(tilelab, "compile", fake)
    return calls


@pytest.fixture
def kernel_file(tmp_path):
    path = tmp_path / "k.py"
    path.write_text("import tilelab\n\n@tilelab.jit\ndef add(x, n):\n    pass\n")
    return path


def test_cli_compile_prints_stage(fake_compile, kernel_file, capsys):
    assert main(["compile", f"{kernel_file}::add", "--signature", "x=*fp32, n=i32", "--stage", "llir"]) == 0
    assert "!DILocation" in capsys.readouterr().out
    kernel, kwargs = fake_compile[0]
    assert isinstance(kernel, tilelab.JITFunction) and kwargs["signature"] == {"x": "*fp32", "n": "i32"}


def test_cli_report_writes_html(fake_compile, kernel_file, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", f"{kernel_file}::add", "--signature", "x=*fp32", "--const", "B=4", "-o", str(out)]) == 0
    assert out.read_text().startswith("<!DOCTYPE html>") and fake_compile[0][1]["snapshots"] is True
    assert f"wrote {out}" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["compile", "{f}::add", "--signature", "x=*fp32", "--stage", "ptx"],
            "--stage ptx: not produced for target cpu",
        ),
        (["compile", "{f}::nope", "--signature", "x=*fp32"], "defines no 'nope'"),
        (["compile", "{f}", "--signature", "x=*fp32"], "expected path.py::kernel_name"),
        (["compile", "missing.py::add", "--signature", "x=*fp32"], "no file 'missing.py'"),
        (["compile", "{f}::add"], "--signature is required"),
    ],
)
def test_cli_errors_are_one_line(fake_compile, kernel_file, capsys, argv, message):
    assert main([a.replace("{f}", str(kernel_file)) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tilelab: error: ") and message in err and err.count("\n") == 1


def test_cli_compile_error_names_the_line(fake_compile, kernel_file, capsys):
    assert main(["compile", f"{kernel_file}::add", "--signature", "x=*fp32", "--const", "FAIL=1"]) == 1
    assert capsys.readouterr().err.startswith("k.py:2: bad thing\n    y = x + 1")


def test_write_report_of_a_compiled_kernel(tmp_path):
    import tilelab.language as tl

    @tilelab.jit
    def scale(x, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n) * 2, mask=offs < n)

    ck = tilelab.compile(scale, signature={"x": "*fp32", "out": "*fp32", "n": "i32"}, constants={"BLOCK": 64})
    path = write_report(ck, tmp_path / "scale.html")
    text = path.read_text()
    assert "scale" in text and "canonicalize" in text and "<html" in text.lower()
