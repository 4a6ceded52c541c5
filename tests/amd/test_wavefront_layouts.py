"""Layouts over 64-lane wavefronts: the default tile layout covers each tile, with 64 lanes per warp."""

import numpy as np
import pytest

from tilelab.compiler.layouts import LANE, hardware_grid
from tilelab.compiler.layouts.indexing import flat_of, lanes_of, needed_indices
from tilelab.compiler.passes.assign_layouts import tile_layout


@pytest.mark.parametrize("shape", [(1024,), (32, 64), (64, 32), (16, 16), (8, 4, 32)])
def test_every_element_is_held_and_big_tiles_exactly_once(shape):
    layout = tile_layout(shape, 4, warp_size=64)
    assert layout.in_size(LANE) == 64 and lanes_of(layout) == 64
    held = flat_of(layout, layout.apply(**hardware_grid(layout, 4)))  # (warp, lane, register) -> element
    assert held.shape[:2] == (4, 64)
    counts = np.bincount(held.ravel(), minlength=int(np.prod(shape)))
    assert counts.min() >= 1  # nothing left out
    if np.prod(shape) >= 4 * 64:  # enough elements for every thread: no copies
        assert counts.max() == 1


def test_gather_indices_cover_64_lanes():
    layout = tile_layout((512,), 2, warp_size=64)
    needed = needed_indices(layout, 2, lambda i: i)
    assert needed.shape == (2, 64, 4) and sorted(needed.ravel().tolist()) == list(range(512))


def test_docstring_examples_of_the_warp_size_and_the_register_line():
    import doctest

    from tilelab.compiler.passes import assign_layouts
    from tilelab.viz import resources

    for module in (assign_layouts, resources):
        assert doctest.testmod(module).failed == 0
