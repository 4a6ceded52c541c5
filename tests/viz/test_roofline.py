"""Roofline arithmetic (vector add, tiled matmul), ceilings storage, and measured points."""

import json

import pytest

from tests.viz import kernels
from tilelab.viz.plugins import roofline


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELAB_CACHE_DIR", str(tmp_path))
    roofline.clear_measurements()
    yield tmp_path
    roofline.clear_measurements()


def test_vector_add_f32_is_one_flop_per_twelve_bytes(rng):
    programs = int(rng.integers(2, 64))
    point = roofline.count_point(kernels.compile_add(block=1024), grid=(programs,))
    assert point.cost.flops == 1024 * programs and point.cost.bytes == 12 * 1024 * programs
    assert point.intensity == pytest.approx(1 / 12)


def test_tiled_matmul_counts_2mnk_flops_and_tile_traffic():
    bm = bn = 64
    bk = 32
    gm, gn, k = 3, 2, 256
    point = roofline.count_point(kernels.compile_matmul(bm, bn, bk), grid=(gm, gn), args={"K": k})
    m, n = gm * bm, gn * bn
    # 2MNK: canonicalize folds each K step's `acc +=` into its dot (the dot accumulates)
    flops = 2 * m * n * k
    assert point.cost.flops == flops
    loads = gm * gn * (k // bk) * (bm * bk + bk * bn) * 2  # f16 tiles of A and B per K step
    assert point.cost.bytes == loads + m * n * 4
    assert point.intensity == pytest.approx(flops / (loads + m * n * 4))


def test_defaults_until_measured_then_stored_per_device(cache_dir, rng):
    ceil = roofline.load_ceilings("cpu")
    assert not ceil.measured and ceil.device.startswith("cpu:")
    bw, peak = rng.uniform(1, 100, 2)
    roofline.save_ceilings(roofline.Ceilings(ceil.device, bw, peak))
    roofline.save_ceilings(roofline.Ceilings("cuda:other", 1.0, 2.0, 3.0))
    again = roofline.load_ceilings("cpu")
    assert again.measured and (again.bandwidth_gbs, again.peak_gflops) == (bw, peak)
    stored = json.loads((cache_dir / roofline.FILE_NAME).read_text())
    assert set(stored) == {ceil.device, "cuda:other"}
    assert again.attainable(1e-3) == pytest.approx(bw * 1e-3) and again.attainable(1e6) == peak


def test_recorded_times_place_kernels_and_the_table_says_how():
    add, mm = kernels.compile_add(), kernels.compile_matmul()
    assert "not measured" in dict(roofline.cost_rows(add))["time"]
    p = roofline.record(add, 2e-3, grid=(8,))
    roofline.record(add, 1e-3, grid=(8,))  # replaces the first
    roofline.record(mm, 1e-3, grid=(2, 2), args={"K": 64})
    assert len(roofline.measured_points("cpu")) == 2 and p.gflops == pytest.approx(8 * 1024 / 2e-3 / 1e9)
    rows = dict(roofline.cost_rows(add))
    assert "GFLOP/s" in rows["time"] and "of the roof" in rows["time"] and "defaults" in rows["ceilings"]
    fig = roofline.roofline_figure(add)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "add [8]" in labels and "matmul [2, 2]" in labels
    assert fig.axes[0].get_xlabel().startswith("arithmetic intensity")


def test_cuda_ir_times_the_host_not_a_gpu():
    """``cuda-ir`` runs the CUDA passes' IR on the host's interpreter: its points belong on the CPU's roofline."""
    assert roofline.device_key("cuda-ir").startswith("cpu:")
    assert roofline.device_key("cuda-ir:sm_80") == roofline.device_key("cpu")
