"""LinearLayout: evaluation, inversion, composition, equality and text, on random maps."""

import numpy as np
import pytest

from tilelab.compiler.layouts import LinearLayout
from tilelab.compiler.layouts.gf2 import XorBasis, rank


def random_bijection(rng, shape, in_dims=(("register", 2), ("lane", 5), ("warp", 2))):
    """A random invertible layout: random invertible bit matrix, split into in dims."""
    bits = sum(int(np.log2(s)) for s in shape)
    assert bits == sum(n for _, n in in_dims)
    while True:
        flat = [int(x) for x in rng.integers(1, 1 << bits, size=bits)]
        if rank(flat) == bits:
            break
    probe = LinearLayout({}, shape)
    vectors = [list(probe.unflatten(f)) for f in flat]
    bases, at = {}, 0
    for name, n in in_dims:
        bases[name] = vectors[at : at + n]
        at += n
    return LinearLayout(bases, shape)


def reference_apply(layout, **idx):
    """Evaluate by the definition: XOR the basis vectors of the set bits, one index at a time."""
    out = []
    for point in zip(*(np.ravel(v) for v in idx.values())):
        acc = np.zeros(layout.rank, dtype=np.int64)
        for name, value in zip(idx, point):
            for bit, v in enumerate(layout.in_bases(name)):
                if (value >> bit) & 1:
                    acc ^= np.asarray(v)
        out.append(acc)
    return np.array(out)


def test_apply_matches_definition(rng):
    L = random_bijection(rng, [16, 32])
    reg, lane, warp = rng.integers(0, 4, 50), rng.integers(0, 32, 50), rng.integers(0, 4, 50)
    got = L.apply(register=reg, lane=lane, warp=warp)
    assert np.array_equal(got, reference_apply(L, register=reg, lane=lane, warp=warp))


def test_bijection_covers_every_element_once(rng):
    L = random_bijection(rng, [32, 16])
    flat = L.coords().reshape(-1, 2) @ np.array([16, 1])
    assert sorted(flat.tolist()) == list(range(512))


def test_inverse_after_apply_is_identity(rng):
    L = random_bijection(rng, [8, 64])
    inv = L.invert()
    hw = {"register": rng.integers(0, 4, 100), "lane": rng.integers(0, 32, 100), "warp": rng.integers(0, 4, 100)}
    coords = L.apply(**hw)
    back = inv.apply(dim0=coords[:, 0], dim1=coords[:, 1])
    assert np.array_equal(back, np.stack([hw["register"], hw["lane"], hw["warp"]], axis=-1))
    assert L.compose(inv) == LinearLayout(
        {
            "register": [[1, 0, 0], [2, 0, 0]],
            "lane": [[0, 1 << b, 0] for b in range(5)],
            "warp": [[0, 0, 1], [0, 0, 2]],
        },
        {"register": 4, "lane": 32, "warp": 4},
    )


def test_preimage_round_trip_and_owner(rng):
    L = random_bijection(rng, [16, 32])
    coords = np.stack([rng.integers(0, 16, 64), rng.integers(0, 32, 64)], axis=-1)
    warp, lane, reg = L.owner_of(coords)
    assert np.array_equal(L.apply(register=reg, lane=lane, warp=warp), coords)


def test_compose_matches_function_composition(rng):
    inner = random_bijection(rng, [4, 32], (("register", 3), ("lane", 4)))
    outer = random_bijection(rng, [128], (("dim0", 2), ("dim1", 5)))
    both = inner.compose(outer)
    reg, lane = rng.integers(0, 8, 40), rng.integers(0, 16, 40)
    mid = inner.apply(register=reg, lane=lane)
    assert np.array_equal(both.apply(register=reg, lane=lane), outer.apply(dim0=mid[:, 0], dim1=mid[:, 1]))


def test_invert_and_compose_finds_the_same_element(rng):
    a, b = random_bijection(rng, [16, 32]), random_bijection(rng, [16, 32])
    c = a.invert_and_compose(b)
    hw = c.coords().reshape(-1, 3)
    src = a.coords().reshape(-1, 2)  # same [warp, lane, register] enumeration order
    assert np.array_equal(b.apply(register=hw[:, 0], lane=hw[:, 1], warp=hw[:, 2]), src)


def test_broadcast_layout_is_surjective_not_injective():
    L = LinearLayout({"register": [[1]], "lane": [[2], [0]]}, [4])
    assert L.is_surjective() and not L.is_injective()
    assert L.owner_of([[3]])[1].tolist() == [1]  # lowest lane wins over its copy, lane 3
    with pytest.raises(ValueError, match="not invertible"):
        L.invert()


def test_equality_ignores_the_name_and_hashes():
    a = LinearLayout({"lane": [[1], [2]]}, [4])
    b = a.named("#mine<>")
    assert a == b and hash(a) == hash(b) and str(b) == "#mine<>"
    assert a != LinearLayout({"lane": [[2], [1]]}, [4])
    assert a.to_text() == "#linear<lane=[[1],[2]], shape=[4]>"


def test_errors_are_short_and_say_what():
    with pytest.raises(ValueError, match="power of two"):
        LinearLayout({"lane": [[1]]}, [6])
    with pytest.raises(ValueError, match="does not fit"):
        LinearLayout({"lane": [[4]]}, [4])
    with pytest.raises(ValueError, match="no input dim"):
        LinearLayout({"lane": [[1]]}, [2]).apply(warp=1)
    with pytest.raises(ValueError, match="inside shape"):
        LinearLayout({"lane": [[1]]}, [2]).owner_of([[2]])
    with pytest.raises(ValueError, match="not surjective"):
        LinearLayout({"lane": [[1]]}, [4]).pseudo_invert()


def test_xor_basis_solves_combinations():
    b = XorBasis()
    assert [b.insert(0b011, 0b01), b.insert(0b110, 0b10), b.insert(0b101, 0b100)] == [True, True, False]
    assert b.solve(0b101) == 0b11 and b.solve(0b1000) is None and b.rank == 2


def _apply_bit_by_bit(layout, **indices):
    """The definition: XOR of the basis vectors of every set input bit (bits past a dim's size ignored)."""
    arrays = {d: np.asarray(v, dtype=np.int64) for d, v in indices.items()}
    shape = np.broadcast_shapes(*(a.shape for a in arrays.values()))
    out = np.zeros((*shape, layout.rank), dtype=np.int64)
    for d, vectors in layout.bases:
        for bit, v in enumerate(vectors):
            if d in arrays:
                out ^= np.where(((arrays[d] >> bit) & 1).astype(bool)[..., None], np.asarray(v), 0)
    return out


def test_apply_matches_the_bit_by_bit_definition(rng):
    from tilelab.compiler.layouts import blocked, dot_operand, mma_m16n8k16_accumulator, swizzled_shared

    acc = mma_m16n8k16_accumulator([64, 64], [2, 2])
    layouts = [
        blocked([64, 64], [1, 4], [4, 8], [2, 2], [1, 0]),
        acc,
        dot_operand(acc, 0, 2, k=32),
        swizzled_shared([64, 64], 8, 1, 8, [1, 0]),
        blocked([1024], [4], [32], [4], [0]),
    ]
    for layout in layouts:
        for _ in range(10):
            dims = [d for d in layout.in_dims if rng.random() < 0.8] or [layout.in_dims[0]]
            idx = {d: rng.integers(0, 2 * layout.in_size(d), size=(3, 5)) for d in dims}
            np.testing.assert_array_equal(layout.apply(**idx), _apply_bit_by_bit(layout, **idx))
