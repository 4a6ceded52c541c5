"""Counter-based random numbers (Philox 4x32-10), bit-identical to Triton's ``tl.rand``.

``tl.rand(seed, offsets)`` gives, for each offset, a uniform float in [0, 1): the
offset is the counter, the seed the key. Same seed and offsets give the same numbers
on every backend (and in Triton), which makes dropout masks reproducible.

Philox runs ``n_rounds`` rounds; each round multiplies two counter words by fixed
odd constants, mixes the high halves with the other words and the key, and bumps
the key by the golden-ratio constants.
"""

from __future__ import annotations

from ..compiler.frontend.values import constexpr, device_function
from ..compiler.frontend.values import static_range_spec as static_range
from . import core as tl
from . import math as tlmath
from .dtypes import int32, uint32, uint64

N_ROUNDS_DEFAULT = 10

# Philox 4x32 constants (from Salmon et al., "Parallel random numbers: as easy as 1, 2, 3")
KEY_A = 0x9E3779B9
KEY_B = 0xBB67AE85
ROUND_A = 0xD2511F53
ROUND_B = 0xCD9E8D57


@device_function
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """``n_rounds`` Philox rounds on the uint32 counter ``(c0..c3)`` with key ``(k0, k1)``."""
    for _ in static_range(n_rounds):
        prev0 = c0
        prev2 = c2
        c0 = tlmath.umulhi(ROUND_B, prev2) ^ c1 ^ k0
        c2 = tlmath.umulhi(ROUND_A, prev0) ^ c3 ^ k1
        c1 = ROUND_B * prev2
        c3 = ROUND_A * prev0
        k0 = k0 + KEY_A
        k1 = k1 + KEY_B
    return c0, c1, c2, c3


@device_function
def philox(seed, c0, c1, c2, c3, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """Philox with a 64-bit ``seed`` split into the two key words."""
    seed = tl.to_tensor(seed).to(uint64)
    key_hi = ((seed >> 32) & 0xFFFFFFFF).to(uint32)
    key_lo = (seed & 0xFFFFFFFF).to(uint32)
    c0 = tl.to_tensor(c0).to(uint32, bitcast=True)
    c1 = tl.to_tensor(c1).to(uint32, bitcast=True)
    c2 = tl.to_tensor(c2).to(uint32, bitcast=True)
    c3 = tl.to_tensor(c3).to(uint32, bitcast=True)
    return philox_impl(c0, c1, c2, c3, key_lo, key_hi, n_rounds)


@device_function
def randint4x(seed, offset, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of random uint32 for each ``offset`` (an integer tile of 32 or 64 bits).

    The offset is the Philox counter: its low 32 bits are counter word 0; a 64-bit offset
    also fills word 1 with ``offset >> 32`` (as Triton does), so offsets 3 and 2**32 + 3
    give different numbers.
    """
    offset = tl.to_tensor(offset)
    offset_lo = offset.to(uint32)
    zero = offset_lo * 0
    offset_hi = zero
    if offset.dtype.primitive_bitwidth > 32:
        offset_hi = (offset >> 32).to(uint32)
    return philox(seed, offset_lo, offset_hi, zero, zero, n_rounds)


@device_function
def randint(seed, offset, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """One random uint32 for each ``offset`` (32 or 64 bits)."""
    r0, r1, r2, r3 = randint4x(seed, offset, n_rounds)
    return r0


@device_function
def uint_to_uniform_float(x):
    """A random uint32 mapped to a uniform float32 in [0, 1)."""
    x = x.to(int32, bitcast=True)
    x = tl.where(x < 0, -x - 1, x)
    return x * 4.6566127342e-10


@device_function
def rand(seed, offset, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """A uniform float32 in [0, 1) for each ``offset``."""
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


@device_function
def rand4x(seed, offsets, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """Four uniform floats for each ``offset``."""
    i1, i2, i3, i4 = randint4x(seed, offsets, n_rounds)
    return uint_to_uniform_float(i1), uint_to_uniform_float(i2), uint_to_uniform_float(i3), uint_to_uniform_float(i4)


@device_function
def pair_uniform_to_normal(u1, u2):
    """Box-Muller: two uniforms -> two standard normals."""
    u1 = tl.maximum(1.0e-7, u1)
    th = 6.283185307179586 * u2
    r = tlmath.sqrt(-2.0 * tlmath.log(u1))
    return r * tlmath.cos(th), r * tlmath.sin(th)


@device_function
def randn(seed, offset, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """A standard normal float32 for each ``offset``."""
    i1, i2, i3, i4 = randint4x(seed, offset, n_rounds)
    n1, n2 = pair_uniform_to_normal(uint_to_uniform_float(i1), uint_to_uniform_float(i2))
    return n1


@device_function
def randn4x(seed, offset, n_rounds: constexpr = N_ROUNDS_DEFAULT):
    """Four standard normals for each ``offset``."""
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds)
    n1, n2 = pair_uniform_to_normal(u1, u2)
    n3, n4 = pair_uniform_to_normal(u3, u4)
    return n1, n2, n3, n4
