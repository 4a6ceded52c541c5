"""f32 tiles narrowed to f16 two at a time (``cvt.rn.f16x2.f32``), also where LLVM would split the pairs.

A loop's f32 accumulator converted after the loop is a ``phi`` of the zeros it started from and the
loop's last sum; narrowed element by element, LLVM moves each ``fptrunc`` into the loop's exit block,
away from the store that packs the halves, and each half is converted alone and packed with a move.
The lowering narrows pairs with one vector ``fptrunc`` (``hooks._f16_pairs``), which stays whole. The
values are checked on every backend, the zero-trip loop and a masked tail included.
"""

from __future__ import annotations

import numpy as np
import pytest

import tilelab
import tilelab.language as tl


@tilelab.jit
def column_sums_f16(x_ptr, out_ptr, rows, n, stride, BR: tl.constexpr, BN: tl.constexpr):
    cols = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([BR, BN], dtype=tl.float32)
    for r in range(0, rows, BR):
        rr = r + tl.arange(0, BR)
        mask = (rr[:, None] < rows) & (cols[None, :] < n)
        acc += tl.load(x_ptr + rr[:, None] * stride + cols[None, :], mask=mask, other=0.0)
    out = tl.sum(acc, axis=0)
    tl.store(out_ptr + cols, out.to(tl.float16), mask=cols < n)
    # the accumulator itself, narrowed after the loop (the phi LLVM would split)
    rr = tl.arange(0, BR)
    tl.store(out_ptr + n + rr[:, None] * n + cols[None, :], acc.to(out_ptr.dtype.element_ty), mask=cols[None, :] < n)


SIG = {"x_ptr": "*fp32", "out_ptr": "*fp16", "rows": "i32", "n": "i32", "stride": "i32"}


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_loop_accumulator_narrows_in_pairs(arch):
    ck = tilelab.compile(
        column_sums_f16, SIG, {"BR": 8, "BN": 128}, target=f"cuda:{arch}", num_warps=4, snapshots=False, cache=False
    )
    ptx = ck.asm["ptx"]
    assert "cvt.rn.f16x2.f32" in ptx
    assert "cvt.rn.f16.f32" not in ptx  # no half converted alone
    assert "mov.b16" not in ptx  # nor packed with a move


@pytest.mark.parametrize("rows", [0, 5, 37])
def test_narrowed_pairs_are_the_rounded_values(backend, dev, rng, rows):
    n, stride, br, bn = 200, 256, 8, 128
    x = (rng.standard_normal((max(rows, 1), stride)) * 100).astype(np.float32)
    out = dev.put(np.full(n + br * n, np.nan, np.float16))
    grid = ((n + bn - 1) // bn,)
    column_sums_f16[grid](dev.put(x), out, rows, n, stride, BR=br, BN=bn, target=backend)
    got = dev.get(out)
    xs = x[:rows, :n]
    partial = np.zeros((br, n), np.float32)  # the kernel's f32 sums, in its order
    for r in range(0, rows, br):
        block = xs[r : r + br]
        partial[: len(block)] += block
    np.testing.assert_allclose(got[:n].astype(np.float64), xs.astype(np.float64).sum(axis=0), rtol=2e-3, atol=1e-2)
    np.testing.assert_array_equal(got[n:].reshape(br, n), partial.astype(np.float16))  # rounded to nearest even
