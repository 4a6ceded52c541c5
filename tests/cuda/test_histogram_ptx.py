"""``tl.histogram`` on the GPU (no GPU needed): one predicated shared-memory increment per element a thread
holds, not a compare of every element with every bin (what the histogram was before it had an op of its own:
1,024 x 256 compares for the tile below, 4,096 SASS instructions)."""

from __future__ import annotations

import re

import pytest

import tilelab
from tests.kernels.test_histogram import tile_histogram_kernel

SIG = {"x_ptr": "*i32", "out_ptr": "*i32"}


def ptx(bins: int, block: int, warps: int = 4) -> str:
    consts = {"BINS": bins, "BLOCK": block}
    return tilelab.compile(tile_histogram_kernel, SIG, consts, target="cuda:sm_90a", num_warps=warps, cache=False).asm[
        "ptx"
    ]


def instructions(text: str) -> int:
    return sum(1 for line in text.splitlines() if re.match(r"\s+@?%?\w*\s*[a-z]+[a-z0-9.]*\s", line))


@pytest.mark.parametrize("bins", [16, 256, 1024])
def test_one_shared_increment_per_element(bins):
    text = ptx(bins, 1024)  # 8 values a thread
    assert text.count("red.shared.add.u32") == 8
    assert "setp.eq" not in text.split("red.shared.add.u32")[0].split("bar.sync")[-1]  # no compare with bins
    assert instructions(text) < 250


def test_copies_of_an_element_count_once():
    """16 values over 128 threads: eight threads hold each; the increments are predicated on the owner."""
    text = ptx(16, 16)
    assert text.count("red.shared.add.u32") == 1
    pred = re.search(r"@(%p\d+) red\.shared\.add\.u32", text).group(1)
    both = re.search(rf"and\.pred\s+{pred}, (%p\d+), (%p\d+);", text)  # in range, and the owner
    assert both and any(re.search(rf"setp\.eq\.b32\s+{p}, %r\d+, 0;", text) for p in both.groups())
