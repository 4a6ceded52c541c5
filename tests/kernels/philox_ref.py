"""Numpy reference of the Philox 4x32-10 generator behind ``tl.randint``, ``tl.rand`` and ``tl.randn``.

Why: random kernels can only be checked bit for bit against an independent
implementation of the same counter-based generator. Philox (Salmon et al., "Parallel
random numbers: as easy as 1, 2, 3", SC 2011) maps a 128-bit counter and a 64-bit
key to 128 random bits through ten rounds of multiply/xor mixing; it keeps no state,
so each element of a tile draws its own numbers from its offset alone.

How ``tl.randint4x(seed, offset)`` uses it, as Triton's ``random.py`` publishes:

* key: the 64-bit seed split into ``(lo, hi)`` 32-bit words;
* counter: ``(offset_lo, offset_hi, 0, 0)`` -- ``offset_hi`` is 0 unless the
  offsets are 64-bit integers;
* each round: ``c0' = umulhi(B, c2) ^ c1 ^ k0``, ``c2' = umulhi(A, c0) ^ c3 ^ k1``,
  ``c1' = B * c2``, ``c3' = A * c0`` (all mod 2**32), then the key grows by
  the Weyl constants ``(0x9E3779B9, 0xBB67AE85)``.

Floats: ``rand`` reinterprets the first word as int32, folds negatives with
``x < 0 ? -x - 1 : x`` and scales by ``4.6566127342e-10`` in float32 so the
result lies in [0, 1). ``randn`` runs Box-Muller on the first two words.

    >>> randint(seed=42, offsets=np.arange(2, dtype=np.int32)).dtype
    dtype('uint32')
"""

from __future__ import annotations

import numpy as np

KEY_A = np.uint32(0x9E3779B9)
KEY_B = np.uint32(0xBB67AE85)
ROUND_A = np.uint32(0xD2511F53)
ROUND_B = np.uint32(0xCD9E8D57)
N_ROUNDS = 10
UNIFORM_SCALE = np.float32(4.6566127342e-10)


def _mul_hi_lo(a: np.uint32, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """High and low 32-bit words of the 64-bit products ``a * b``."""
    wide = np.uint64(a) * b.astype(np.uint64)
    return (wide >> np.uint64(32)).astype(np.uint32), (wide & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def philox(seed: int, c0, c1, c2, c3, n_rounds: int = N_ROUNDS) -> tuple[np.ndarray, ...]:
    """Run ``n_rounds`` Philox-4x32 rounds on the counter ``(c0, c1, c2, c3)`` under ``seed``.

    Counters are uint32 arrays of one shape; ``seed`` is any integer (taken modulo
    2**64, as Triton's cast of the seed to uint64 does).
    """
    seed = int(seed) % (1 << 64)
    k0, k1 = np.uint32(seed & 0xFFFFFFFF), np.uint32(seed >> 32)
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint32) for c in (c0, c1, c2, c3))
    with np.errstate(over="ignore"):
        for _ in range(n_rounds):
            hi_b, lo_b = _mul_hi_lo(ROUND_B, c2)
            hi_a, lo_a = _mul_hi_lo(ROUND_A, c0)
            c0, c1, c2, c3 = hi_b ^ c1 ^ k0, lo_b, hi_a ^ c3 ^ k1, lo_a
            k0, k1 = k0 + KEY_A, k1 + KEY_B
    return c0, c1, c2, c3


def randint4x(seed: int, offsets, n_rounds: int = N_ROUNDS) -> tuple[np.ndarray, ...]:
    """Four uint32 arrays: what ``tl.randint4x(seed, offsets)`` returns."""
    offsets = np.asarray(offsets)
    if offsets.dtype.kind not in "iu":
        raise TypeError(f"offsets must be integers, not {offsets.dtype}")
    wide = offsets.astype(np.int64).view(np.uint64) if offsets.dtype.itemsize > 4 else None
    lo = offsets.astype(np.uint32) if wide is None else (wide & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    hi = np.zeros_like(lo) if wide is None else (wide >> np.uint64(32)).astype(np.uint32)
    zero = np.zeros_like(lo)
    return philox(seed, lo, hi, zero, zero, n_rounds)


def randint(seed: int, offsets, n_rounds: int = N_ROUNDS) -> np.ndarray:
    """The uint32 array ``tl.randint(seed, offsets)`` returns (the first Philox word)."""
    return randint4x(seed, offsets, n_rounds)[0]


def uint_to_uniform_float(x: np.ndarray) -> np.ndarray:
    """Map random uint32 words to float32 in [0, 1) exactly as Triton does."""
    signed = np.asarray(x, dtype=np.uint32).view(np.int32)
    with np.errstate(over="ignore"):
        folded = np.where(signed < 0, -signed - np.int32(1), signed)
    return folded.astype(np.float32) * UNIFORM_SCALE


def rand(seed: int, offsets, n_rounds: int = N_ROUNDS) -> np.ndarray:
    """The float32 array ``tl.rand(seed, offsets)`` returns, uniform in [0, 1)."""
    return uint_to_uniform_float(randint(seed, offsets, n_rounds))


def rand4x(seed: int, offsets, n_rounds: int = N_ROUNDS) -> tuple[np.ndarray, ...]:
    """Four float32 arrays: what ``tl.rand4x(seed, offsets)`` returns."""
    return tuple(uint_to_uniform_float(word) for word in randint4x(seed, offsets, n_rounds))


def pair_uniform_to_normal(u1: np.ndarray, u2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Box-Muller in float32: two uniforms to two independent standard normals."""
    u1 = np.maximum(np.float32(1.0e-7), u1)
    theta = np.float32(6.283185307179586) * u2
    radius = np.sqrt(np.float32(-2.0) * np.log(u1))
    return radius * np.cos(theta), radius * np.sin(theta)


def randn(seed: int, offsets, n_rounds: int = N_ROUNDS) -> np.ndarray:
    """The float32 array ``tl.randn(seed, offsets)`` returns, standard normal."""
    i1, i2, _, _ = randint4x(seed, offsets, n_rounds)
    return pair_uniform_to_normal(uint_to_uniform_float(i1), uint_to_uniform_float(i2))[0]


def randn4x(seed: int, offsets, n_rounds: int = N_ROUNDS) -> tuple[np.ndarray, ...]:
    """Four float32 arrays: what ``tl.randn4x(seed, offsets)`` returns."""
    u1, u2, u3, u4 = rand4x(seed, offsets, n_rounds)
    return pair_uniform_to_normal(u1, u2) + pair_uniform_to_normal(u3, u4)
