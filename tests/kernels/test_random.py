"""Random numbers: tl.randint/randint4x/rand/randn against Philox values Triton produced, and dropout."""

import numpy as np
import pytest

import tilelab
import tilelab.language as tl

from . import philox_ref
from .support import cdiv

# Values produced by Triton 3.6 itself (its interpreter) for these seeds and offsets.
TRITON_OFFSETS_I32 = np.array([0, 1, 7, 255, 1000003, 2**31 - 1], dtype=np.int32)
TRITON_VALUES = {
    # (seed, n_rounds): (randint as uint32, rand, randn)
    (42, 10): (
        [0x9CEAF053, 0xFCDB2127, 0x5BBD83B1, 0xA08AF328, 0x8683A7B0, 0xD0F2743B],
        [
            0.7740801572799683,
            0.024562695994973183,
            0.7167209386825562,
            0.7457595467567444,
            0.9491071701049805,
            0.36760085821151733,
        ],
        [
            0.6606133580207825,
            -1.5427135229110718,
            0.3296443521976471,
            -0.08892478793859482,
            -0.2242259681224823,
            -0.6778115630149841,
        ],
    ),
    (0x1234_5678_9ABC, 10): (
        [0x455E9F1C, 0x245F1DBA, 0xB724BC58, 0x3C778BED, 0x7387319F, 0x66CFAFEE],
        [
            0.5419500470161438,
            0.28415268659591675,
            0.5691913366317749,
            0.4723982512950897,
            0.902563214302063,
            0.8032130599021912,
        ],
        [
            1.0668903589248657,
            -1.5524935722351074,
            0.14993712306022644,
            -0.3984341025352478,
            -0.4499770998954773,
            0.5135558843612671,
        ],
    ),
    (42, 7): (
        [0x92CBC19A, 0x5558D87A, 0x5096B607, 0xCE35ECD1, 0x739851D6, 0x4F106CAB],
        [
            0.8531568050384521,
            0.666773796081543,
            0.6295992732048035,
            0.38897931575775146,
            0.9030858874320984,
            0.6176886558532715,
        ],
        [
            -0.49411866068840027,
            0.8199838399887085,
            -0.4621575176715851,
            -1.2845474481582642,
            -0.2727067470550537,
            0.3296314775943756,
        ],
    ),
}
TRITON_OFFSETS_I64 = np.array([3, 2**32 + 3, 2**40 + 11, 2**62], dtype=np.int64)
TRITON_VALUES_I64 = [0x63E41616, 0x27ECE1AE, 0x7C16E00D, 0x2DC21549]  # seed 7


