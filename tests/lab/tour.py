"""The tour notebook as the lab tests run it: on the CPU target, or the interpreter where the CPU target is missing."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
TOUR = ROOT / "notebooks" / "00_tour.ipynb"


def tour_target() -> str:
    """The target the tour runs on here: cpu when the CPU target loads, else interpret."""
    from tilelab.runtime.targets import get_target

    try:
        get_target("cpu")
    except Exception:
        return "interpret"
    return "cpu"


def prepared_tour(directory: Path) -> Path:
    """A copy of the tour in ``directory``, switched to the target this machine has."""
    nb = nbformat.read(TOUR, as_version=4)
    target = tour_target()
    for cell in nb.cells:
        cell.source = cell.source.replace("--target cpu", f"--target {target}").replace(
            'target="cpu"', f'target="{target}"'
        )
    path = Path(directory) / TOUR.name
    nbformat.write(nb, path)
    return path


def kernel_env() -> dict:
    """The environment for a notebook kernel that imports tilelab from this checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p)
    return env
