"""Layouts that ``join``, ``split`` and ``reshape`` derive from their source: every element stays in its thread."""

import numpy as np

from tilelab.compiler.layouts import REGISTER, joined_layout, reshaped_layout, split_layout
from tilelab.compiler.layouts.indexing import flat_of, hardware_grid

from .test_shared_and_queries import random_blocked


def held(layout, num_warps):
    """The row-major index of the element each (warp, lane, register) holds."""
    grid = {d: a for d, a in hardware_grid(layout, num_warps).items() if d in layout.in_dims}
    return flat_of(layout, layout.apply(**grid))


def test_reshape_keeps_each_element_where_it_was(rng):
    for _ in range(40):
        layout = random_blocked(rng, [16, 32] if rng.random() < 0.5 else [512])
        shape = [[512], [32, 16], [8, 4, 16], [2, 256]][int(rng.integers(0, 4))]
        warps = layout.in_size("warp")
        np.testing.assert_array_equal(held(reshaped_layout(layout, shape), warps), held(layout, warps))


def test_join_pairs_each_element_with_its_partner_in_the_next_register(rng):
    for _ in range(40):
        layout = random_blocked(rng, [16, 32] if rng.random() < 0.5 else [256])
        joined = joined_layout(layout)
        warps = layout.in_size("warp")
        before, after = held(layout, warps), held(joined, warps)
        # register 2r + k holds element (i, k) of the [.., 2] result: row-major index 2 * i + k
        np.testing.assert_array_equal(after[..., 0::2], 2 * before)
        np.testing.assert_array_equal(after[..., 1::2], 2 * before + 1)
        assert split_layout(joined) == layout


def test_split_declines_halves_held_by_other_threads():
    lanes_split = joined_layout(random_blocked(np.random.default_rng(0), [64]))
    bases = dict(lanes_split.bases)
    # swap the pair's register bit with the first lane bit: the two halves now sit in neighbouring lanes
    regs, lanes = list(bases[REGISTER]), list(bases["lane"])
    regs[0], lanes[0] = lanes[0], regs[0]
    moved = lanes_split.with_bases(REGISTER, regs).with_bases("lane", lanes)
    assert split_layout(moved) is None
