"""``tl.dot_scaled`` (Triton's product of microscaled tiles) against numpy, per backend.

Every format on each side, e2m1 packed along K or along M / N, scales of 0 and 255 (NaN, or infinity
with ``fast_math``), an accumulator, a batch dimension; and the errors a wrong call gets, naming its line.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tilelab
import tilelab.language as tl
from tilelab.errors import CompilationError

E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], np.float32)
BITS = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}


def decode(x: np.ndarray, fmt: str, axis: int) -> np.ndarray:
    """The values of an operand's storage: e2m1 bytes unpacked along ``axis`` (low nibble first)."""
    if fmt == "e2m1":
        pair = np.stack([E2M1[x & 0xF], E2M1[x >> 4]], axis=axis + 1)
        shape = list(x.shape)
        shape[axis] *= 2
        return pair.reshape(shape)
    if fmt in BITS:
        return x.view(BITS[fmt]).astype(np.float32)
    return x.astype(np.float32)


def scales(s: np.ndarray, k: int, fast: bool) -> np.ndarray:
    value = (s.astype(np.uint32) << 23).view(np.float32)
    if not fast:
        value = np.where(s == 255, np.float32("nan"), value)
    return np.repeat(value, k // s.shape[-1], axis=-1)


def reference(a, sa, fa, b, sb, fb, k_pack=(True, True), fast=False, acc=None):
    x = decode(a, fa, a.ndim - 1 if k_pack[0] else a.ndim - 2)
    y = decode(b, fb, b.ndim - 2 if k_pack[1] else b.ndim - 1)
    if sa is not None:
        x = x * scales(sa, x.shape[-1], fast)
    if sb is not None:
        y = y * np.swapaxes(scales(sb, y.shape[-2], fast), -1, -2)
    comp = np.float16 if "fp16" in (fa, fb) else ml_dtypes.bfloat16
    with np.errstate(over="ignore", invalid="ignore"):
        x, y = x.astype(comp).astype(np.float64), y.astype(comp).astype(np.float64)
        out = x @ y
    return out if acc is None else out + acc


def operand(rng, fmt, shape):
    if fmt in ("e2m1", "e4m3", "e5m2"):
        x = rng.integers(0, 256, shape).astype(np.uint8)
        if fmt == "e4m3":
            x = np.where(x & 0x7F == 0x7F, x & 0xF0, x).astype(np.uint8)  # no NaN codes
        if fmt == "e5m2":
            x = (x & 0xBB).astype(np.uint8)  # finite, small
        return x
    return rng.standard_normal(shape).astype(np.float16 if fmt == "fp16" else ml_dtypes.bfloat16)


@tilelab.jit
def scaled_kernel(a_ptr, sa_ptr, b_ptr, sb_ptr, out_ptr, acc_ptr, M: tl.constexpr, N: tl.constexpr,
                  K: tl.constexpr, FA: tl.constexpr, FB: tl.constexpr, PACK_A: tl.constexpr, PACK_B: tl.constexpr,
                  SCALE_A: tl.constexpr, SCALE_B: tl.constexpr, FAST: tl.constexpr, ACC: tl.constexpr):  # fmt: skip
    # storage shapes: a [AM, AK], b [BK, BN]; e2m1 halves the packed dimension
    AM: tl.constexpr = M // 2 if FA == "e2m1" and not PACK_A else M
    AK: tl.constexpr = K // 2 if FA == "e2m1" and PACK_A else K
    BK: tl.constexpr = K // 2 if FB == "e2m1" and PACK_B else K
    BN: tl.constexpr = N // 2 if FB == "e2m1" and not PACK_B else N
    a = tl.load(a_ptr + tl.arange(0, AM)[:, None] * AK + tl.arange(0, AK)[None, :])
    b = tl.load(b_ptr + tl.arange(0, BK)[:, None] * BN + tl.arange(0, BN)[None, :])
    sa = None
    sb = None
    if SCALE_A:
        sa = tl.load(sa_ptr + tl.arange(0, M)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    if SCALE_B:
        sb = tl.load(sb_ptr + tl.arange(0, N)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    acc = None
    if ACC:
        acc = tl.load(acc_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    c = tl.dot_scaled(a, sa, FA, b, sb, FB, acc, fast_math=FAST, lhs_k_pack=PACK_A, rhs_k_pack=PACK_B)
    tl.store(out_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


def run(backend, dev, rng, fa, fb, pack=(True, True), scale=(True, False), fast=False, with_acc=False, m=32, n=32,
        k=64):  # fmt: skip
    am = m // 2 if fa == "e2m1" and not pack[0] else m
    ak = k // 2 if fa == "e2m1" and pack[0] else k
    bk = k // 2 if fb == "e2m1" and pack[1] else k
    bn = n // 2 if fb == "e2m1" and not pack[1] else n
    a, b = operand(rng, fa, (am, ak)), operand(rng, fb, (bk, bn))
    small = (124, 131) if "fp16" in (fa, fb) else (100, 150)
    sa = rng.integers(*small, (m, k // 32)).astype(np.uint8) if scale[0] else None
    sb = rng.integers(*small, (n, k // 32)).astype(np.uint8) if scale[1] else None
    acc = rng.standard_normal((m, n)).astype(np.float32) if with_acc else None
    out = dev.put(np.full((m, n), np.nan, np.float32))
    dummy = dev.put(np.zeros(1, np.uint8))
    scaled_kernel[(1,)](dev.put(a), dev.put(sa) if sa is not None else dummy, dev.put(b),
                        dev.put(sb) if sb is not None else dummy, out,
                        dev.put(acc) if acc is not None else dev.put(np.zeros(1, np.float32)), M=m, N=n, K=k, FA=fa,
                        FB=fb, PACK_A=pack[0], PACK_B=pack[1], SCALE_A=scale[0], SCALE_B=scale[1], FAST=fast,
                        ACC=with_acc, target=backend)  # fmt: skip
    return dev.get(out), reference(a, sa, fa, b, sb, fb, pack, fast, acc)


def close(got, want):
    finite = np.isfinite(want)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-5 * np.abs(want[finite]).max())


@pytest.mark.parametrize("fa", ["e2m1", "e4m3", "e5m2"])
@pytest.mark.parametrize("fb", ["fp16", "bf16", "e4m3"])
def test_formats(backend, dev, rng, fa, fb):
    close(*run(backend, dev, rng, fa, fb, scale=(True, fb == "e4m3")))


@pytest.mark.parametrize("pack", [(False, True), (True, False), (False, False)])
def test_e2m1_packed_along_m_or_n(backend, dev, rng, pack):
    close(*run(backend, dev, rng, "e2m1", "e2m1", pack=pack, scale=(True, True)))


def test_scale_on_the_right_only_and_an_accumulator(backend, dev, rng):
    close(*run(backend, dev, rng, "bf16", "e2m1", scale=(False, True), with_acc=True, m=64, n=32, k=128))


@pytest.mark.parametrize("fast", [False, True])
def test_scale_255_is_nan_unless_fast_math(backend, dev, rng, fast):
    """A scale of 255 is NaN in e8m0; with ``fast_math`` it is 2 ** 128 (infinite): Triton skips the check."""
    m = n = 32
    a = np.full((m, 32), 0x22, np.uint8)  # every code 1.0
    b = np.ones((64, n), ml_dtypes.bfloat16)
    sa = np.full((m, 2), 127, np.uint8)
    sa[3, 1] = 255
    sa[5, 0] = 0  # 2 ** -127 as e8m0; its bits make 0 here, as Triton's emulation
    out = dev.put(np.zeros((m, n), np.float32))
    dummy = dev.put(np.zeros(1, np.uint8))
    scaled_kernel[(1,)](dev.put(a), dev.put(sa), dev.put(b), dummy, out, dev.put(np.zeros(1, np.float32)), M=m, N=n,
                        K=64, FA="e2m1", FB="bf16", PACK_A=True, PACK_B=True, SCALE_A=True, SCALE_B=False,
                        FAST=fast, ACC=False, target=backend)  # fmt: skip
    got = dev.get(out)
    assert (np.isinf(got[3]) if fast else np.isnan(got[3])).all()
    assert (got[5] == 32).all() and (got[0] == 64).all()


@tilelab.jit
def batched_kernel(a_ptr, sa_ptr, b_ptr, out_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    bi = tl.arange(0, B)[:, None, None]
    a = tl.load(a_ptr + bi * M * (K // 2) + tl.arange(0, M)[None, :, None] * (K // 2)
                + tl.arange(0, K // 2)[None, None, :])  # fmt: skip
    sa = tl.load(sa_ptr + bi * M * (K // 32) + tl.arange(0, M)[None, :, None] * (K // 32)
                 + tl.arange(0, K // 32)[None, None, :])  # fmt: skip
    b = tl.load(b_ptr + bi * K * N + tl.arange(0, K)[None, :, None] * N + tl.arange(0, N)[None, None, :])
    c = tl.dot_scaled(a, sa, "e2m1", b, None, "fp16")
    tl.store(out_ptr + bi * M * N + tl.arange(0, M)[None, :, None] * N + tl.arange(0, N)[None, None, :], c)


def test_a_batch_dimension(backend, dev, rng):
    bsz, m, n, k = 2, 16, 16, 64
    a = operand(rng, "e2m1", (bsz, m, k // 2))
    sa = rng.integers(124, 131, (bsz, m, k // 32)).astype(np.uint8)
    b = operand(rng, "fp16", (bsz, k, n))
    out = dev.put(np.zeros((bsz, m, n), np.float32))
    batched_kernel[(1,)](dev.put(a), dev.put(sa), dev.put(b), out, B=bsz, M=m, N=n, K=k, target=backend)
    close(dev.get(out), reference(a, sa, "e2m1", b, None, "fp16"))


@tilelab.jit
def bad_kernel(a_ptr, b_ptr, out_ptr, CASE: tl.constexpr):
    a = tl.load(a_ptr + tl.arange(0, 32)[:, None] * 32 + tl.arange(0, 32)[None, :])
    b = tl.load(b_ptr + tl.arange(0, 64)[:, None] * 32 + tl.arange(0, 32)[None, :])
    s = tl.load(a_ptr + tl.arange(0, 16)[:, None] * 2 + tl.arange(0, 2)[None, :])  # 16 rows, not 32
    if CASE == 0:
        c = tl.dot_scaled(a, None, "e3m0", b, None, "fp16")
    elif CASE == 1:
        c = tl.dot_scaled(a, s, "e2m1", b, None, "fp16")
    else:
        c = tl.dot_scaled(a, None, "e4m3", b, None, "fp16")
    tl.store(out_ptr + tl.arange(0, 32)[:, None] * 32 + tl.arange(0, 32)[None, :], c)


@pytest.mark.parametrize(
    "case, message",
    [(0, "lhs_format must be one of"), (1, "lhs_scale must be e8m0 bytes"), (2, "32 and 64 elements along K")],
)
def test_wrong_calls_name_the_line(case, message):
    sig = {"a_ptr": "*u8", "b_ptr": "*fp16", "out_ptr": "*fp32"}
    with pytest.raises(CompilationError, match=message) as info:
        tilelab.compile(bad_kernel, sig, {"CASE": case}, target="cpu", snapshots=False, cache=False)
    assert "test_dot_scaled.py:" in str(info.value) and "tl.dot_scaled(" in str(info.value)  # the line, quoted
