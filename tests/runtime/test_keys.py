"""The compiler fingerprint in every cache key: which edits of the sources change it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tilelab
from tilelab.runtime.sources import compiler_fingerprint, source_fingerprint


@pytest.fixture
def sources(tmp_path) -> Path:
    """A small package tree: sources, byte code and a file that is not Python."""
    root = tmp_path / "pkg"
    (root / "passes" / "__pycache__").mkdir(parents=True)
    (root / "__init__.py").write_text("x = 1\n")
    (root / "passes" / "cse.py").write_text("def run(module):\n    return False\n")
    (root / "passes" / "__pycache__" / "cse.cpython-311.pyc").write_bytes(b"\0\1")
    (root / "notes.txt").write_text("notes")
    return root


def fingerprint(root: Path, version: str = "1.0") -> str:
    return source_fingerprint(str(root), version)


def later_mtime(path: Path) -> None:
    """Move ``path``'s modification time one second on (a same-size edit within one clock tick would not)."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_fingerprint_ignores_byte_code_and_other_files(sources):
    before = fingerprint(sources)
    (sources / "notes.txt").write_text("other notes")
    (sources / "passes" / "__pycache__" / "cse.cpython-311.pyc").write_bytes(b"\3")
    (sources / "passes" / "__pycache__" / "generated.py").write_text("y = 2\n")
    assert fingerprint(sources) == before


@pytest.mark.parametrize("edit", ["resize", "same_size", "add", "rename", "remove", "version"])
def test_fingerprint_changes_with_any_source_edit(sources, edit):
    before = fingerprint(sources)
    cse = sources / "passes" / "cse.py"
    if edit == "resize":
        cse.write_text(cse.read_text() + "# a comment\n")
    elif edit == "same_size":
        cse.write_text(cse.read_text().replace("False", "Fals0"))
        later_mtime(cse)
    elif edit == "add":
        (sources / "passes" / "dce.py").write_text("")
    elif edit == "rename":
        cse.rename(sources / "passes" / "cse2.py")
    elif edit == "remove":
        cse.unlink()
    after = fingerprint(sources, "1.1" if edit == "version" else "1.0")
    assert after != before


def test_compiler_fingerprint_is_tilelab_sources_and_version():
    root = Path(tilelab.__file__).parent
    assert compiler_fingerprint() == fingerprint(root, tilelab.__version__)


def test_an_edited_compiler_source_changes_the_cache_key(tmp_path):
    """A copy of tilelab, imported by fresh processes: editing one of its passes changes every cache key."""
    shutil.copytree(Path(tilelab.__file__).parent, tmp_path / "tilelab", ignore=shutil.ignore_patterns("__pycache__"))
    code = (
        "import tilelab\n"
        "from tilelab.compiler.options import CompileOptions\n"
        "from tilelab.runtime.keys import Specialization\n"
        f"assert tilelab.__file__.startswith({str(tmp_path)!r}), tilelab.__file__\n"
        "def kern(x): pass\n"
        "print(Specialization.of({'x': '*f32'}, {}, {'x': 16}, CompileOptions()).digest(kern))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(tmp_path))

    def key() -> str:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    first = key()
    assert key() == first  # nothing edited: the same key in another process
    cse = tmp_path / "tilelab" / "compiler" / "passes" / "cse.py"
    cse.write_text(cse.read_text() + "# edited\n")
    assert key() != first
