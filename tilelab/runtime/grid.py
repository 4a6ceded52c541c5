"""Launch grids: a tuple of 1-3 program counts, or a function of the launch's meta-parameters.

Like Triton, ``grid`` is ``(n0,)``, ``(n0, n1)`` or ``(n0, n1, n2)``, or a callable that
receives ``meta`` (the bound arguments and constexprs, by name) and returns such a tuple::

    normalize_grid(lambda meta: (cdiv(meta["n"], meta["BLOCK"]),), {"n": 1000, "BLOCK": 128}, "add")
    # (8, 1, 1)

A count of 0 launches nothing (an empty input), as in Triton.
"""

from __future__ import annotations

import numbers

from .errors import LaunchError


def normalize_grid(grid, meta: dict, kernel: str) -> tuple[int, int, int]:
    """The grid as three non-negative ints; ``LaunchError`` names what is wrong."""
    if type(grid) is tuple and 0 < len(grid) <= 3 and all(type(n) is int and n >= 0 for n in grid):
        return grid + (1,) * (3 - len(grid))  # the common case, checked without the loop below
    if callable(grid):
        grid = grid(meta)
    if isinstance(grid, numbers.Integral):
        grid = (grid,)
    if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3:
        raise LaunchError(f"{kernel}(): grid must be a tuple of 1 to 3 ints or a callable, got {grid!r}")
    dims = []
    for i, n in enumerate(grid):
        if isinstance(n, bool) or not isinstance(n, numbers.Integral):
            raise LaunchError(f"{kernel}(): grid[{i}] must be an int, got {type(n).__name__} {n!r}")
        if n < 0:
            raise LaunchError(f"{kernel}(): grid[{i}] must be >= 0, got {n}")
        dims.append(int(n))
    return tuple(dims + [1] * (3 - len(dims)))
