"""Grid forms: tuples, lists, ints, callables of meta; bad grids name the problem."""

from __future__ import annotations

import numpy as np
import pytest

from tilelab.runtime.errors import LaunchError
from tilelab.runtime.grid import normalize_grid

from .kernels import add


@pytest.mark.parametrize(
    "grid, expected",
    [
        ((4,), (4, 1, 1)),
        ([2, 3], (2, 3, 1)),
        ((2, 3, 5), (2, 3, 5)),
        (7, (7, 1, 1)),
        ((np.int64(3),), (3, 1, 1)),
        ((0,), (0, 1, 1)),
    ],
)
def test_grid_forms(grid, expected):
    assert normalize_grid(grid, {}, "k") == expected


def test_callable_grid_receives_arguments_and_constexprs():
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (meta["n"] // meta["BLOCK"],)

    assert normalize_grid(grid, {"n": 1024, "BLOCK": 128}, "k") == (8, 1, 1)
    assert seen == {"n": 1024, "BLOCK": 128}


@pytest.mark.parametrize(
    "grid, message",
    [
        ((), r"add\(\): grid must be a tuple of 1 to 3 ints"),
        ((1, 1, 1, 1), r"grid must be a tuple of 1 to 3 ints"),
        ("4", r"grid must be a tuple"),
        ((2.0,), r"grid\[0\] must be an int, got float"),
        ((1, None), r"grid\[1\] must be an int, got NoneType"),
        ((4, -1), r"grid\[1\] must be >= 0, got -1"),
        (lambda meta: "x", r"grid must be a tuple"),
    ],
)
def test_bad_grids_fail_before_compiling(grid, message, builds, rng):
    x = rng.standard_normal(16).astype(np.float32)
    with pytest.raises(LaunchError, match=message):
        add[grid](x, x, x.copy(), 16, BLOCK=16)
    assert builds == []


def test_zero_programs_launch_nothing(rng, poison):
    x = rng.standard_normal(16).astype(np.float32)
    out = poison(np.empty_like(x))
    add[(0,)](x, x, out, 16, BLOCK=16)
    assert np.isnan(out).all()


def test_one_launcher_per_int_grid_and_equal_looking_grids_still_checked(rng):
    x = rng.standard_normal(16).astype(np.float32)
    assert add[(2,)] is add[(2,)] and add[(2,)] is not add[(2, 1)]
    add[(2,)](x, x, x.copy(), 16, BLOCK=16)
    for grid in ((2.0,), (True,)):  # equal to (2,) / (1,) as dict keys, yet not int grids
        with pytest.raises(LaunchError, match=r"grid\[0\] must be an int"):
            add[grid](x, x, x.copy(), 16, BLOCK=16)
