"""Coalescing numbers on cases computed by hand, from layouts and from interpreter traces."""

import numpy as np
import pytest

import tilelab
from tests.viz import kernels
from tilelab.compiler.analysis.memory_access import access_model
from tilelab.compiler.layouts import blocked, default_blocked
from tilelab.viz.plugins.coalescing import analyze_access, kernel_accesses
from tilelab.viz.plugins.launch import set_launch


def _addr(rng, n, stride, elem_bytes, base=None):
    base = int(rng.integers(0, 1 << 20)) * 128 if base is None else base
    return base + elem_bytes * stride * np.arange(n, dtype=np.int64)


def test_unit_stride_f32_scalar_is_4_sectors_per_request(rng):
    layout = default_blocked([1024], num_warps=4)
    cost = analyze_access(_addr(rng, 1024, 1, 4), None, layout, 4, vector_elems=1)
    assert (cost.vector_label, cost.sectors_per_request, cost.ideal_per_request) == ("v1", 4.0, 4)
    assert cost.requests == 1024 // 32 and cost.efficiency == 1.0 and cost.coalesced


def test_unit_stride_f32_v4_is_16_sectors_per_request_and_agrees_with_access_model(rng):
    from tilelab.compiler.analysis import AxisInfo

    layout = blocked([1024], [4], [32], [4], [0])
    addr = _addr(rng, 1024, 1, 4)
    cost = analyze_access(addr, None, layout, 4, vector_elems=4)
    assert (cost.vector_label, cost.sectors_per_request, cost.efficiency) == ("v4", 16.0, 1.0)
    ref = access_model(AxisInfo((1024,), (16,), (1,)), layout, 4, addr)
    assert ref.sectors.sum() == cost.sectors and ref.vector_elems == cost.vector_elems


def test_stride_two_f32_moves_twice_the_sectors(rng):
    cost = analyze_access(_addr(rng, 256, 2, 4), None, default_blocked([256], 4), 4)
    assert cost.sectors_per_request == 8.0 and cost.efficiency == 0.5 and not cost.coalesced


def test_transposed_access_is_32_sectors_per_request():
    rows, cols = np.indices((32, 32))
    addr = 4 * (rows + 32 * cols)  # the fastest dim of the layout walks down memory columns
    cost = analyze_access(addr, None, default_blocked([32, 32], 4), 4)
    assert cost.sectors_per_request == 32.0 and cost.efficiency == pytest.approx(1 / 8) and not cost.coalesced


def test_masked_tail_counts_only_active_lanes(rng):
    n = 200  # 256-element tile, 4 warps x 2 registers: requests of 32, 32, 32, 32 | 32, 32, 8, 0 elements
    mask = np.arange(256) < n
    cost = analyze_access(_addr(rng, 256, 1, 4), mask, default_blocked([256], 4), 4)
    assert cost.requests == 7 and cost.sectors == 4 * 6 + 1
    assert cost.efficiency == 1.0 and cost.coalesced
    assert np.array_equal(cost.active, mask)


def test_f16_v8_is_16_sectors_per_request(rng):
    layout = blocked([2048], [8], [32], [4], [0])
    cost = analyze_access(_addr(rng, 2048, 1, 2), None, layout, 2, vector_elems=8)
    assert (cost.vector_label, cost.sectors_per_request, cost.ideal_per_request, cost.efficiency) == ("v8", 16.0, 16, 1)


def test_heatmap_tiles_name_the_owning_thread(rng):
    layout = blocked([64], [2], [32], [1], [0])
    cost = analyze_access(_addr(rng, 64, 1, 4), None, layout, 4, vector_elems=2)
    assert cost.thread.tolist() == [i // 2 for i in range(64)]


def _line_of(text):
    lines = open(kernels.__file__).read().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if text in line)


def test_kernel_vector_add_traced_with_a_given_launch_and_masked_tail(rng):
    ck = kernels.compile_add(block=256, n_divisible=False)
    n = 256 + int(rng.integers(1, 31)) * 4  # program 1 holds a tail of n - 256 elements
    x, y, out = (rng.standard_normal(512).astype(np.float32) for _ in range(3))
    set_launch(ck, (2,), x, y, out, n)
    rows, launch = kernel_accesses(ck, program=(1, 0, 0))
    assert not launch.synthetic and [r.access.kind for r in rows] == ["load", "load", "store"]
    for r in rows:
        assert r.cost.vector_label == "v1" and r.cost.coalesced
        assert r.cost.asked_bytes == 4 * (n - 256) and "tl.store" in r.source
        assert r.access.line == _line_of("tl.store(out + offs, tl.load(x + offs, mask=mask)")


def test_kernel_accesses_flag_stride_and_transpose_with_their_lines():
    ck = tilelab.compile(
        kernels.strided, signature={"x": "*fp32", "out": "*fp32"}, constants={"BLOCK": 256}, cache=False
    )
    rows, launch = kernel_accesses(ck)
    assert launch.synthetic and "stand-in" in launch.note
    load, store = rows
    assert not load.cost.coalesced and load.cost.sectors_per_request == 8.0 and "2 * offs" in load.source
    assert store.cost.coalesced and store.cost.vector_label == "v2"  # 256 elements over 128 threads
    ck = tilelab.compile(kernels.transposed, signature={"x": "*fp32", "out": "*fp32"}, constants={"B": 32}, cache=False)
    load, store = kernel_accesses(ck)[0]
    # the predicted layout follows the contiguous dim: the transposed read becomes coalesced
    assert load.layout.params["order"] == (0, 1) and load.cost.coalesced and "predicted" in load.layout_origin
