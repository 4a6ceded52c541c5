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
    assert "PTX: no GPU compile of this kernel" in text


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


# --------------------------------------------------------------------------- the README's commands, as written


def _readme_commands() -> list[str]:
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", readme, flags=re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.startswith("tilelab ")]


def test_readme_cli_commands_work_as_written_without_a_gpu(tmp_path, monkeypatch, capsys):
    import html
    import re
    import shlex
    from pathlib import Path

    from tilelab.cli import main

    commands = _readme_commands()
    assert len(commands) == 2 and all("examples/add.py::add" in c for c in commands)
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    compile_cmd = shlex.split(commands[0])[1:]
    assert main(compile_cmd) == 0
    ptx = capsys.readouterr().out
    assert ".visible .entry add(" in ptx and ".target sm_90" in ptx
    report_cmd = shlex.split(commands[1])[1:]
    report_cmd[report_cmd.index("-o") + 1] = str(tmp_path / "add.html")
    assert main(report_cmd) == 0
    page = (tmp_path / "add.html").read_text()
    text = html.unescape(re.sub(r"<[^>]+>", "", page))  # the highlighted code as plain text
    assert "runs on cpu" in page and "from cuda:sm_90" in page and ".visible .entry add(" in text


def test_binder_badge_opens_the_tour_under_postbuilds_root_dir():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    badge = re.search(r"urlpath=lab/tree/([^)\s]+)\)", (root / "README.md").read_text())[1]
    root_dir = re.search(r'root_dir = "([^"]+)"', (root / "binder" / "postBuild").read_text())[1]
    assert (root / root_dir / badge).is_file() and badge == "00_tour.ipynb"


def test_scripts_lab_installs_only_when_something_changed(tmp_path):
    import os
    import shutil
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(root / "scripts" / "lab", repo / "scripts" / "lab")
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    log = tmp_path / "calls.log"
    fake = tmp_path / "python"  # records what scripts/lab asks of the interpreter
    fake.write_text(f'#!/usr/bin/env bash\necho "$*" >> {log}\n[ "$1" = -c ] && echo fake-python 3.11\nexit 0\n')
    fake.chmod(0o755)
    env = dict(os.environ, PYTHON=str(fake))

    def installs() -> int:
        subprocess.run(["bash", str(repo / "scripts" / "lab")], env=env, check=True, capture_output=True)
        return log.read_text().count("-m pip install")

    assert installs() == 1
    assert installs() == 1  # nothing changed: no reinstall
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\nversion = '2'\n")
    assert installs() == 2