@tilelab.jit
def random_at(seed, offsets_ptr, int_ptr, uniform_ptr, normal_ptr, n, BLOCK: tl.constexpr, ROUNDS: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    offsets = tl.load(offsets_ptr + i, mask=mask)
    tl.store(int_ptr + i, tl.randint(seed, offsets, ROUNDS), mask=mask)
    tl.store(uniform_ptr + i, tl.rand(seed, offsets, ROUNDS), mask=mask)
    tl.store(normal_ptr + i, tl.randn(seed, offsets, ROUNDS), mask=mask)


def _run_random_at(backend, dev, seed, offsets, rounds):
    n = offsets.size
    ints, uniform, normal = dev.empty(n, np.uint32), dev.empty(n, np.float32), dev.empty(n, np.float32)
    random_at[(cdiv(n, 8),)](seed, dev.put(offsets), ints, uniform, normal, n, BLOCK=8, ROUNDS=rounds, target=backend)
    return dev.get(ints), dev.get(uniform), dev.get(normal)


def test_reference_matches_random123_known_answers():
    """philox_ref reproduces the Philox4x32-10 known-answer vectors of Random123."""
    c = [np.array([v], dtype=np.uint32) for v in (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344)]
    out = philox_ref.philox(0x299F31D0_A4093822, *c)
    assert [int(w[0]) for w in out] == [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]
    zero = np.zeros(1, dtype=np.uint32)
    assert [int(w[0]) for w in philox_ref.philox(0, zero, zero, zero, zero)] == [
        0x6627E8D5,
        0xE169C58D,
        0xBC57AC4C,
        0x9B00DBD8,
    ]


@pytest.mark.parametrize("seed, rounds", list(TRITON_VALUES))
def test_reference_matches_triton_values(seed, rounds):
    ints, uniform, normal = TRITON_VALUES[(seed, rounds)]
    np.testing.assert_array_equal(philox_ref.randint(seed, TRITON_OFFSETS_I32, rounds), np.uint32(ints))
    np.testing.assert_array_equal(philox_ref.rand(seed, TRITON_OFFSETS_I32, rounds), np.float32(uniform))
    np.testing.assert_allclose(philox_ref.randn(seed, TRITON_OFFSETS_I32, rounds), np.float32(normal), rtol=1e-6)
    np.testing.assert_array_equal(philox_ref.randint(7, TRITON_OFFSETS_I64), np.uint32(TRITON_VALUES_I64))


@pytest.mark.parametrize("seed, rounds", list(TRITON_VALUES))
def test_random_equals_triton(backend, dev, seed, rounds):
    ints, uniform, normal = _run_random_at(backend, dev, seed, TRITON_OFFSETS_I32, rounds)
    want_ints, want_uniform, want_normal = TRITON_VALUES[(seed, rounds)]
    np.testing.assert_array_equal(ints, np.uint32(want_ints))
    np.testing.assert_array_equal(uniform, np.float32(want_uniform))
    np.testing.assert_allclose(normal, np.float32(want_normal), rtol=1e-5, atol=1e-5)


def test_random_int64_offsets_equal_triton(backend, dev):
    ints, _, _ = _run_random_at(backend, dev, 7, TRITON_OFFSETS_I64, 10)
    np.testing.assert_array_equal(ints, np.uint32(TRITON_VALUES_I64))


def test_random_matches_reference_on_random_offsets(backend, dev, rng):
    seed = int(rng.integers(0, 2**40))
    offsets = rng.integers(0, 2**31 - 1, size=1000, dtype=np.int32)
    ints, uniform, normal = _run_random_at(backend, dev, seed, offsets, 10)
    np.testing.assert_array_equal(ints, philox_ref.randint(seed, offsets))
    np.testing.assert_array_equal(uniform, philox_ref.rand(seed, offsets))
    np.testing.assert_allclose(normal, philox_ref.randn(seed, offsets), rtol=1e-5, atol=1e-5)
    assert 0.0 <= uniform.min() and uniform.max() < 1.0


@tilelab.jit
def randint4x_kernel(seed, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    r0, r1, r2, r3 = tl.randint4x(seed, offsets)
    tl.store(out_ptr + 4 * offsets + 0, r0, mask=mask)
    tl.store(out_ptr + 4 * offsets + 1, r1, mask=mask)
    tl.store(out_ptr + 4 * offsets + 2, r2, mask=mask)
    tl.store(out_ptr + 4 * offsets + 3, r3, mask=mask)


def test_randint4x(backend, dev, rng):
    n, seed = 777, int(rng.integers(0, 2**31))
    out = dev.empty((n, 4), np.uint32)
    randint4x_kernel[(cdiv(n, 128),)](seed, out, n, BLOCK=128, target=backend)
    want = np.stack(philox_ref.randint4x(seed, np.arange(n, dtype=np.int32)), axis=1)
    np.testing.assert_array_equal(dev.get(out), want)


@tilelab.jit
def dropout_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    """Triton tutorial 04: seeded dropout, the mask regenerated from (seed, offset)."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    keep = tl.rand(seed, offsets) > p
    tl.store(out_ptr + offsets, tl.where(keep, x / (1 - p), 0.0), mask=mask)


def test_dropout(backend, dev, rng):
    n, p, seed = 3001, 0.3, int(rng.integers(0, 2**31))
    x = (rng.standard_normal(n) + 3.0).astype(np.float32)  # never zero, so dropped elements show
    out = dev.empty(n, np.float32)
    dropout_kernel[(cdiv(n, 256),)](dev.put(x), out, n, p, seed, BLOCK=256, target=backend)
    got = dev.get(out)
    keep = philox_ref.rand(seed, np.arange(n, dtype=np.int32)) > np.float32(p)
    np.testing.assert_array_equal(got != 0, keep)
    np.testing.assert_allclose(got, np.where(keep, x / (np.float32(1) - np.float32(p)), 0), rtol=1e-6)
    assert abs(keep.mean() - (1 - p)) < 0.05
