"""Tile-programming puzzles, easy to hard, each with a numpy spec and a checker.

    import tilelab.puzzles as puzzles

    puzzles.show("copy")        # the statement and the numpy spec
    puzzles.check(copy)         # run ``copy`` on random cases, sanitizer on: PASS, or what is wrong

Reference solutions live in ``tilelab.puzzles.solutions`` (try first, then peek).
"""

import numpy as np

from .checker import PuzzleFailed, Verdict, check, poison, poisoned
from .spec import REGISTRY, Case, Puzzle, cdiv


def names() -> list[str]:
    """The puzzles' names, easy to hard."""
    return sorted(REGISTRY, key=lambda n: REGISTRY[n].level)


def get(name: str) -> Puzzle:
    """The puzzle called ``name``."""
    return REGISTRY[name]


def show(name: str) -> None:
    """Print a puzzle's statement, its call (arguments, constants, grid) and its numpy spec."""
    p = REGISTRY[name]
    case = p.make(np.random.default_rng(0))
    consts = "".join(f", {k}={v}" for k, v in p.constants.items())
    print(f"Puzzle {p.name} (level {p.level})\n\n{p.statement}\n")
    print(f"Launch: {p.name}[grid]({', '.join(case.args)}{consts})   grid has {len(case.grid)} dim(s)")
    print(f"Outputs: {', '.join(p.outputs)}\n\nSpec (numpy):\n{p.spec_source}")


__all__ = ["Case", "Puzzle", "PuzzleFailed", "Verdict", "cdiv", "check", "get", "names", "poison", "poisoned", "show"]
