"""Launch grids: a tuple of 1-3 program counts, or a function of the launch's meta-parameters.

Like Triton, ``grid`` is ``(n0,)``, ``(n0, n1)`` or ``(n0, n1, n2)``, or a callable that
receives ``meta`` (the bound arguments and constexprs, by name) and returns such a tuple::

    normalize_grid(lambda meta: (cdiv(meta["n"], meta["BLOCK"]),), {"n": 1000, "BLOCK": 128}, "add")
    # (8, 1, 1)

A count of 0 launches nothing (an empty input), as in Triton. The largest grid is CUDA's,
``MAX_GRID`` = (2**31 - 1, 65535, 65535), on every target: a CPU launch of ``(2**64,)``
would otherwise wrap or run for ages instead of failing at once.
"""

from __future__ import annotations

import numbers

from .errors import LaunchError

#: the largest program counts along x, y and z (CUDA's grid limits)
MAX_GRID = (2**31 - 1, 65535, 65535)


def grid_dims(grid) -> tuple[int, int, int] | None:
    """``(n0, n1, n2)`` of a tuple of 1 to 3 positive ints, else ``None`` (then ``normalize_grid`` decides).

    The warm launch path's check: a few ``type(n) is int`` tests, no loop, no generator. An
    empty grid (a 0) also answers ``None``, so that a ``grid_dims`` result always launches.
    """
    if type(grid) is not tuple:
        return None
    size = len(grid)
    if size == 1:
        (n0,) = grid
        return (n0, 1, 1) if type(n0) is int and 0 < n0 <= 2147483647 else None
    if size == 2:
        n0, n1 = grid
        ok = type(n0) is int and type(n1) is int and 0 < n0 <= 2147483647 and 0 < n1 <= 65535
        return (n0, n1, 1) if ok else None
    if size == 3 and type(grid[0]) is int and type(grid[1]) is int and type(grid[2]) is int and min(grid) > 0:
        return grid if grid[0] <= 2147483647 and grid[1] <= 65535 and grid[2] <= 65535 else None
    return None


def normalize_grid(grid, meta: dict, kernel: str) -> tuple[int, int, int]:
    """The grid as three non-negative ints; ``LaunchError`` names what is wrong."""
    if grid_dims(grid) is not None:
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
        if n > MAX_GRID[i]:
            raise LaunchError(f"{kernel}(): grid[{i}] = {n} is over the limit of {MAX_GRID[i]} programs (as on CUDA)")
        dims.append(int(n))
    return tuple(dims + [1] * (3 - len(dims)))


def launch_dims(grid, error) -> tuple[int, int, int]:
    """The ``(n0, n1, n2)`` a target's launcher runs: 1 to 3 non-negative sizes, padded with 1s.

    ``error(message)`` makes the exception raised for anything else (each target raises its own
    ``KernelRuntimeError``)::

        launch_dims([4], KernelRuntimeError)   # (4, 1, 1)
    """
    dims = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
    if not 1 <= len(dims) <= 3 or any(int(d) < 0 for d in dims):
        raise error(f"launch grid {grid!r}: expected 1 to 3 non-negative sizes")
    if any(int(d) > limit for d, limit in zip(dims, MAX_GRID)):
        raise error(f"launch grid {grid!r}: over the limit of {MAX_GRID} programs (as on CUDA)")
    dims = tuple(int(d) for d in dims)
    return dims + (1,) * (3 - len(dims))
