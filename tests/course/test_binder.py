"""The Binder environment builds from binder/ in a fresh plain venv and runs notebooks 00 and 01 there."""

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

RUN_NOTEBOOKS = """
import nbformat, sys
from nbclient import NotebookClient
for path in sys.argv[1:]:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3").execute()
    expected = [c for c in nb.cells if "raises-exception" in c.get("metadata", {}).get("tags", [])]
    errors = [o for c in nb.cells if c not in expected for o in c.get("outputs", []) if o.output_type == "error"]
    if errors:
        sys.exit(f"{path}: {errors[0].ename}: {errors[0].evalue}")
"""


@pytest.mark.slow
def test_binder_environment_runs_the_tour_and_notebook_01(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(ROOT, repo, ignore=shutil.ignore_patterns(".git", "*.egg-info", "__pycache__", "test-output"))
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)  # a plain venv: nothing from this interpreter's site-packages
    python = str(env_dir / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(HOME=str(tmp_path / "home"), PATH=f"{env_dir / 'bin'}{os.pathsep}{env['PATH']}")
    (tmp_path / "home").mkdir()

    def run(*cmd):
        subprocess.run(cmd, cwd=repo, env=env, check=True, timeout=1200)

    run(python, "-m", "pip", "install", "--quiet", "-r", "binder/requirements.txt")
    run("bash", "binder/postBuild")
    config = (tmp_path / "home" / ".jupyter" / "jupyter_server_config.py").read_text()
    assert 'root_dir = "notebooks"' in config
    run("binder/start", python, "-c", RUN_NOTEBOOKS, "notebooks/00_tour.ipynb", "notebooks/01_vector_add.ipynb")
    assert (
        sys.prefix
        not in subprocess.run(
            [python, "-c", "import tilelab; print(tilelab.__file__)"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
