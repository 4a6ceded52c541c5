"""The memory-access model: vector widths and sectors per warp request, from layouts and addresses."""

import numpy as np
import pytest

from tilelab.compiler.analysis import AxisInfo, access_model, vector_width
from tilelab.compiler.analysis.memory_access import affine_addresses
from tilelab.compiler.layouts import blocked

ALIGNED_1D = AxisInfo((1024,), (16,), (1,))


def sectors_reference(addresses, owner_lists, elem_bytes):
    """Distinct 32-byte segments per request, by brute force over (lane, elements) lists."""
    return len({a // 32 for lane in owner_lists for e in lane for a in (addresses[e], addresses[e] + elem_bytes - 1)})


@pytest.mark.parametrize("spt,per_request", [(4, 16), (1, 4), (2, 8)])
def test_unit_stride_f32(spt, per_request, rng):
    base = 4096 * int(rng.integers(1, 1000))
    addr = affine_addresses([1024], [1], 4, base=base)
    layout = blocked([1024], [spt], [32], [4], [0])
    model = access_model(ALIGNED_1D, layout, 4, addr)
    assert model.vector_elems == spt and model.vector_bytes == 4 * spt
    assert np.all(model.sectors == per_request) and model.sectors_per_request == per_request
    assert model.requests == 4 * (1024 // 128 // spt) and model.efficiency == 1.0


def test_stride_two_touches_more_sectors():
    addr = affine_addresses([1024], [2], 4)
    info = AxisInfo((1,), (16,), (1,))
    scalar = access_model(info, blocked([1024], [1], [32], [4], [0]), 4, addr)
    assert scalar.vector_elems == 1 and scalar.sectors_per_request == 8 and scalar.efficiency == 0.5
    # four elements per thread cannot be one vector: each request takes every 4th element, 32 B apart
    blocked4 = access_model(info, blocked([1024], [4], [32], [4], [0]), 4, addr)
    assert blocked4.vector_elems == 1 and blocked4.sectors_per_request == 32 and blocked4.efficiency == 0.125


def test_misaligned_base_costs_an_extra_sector():
    addr = affine_addresses([128], [1], 4, base=4)  # shifted by one float
    model = access_model(AxisInfo((128,), (4,), (1,)), blocked([128], [1], [32], [4], [0]), 4, addr)
    assert model.vector_elems == 1 and model.sectors_per_request == 5


def test_masked_lanes_touch_nothing():
    addr = affine_addresses([256], [1], 4)
    mask = np.arange(256) < 200
    layout = blocked([256], [4], [32], [2], [0])
    model = access_model(
        AxisInfo((256,), (16,), (1,)), layout, 4, addr, mask=mask, mask_info=AxisInfo((1,), (1,), (8,))
    )
    assert model.sectors.tolist() == [[16], [9]]  # warp 1: elements 128..199 = 288 B
    assert model.useful_bytes == 800


def test_2d_column_access_matches_brute_force(rng):
    rows = int(rng.choice([64, 96, 130]))  # a row pitch in elements
    addr = affine_addresses([32, 32], [rows, 1], 2, base=0)
    layout = blocked([32, 32], [1, 1], [32, 1], [4, 1], [0, 1])  # lanes walk down columns
    model = access_model(AxisInfo((1, 32), (2, 16), (1, 1)), layout, 2, addr)
    coords = layout.coords()
    flat = addr.ravel()
    for w in range(4):
        for i in range(model.sectors.shape[1]):
            owners = [[coords[w, lane, i, 0] * 32 + coords[w, lane, i, 1]] for lane in range(32)]
            assert model.sectors[w, i] == sectors_reference(flat, owners, 2)
    assert model.sectors_per_request == 32  # every row in its own sector


def test_vector_width_limits():
    assert vector_width(AxisInfo((8,), (64,), (1,)), 2) == 8  # 16 bytes of f16
    assert vector_width(AxisInfo((2,), (64,), (1,)), 4) == 2  # contiguity
    assert vector_width(AxisInfo((64,), (8,), (1,)), 4) == 2  # alignment
    assert vector_width(AxisInfo((64,), (16,), (1,)), 8) == 2  # f64: 16 bytes
