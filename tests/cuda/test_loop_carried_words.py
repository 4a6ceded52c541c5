"""Tiles of 8- and 16-bit elements cross a loop's back edge packed in 32-bit words (``lower_control``).

A GPU register holds 32 bits whatever the value's width, so a loop carrying a 16-bit tile as one phi per
element held twice the registers its data needs (a bf16 row loaded one trip ahead: 16 registers a
thread where 8 words do). The PTX tests compile for sm_90a (no GPU) and read the optimized LLVM IR: no
phi of a sub-word type is left in a loop. The GPU tests run the same kernels against numpy: every
element unpacked where it was packed, in ``for`` and ``while`` loops, for tiles that fill whole words and
for a tile of one element a thread (left unpacked).
"""

import re

import numpy as np
import pytest

import tilelab
import tilelab.language as tl


@tilelab.jit
def running_max_for(x_ptr, out_ptr, n_rows, N: tl.constexpr):
    cols = tl.arange(0, N)
    acc = tl.load(x_ptr + cols)
    for r in range(1, n_rows):
        acc = tl.maximum(acc, tl.load(x_ptr + r * N + cols))
    tl.store(out_ptr + cols, acc)


@tilelab.jit
def running_max_while(x_ptr, out_ptr, n_rows, N: tl.constexpr):
    cols = tl.arange(0, N)
    acc = tl.load(x_ptr + cols)
    r = 1
    while r < n_rows:
        acc = tl.maximum(acc, tl.load(x_ptr + r * N + cols))
        r += 1
    tl.store(out_ptr + cols, acc)


@tilelab.jit
def masked_row_sums(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    """A row loop as libraries write it: its loads, of ``x``'s type, are taken one trip ahead."""
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in range(0, n_cols, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + offs, mask=offs < n_cols, other=0.0).to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc))


KERNELS = {"for": running_max_for, "while": running_max_while}
NUMPY = {"f16": np.float16, "i8": np.int8, "i16": np.int16, "u8": np.uint8}


def _llir(kernel, sig, consts, **geometry) -> str:
    ck = tilelab.compile(kernel, sig, consts, target="cuda:sm_90a", cache=False, snapshots=False, **geometry)
    return ck.asm["llir"]


@pytest.mark.parametrize("loop", sorted(KERNELS))
@pytest.mark.parametrize("elem", ["f16", "bf16", "i8", "i16"])
def test_a_carried_tile_crosses_the_back_edge_in_words(loop, elem):
    sig = {"x_ptr": f"*{elem}", "out_ptr": f"*{elem}", "n_rows": "i32"}
    llir = _llir(KERNELS[loop], sig, {"N": 1024}, num_warps=4)  # 8 elements a thread
    phis = re.findall(r"= phi (\w+)", llir)
    assert phis and not {"half", "bfloat", "i16", "i8"} & set(phis), phis
    bits = 8 if elem.endswith("8") else 16
    assert phis.count("i32") >= 8 * bits // 32  # the words, besides the row counter


def test_loads_taken_one_trip_ahead_are_carried_as_the_loaded_words():
    sig = {"x_ptr": "*bf16", "out_ptr": "*f32", "n_cols": "i32", "stride": "i32"}
    llir = _llir(masked_row_sums, sig, {"BLOCK": 4096}, num_warps=8, num_stages=3, divisibility={"stride": 16})
    assert not re.search(r"= phi (half|bfloat|i16)", llir)
    assert len(re.findall(r"= phi i32", llir)) >= 8


@pytest.mark.gpu
@pytest.mark.parametrize("loop", sorted(KERNELS))
@pytest.mark.parametrize("elem", sorted(NUMPY))
@pytest.mark.parametrize("n, num_warps", [(1024, 4), (32, 1)], ids=["words", "one-a-thread"])
def test_values_after_the_loop(rng, loop, elem, n, num_warps):
    import tilelab.cuda as tc

    dtype = NUMPY[elem]
    rows = 7
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, size=(rows, n), endpoint=True).astype(dtype)
    else:
        x = rng.standard_normal((rows, n)).astype(dtype)
    dx, out = tc.to_device(x), tc.to_device(np.zeros(n, dtype))
    KERNELS[loop][(1,)](dx, out, rows, N=n, num_warps=num_warps)
    np.testing.assert_array_equal(out.numpy(), x.max(axis=0))


@pytest.mark.gpu
@pytest.mark.parametrize("num_stages", [1, 3])
def test_row_sums_with_loads_one_trip_ahead(rng, num_stages):
    import tilelab.cuda as tc

    m, n = 64, 5000  # a masked tail in the last trip
    x = rng.standard_normal((m, n)).astype(np.float16)
    out = tc.to_device(np.full(m, np.nan, np.float32))
    masked_row_sums[(m,)](tc.to_device(x), out, n, n, BLOCK=1024, num_warps=4, num_stages=num_stages)
    np.testing.assert_allclose(out.numpy(), x.astype(np.float32).sum(axis=1), rtol=1e-4, atol=1e-3)
