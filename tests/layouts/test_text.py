"""Layouts print as IR text and parse back to the same map, inside tensor types too."""

import pytest

from tilelab.compiler.ir import types as T
from tilelab.compiler.ir.ops.gpu import SHARED_IN_DIM
from tilelab.compiler.layouts import (
    LinearLayout,
    blocked,
    dot_operand,
    mma_m16n8k16_accumulator,
    nvmma_shared,
    parse_layout,
    slice_layout,
    swizzled_shared,
)
from tilelab.compiler.layouts.distributed import wgmma_accumulator
from tilelab.compiler.layouts.linear import OFFSET

ACC = mma_m16n8k16_accumulator([64, 32], [2, 2])
WGMMA = wgmma_accumulator([128, 128], [8, 1], 128)
PARENT = blocked([32, 64], [1, 4], [4, 8], [4, 1], [1, 0])
CASES = [
    blocked([64, 64], [1, 4], [4, 8], [2, 2], [1, 0]),
    blocked([1024], [4], [32], [4], [0]),
    ACC,
    dot_operand(ACC, 0, 2, k=32),
    dot_operand(ACC, 1, 2, k=32),
    slice_layout(PARENT, 0),
    slice_layout(PARENT, 1),
    slice_layout(ACC, 1),
    WGMMA,
    slice_layout(WGMMA, 1),
    slice_layout(WGMMA, 0),
    dot_operand(WGMMA, 0, 2, k=64),  # wgmma's A in registers
    dot_operand(wgmma_accumulator([64, 256], [4, 2], 128), 0, 2, k=32),  # A shared by side-by-side warpgroups
    swizzled_shared([64, 64], 8, 1, 8, [1, 0]),
    nvmma_shared([32, 64], 2),
    LinearLayout({"register": [[0, 1]], "lane": [[1, 0], [2, 1]]}, [4, 2]),
]


@pytest.mark.parametrize("layout", CASES, ids=lambda L: str(L).split("<")[0])
def test_round_trip(layout):
    back = parse_layout(str(layout), layout.shape)
    assert back == layout and str(back) == str(layout)


def test_layout_in_a_tensor_type():
    L = blocked([128], [4], [32], [1], [0])
    t = T.TensorType((128,), T.f32, L)
    assert str(t) == f"tensor<128xf32, {L}>"
    assert t == T.TensorType((128,), T.f32, blocked([128], [4], [32], [1], [0])) and hash(t) == hash(t.with_layout(L))


def test_parse_errors():
    with pytest.raises(ValueError, match="not a layout"):
        parse_layout("blocked", [4])
    with pytest.raises(ValueError, match="unknown layout #mfma"):
        parse_layout("#mfma<>", [4])


def test_the_ir_names_the_shared_in_dim_as_the_layouts_do():
    assert SHARED_IN_DIM == OFFSET


def test_each_text_and_shape_is_parsed_once():
    """Layouts are values: the same text for the same shape gives the same object (a module names a few, often)."""
    text = "#blocked<sizePerThread=[1, 4], threadsPerWarp=[8, 4], warpsPerCTA=[4, 1], order=[1, 0]>"
    first = parse_layout(text, [64, 32])
    assert parse_layout(text, (64, 32)) is first
    other = parse_layout(text, [128, 32])
    assert other is not first and other.shape == (128, 32) and str(other) == text
