"""Shared layouts (swizzle), vector widths, conversion kinds and bank conflicts."""

import numpy as np
import pytest

from tilelab.compiler.layouts import (
    LinearLayout,
    bank_conflicts,
    blocked,
    contiguous_elements,
    conversion_kind,
    conversion_shared,
    dot_operand,
    mma_m16n8k16_accumulator,
    nvmma_shared,
    parse_layout,
    row_major_shared,
    shared_vector_width,
    slice_layout,
    swizzled_shared,
)


def swizzle_reference(rows, cols, vec, per_phase, max_phase):
    """offset of element (r, c) in a row-major buffer whose column groups are XORed with the phase."""
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    phase = (r // per_phase) % max_phase
    c_swz = (((c // vec) ^ phase) % (cols // vec)) * vec + c % vec
    return r * cols + c_swz


@pytest.mark.parametrize(
    "shape,vec,per_phase,max_phase", [([64, 64], 8, 1, 8), ([32, 32], 4, 2, 4), ([16, 64], 2, 1, 8)]
)
def test_swizzle_matches_formula(shape, vec, per_phase, max_phase):
    L = swizzled_shared(shape, vec, per_phase, max_phase, order=[1, 0])
    ref = swizzle_reference(*shape, vec, per_phase, max_phase)
    offsets = L.invert().apply(dim0=np.arange(shape[0])[:, None], dim1=np.arange(shape[1])[None, :])[..., 0]
    assert np.array_equal(offsets, ref)
    stored = L.apply(offset=ref)
    assert np.array_equal(stored[..., 0], np.arange(shape[0])[:, None] + 0 * ref)


def test_column_major_order_swizzles_rows():
    L = swizzled_shared([16, 8], 2, 1, 4, order=[0, 1])  # dim0 is contiguous
    ref = swizzle_reference(8, 16, 2, 1, 4)  # the transposed picture
    offsets = L.invert().apply(dim0=np.arange(16)[None, :], dim1=np.arange(8)[:, None])[..., 0]
    assert np.array_equal(offsets, ref)


def test_nvmma_128b_is_the_8x8_chunk_xor():
    L = nvmma_shared([16, 64], elem_bytes=2)
    assert L.params["vec"] == 8 and L.params["max_phase"] == 8
    # row 3, stored 16-byte chunk 0 holds column chunk 3
    assert L.apply(offset=3 * 64).tolist() == [3, 24]
    with pytest.raises(ValueError, match="128B swizzle"):
        nvmma_shared([16, 32], elem_bytes=2)


def test_contiguous_elements():
    assert contiguous_elements(blocked([128], [4], [32], [1], [0]), 0) == 4
    assert contiguous_elements(blocked([1024], [4], [32], [4], [0]), 0) == 4  # the wrap is not contiguous
    L2 = blocked([64, 64], [2, 8], [8, 4], [4, 1], [1, 0])
    assert (contiguous_elements(L2, 1), contiguous_elements(L2, 0)) == (8, 1)
    acc = mma_m16n8k16_accumulator([32, 32], [2, 2])
    assert (contiguous_elements(acc, 1), contiguous_elements(acc, 0)) == (2, 1)
    # lane 1 starts at 6: its registers hold 6, 7, 4, 5 -> only pairs are in order
    scrambled = LinearLayout({"register": [[1], [2]], "lane": [[6], [8]]}, [16])
    assert contiguous_elements(scrambled, 0) == 2
    # offsets of a swizzled row run in column order only within one 8-element group
    assert contiguous_elements(swizzled_shared([64, 64], 8, 1, 8, [1, 0]), 1, in_dim="offset") == 8
    assert contiguous_elements(row_major_shared([64, 64]), 1, in_dim="offset") == 64


def test_conversion_kinds():
    a = blocked([128], [2], [32], [1], [0])  # registers [1], [64]
    permuted = a.with_bases("register", [[64], [1]])
    assert conversion_kind(a, a) == "none"
    assert conversion_kind(a, permuted) == "register"
    assert conversion_kind(blocked([128], [4], [32], [1], [0]), blocked([128], [1], [32], [1], [0])) == "shuffle"
    assert conversion_kind(blocked([256], [2], [32], [4], [0]), blocked([256], [1], [32], [4], [0])) == "shared"
    two_d = blocked([32, 32], [1, 1], [4, 8], [1, 1], [1, 0]), blocked([32, 32], [1, 1], [8, 4], [1, 1], [1, 0])
    assert conversion_kind(*two_d) == "shuffle"
    acc = mma_m16n8k16_accumulator([32, 32], [2, 2])
    assert conversion_kind(acc, blocked([32, 32], [1, 1], [4, 8], [4, 1], [1, 0])) == "shared"


def test_conversion_with_broadcast_copies():
    # src: lanes 0..3 hold 4 elements each, every other lane a copy; dst: each lane keeps half of its block
    src = LinearLayout({"register": [[1], [2]], "lane": [[4], [8], [0], [0], [0]]}, [16])
    dst = LinearLayout({"register": [[1]], "lane": [[4], [8], [2], [0], [0]]}, [16])
    assert conversion_kind(src, dst) == "register"
    assert conversion_kind(dst, src) == "shuffle"  # lane 0 now needs elements 2, 3 from lane 4
    parent = blocked([32, 64], [1, 4], [4, 8], [4, 1], [1, 0])
    with pytest.raises(ValueError, match="shapes"):
        conversion_kind(slice_layout(parent, 1), parent)


def test_bank_conflicts_column_reads_heavy_unswizzled_none_swizzled():
    plain, swz = row_major_shared([64, 64]), swizzled_shared([64, 64], 8, 1, 8, [1, 0])
    # one f16 per thread, lanes walk down a column: every lane hits bank 0 of a different row
    by_column = blocked([64, 64], [1, 1], [32, 1], [1, 4], [0, 1])
    assert bank_conflicts(plain, by_column, 2).wavefronts == 32
    assert bank_conflicts(swz, by_column, 2).wavefronts == 4  # rows r and r+8 still share a phase
    # 16-byte vectors, 8 lanes per phase reading 8 rows of one column chunk (ldmatrix-like)
    vectors = blocked([64, 64], [1, 8], [32, 1], [2, 2], [1, 0])
    heavy, none = bank_conflicts(plain, vectors, 2), bank_conflicts(swz, vectors, 2)
    assert (heavy.vector_bytes, heavy.wavefronts, heavy.ideal) == (16, 32, 4)
    assert none.wavefronts == 4 and none.conflict_free and not heavy.conflict_free


def test_bank_conflicts_row_reads_are_free():
    rows = blocked([64, 64], [1, 2], [1, 32], [4, 1], [1, 0])  # a warp reads one 128-byte row
    result = bank_conflicts(row_major_shared([64, 64]), rows, 2)
    assert (result.vector_elems, result.wavefronts, result.ideal) == (2, 1, 1)
    with pytest.raises(ValueError, match="shared layout"):
        bank_conflicts(rows, rows, 2)


def test_bank_conflicts_f32_vector_of_two_uses_half_warps():
    L = blocked([32, 64], [1, 2], [1, 32], [4, 1], [1, 0])
    result = bank_conflicts(row_major_shared([32, 64]), L, 4)
    assert (result.vector_bytes, result.wavefronts) == (8, 2)


def test_dot_operand_from_swizzled_buffer_is_conflict_free():
    acc = mma_m16n8k16_accumulator([64, 64], [2, 2])
    a = dot_operand(acc, 0, 2, k=64)
    swz = swizzled_shared([64, 64], 8, 1, 8, [1, 0])
    assert bank_conflicts(swz, a, 2).wavefronts < bank_conflicts(row_major_shared([64, 64]), a, 2).wavefronts


def kind_by_enumeration(src, dst):
    """Reference: compare, per thread and per warp, the sets of elements each layout gives it."""
    flat = np.array([src.shape[1], 1]) if src.rank == 2 else np.array([1])
    a, b = src.coords() @ flat, dst.coords() @ flat  # [warp, lane, register]
    if src == dst:
        return "none"
    if all(set(b[w, l]) <= set(a[w, l]) for w in range(b.shape[0]) for l in range(b.shape[1])):
        return "register"
    if all(set(b[w].ravel()) <= set(a[w].ravel()) for w in range(b.shape[0])):
        return "shuffle"
    return "shared"


def random_blocked(rng, shape):
    """A random blocked layout of ``shape`` with 32 lanes and 1, 2 or 4 warps."""
    rank = len(shape)
    order = list(rng.permutation(rank))
    spt = [int(rng.choice([1, 2, 4])) for _ in range(rank)]
    split = int(rng.integers(0, 6))
    tpw = [1 << split, 1 << (5 - split)] if rank == 2 else [32]
    warps = int(rng.choice([1, 2, 4]))
    w0 = int(rng.choice([w for w in (1, 2, 4) if w <= warps]))
    wpc = [w0, warps // w0] if rank == 2 else [warps]
    return blocked(shape, spt, tpw, wpc, order)


def test_conversion_kind_agrees_with_enumeration_on_random_layouts(rng):
    seen = set()
    for _ in range(60):
        shape = [16, 32] if rng.random() < 0.7 else [256]
        a = random_blocked(rng, shape)
        b = random_blocked(rng, shape) if rng.random() < 0.8 else a.with_bases("register", a.in_bases("register")[::-1])
        if a.in_size("warp") != b.in_size("warp"):
            continue
        kind = conversion_kind(a, b)
        assert kind == kind_by_enumeration(a, b), (a.to_text(), b.to_text())
        seen.add(kind)
    assert {"shuffle", "shared"} <= seen


def wavefronts_by_hand(reg, offsets_of, elem_bytes, vec):
    """Reference: per warp instruction, split lanes into phases and count words per bank."""
    coords = reg.coords()  # [warp, lane, register, 2]
    lanes_per_phase = min(32, 128 // (vec * elem_bytes))
    worst = 0
    for w in range(coords.shape[0]):
        for i in range(coords.shape[2] // vec):
            total = 0
            for p in range(0, 32, lanes_per_phase):
                words = set()
                for lane in range(p, p + lanes_per_phase):
                    vector = [int(offsets_of[tuple(coords[w, lane, r])]) for r in range(i * vec, (i + 1) * vec)]
                    assert vector == list(range(vector[0], vector[0] + vec)) and vector[0] % vec == 0
                    words.update(o * elem_bytes // 4 for o in vector)
                banks = {}
                for word in words:
                    banks[word % 32] = banks.get(word % 32, 0) + 1
                total += max(banks.values())
            worst = max(worst, total)
    return worst


def test_bank_conflicts_agree_with_a_hand_count_on_random_swizzles(rng):
    for _ in range(6):
        vec, per_phase, max_phase = (int(rng.choice(c)) for c in ([1, 2, 4, 8], [1, 2, 4], [1, 2, 4, 8]))
        spt_col = int(rng.choice([1, 2, 4, 8]))
        tpw_rows = int(rng.choice([1, 4, 8, 32]))
        reg = blocked([64, 64], [1, spt_col], [tpw_rows, 32 // tpw_rows], [2, 2], [1, 0])
        shared = swizzled_shared([64, 64], vec, per_phase, max_phase, [1, 0])
        result = bank_conflicts(shared, reg, 2)
        offsets = swizzle_reference(64, 64, vec, per_phase, max_phase)
        assert result.wavefronts == wavefronts_by_hand(reg, offsets, 2, result.vector_elems)
        swizzled = max_phase > 1 and per_phase < 64
        assert result.vector_elems == (min(spt_col, vec) if swizzled else spt_col)


def _reference_wavefronts(byte_addresses: np.ndarray, access_bytes: int) -> int:
    """One warp instruction, phase by phase: the most distinct words in one bank, summed."""
    lanes_per_phase = min(32, max(1, 128 // access_bytes))
    total = 0
    for start in range(0, byte_addresses.shape[0], lanes_per_phase):
        words = np.unique(byte_addresses[start : start + lanes_per_phase].ravel() // 4)
        total += int(np.unique(words % 32, return_counts=True)[1].max())
    return total


def test_all_wavefronts_match_the_instruction_by_instruction_count(rng):
    from tilelab.compiler.layouts.queries import _all_wavefronts

    for _ in range(100):
        warps, regs = int(rng.choice([1, 2, 4])), int(rng.choice([4, 8, 16, 32]))
        elem_bytes = int(rng.choice([1, 2, 4, 8]))
        v = int(rng.choice([x for x in (1, 2, 4, 8) if regs % x == 0 and x * elem_bytes <= 16]))
        addr = rng.integers(0, int(rng.choice([64, 4096])), size=(warps, 32, regs)) * elem_bytes
        got = _all_wavefronts(addr, v, v * elem_bytes)
        for w in range(warps):
            for i in range(regs // v):
                assert got[w, i] == _reference_wavefronts(addr[w, :, i * v : (i + 1) * v], v * elem_bytes)


def test_every_warp_takes_warp_zeros_wavefronts(rng):
    """``bank_conflicts`` counts warp 0 only: another warp's offsets are warp 0's XOR one constant."""
    from tilelab.compiler.layouts.queries import _all_wavefronts

    for _ in range(8):
        elem_bytes = int(rng.choice([1, 2, 4]))
        reg = blocked([64, 64], [1, int(rng.choice([1, 2, 4]))], [8, 4], [int(rng.choice([1, 2, 4])), 2], [1, 0])
        shared = swizzled_shared([64, 64], int(rng.choice([1, 4, 8])), int(rng.choice([1, 2])), 8, [1, 0])
        result = bank_conflicts(shared, reg, elem_bytes)
        every_warp = reg.invert_and_compose(shared).coords()[..., 0] * elem_bytes
        full = _all_wavefronts(every_warp, result.vector_elems, result.vector_elems * elem_bytes)
        assert np.array_equal(result.per_instruction, full)


def test_offset_images_are_the_bases_of_the_composed_map(rng):
    """The buffer offsets ``bank_conflicts`` looks up per register, lane and warp bit are those of
    ``reg.invert_and_compose(shared)``: random blocked and mma layouts against every candidate buffer."""
    from tilelab.compiler.layouts.linear import LANE, REGISTER, WARP
    from tilelab.compiler.layouts.queries import _offset_images
    from tilelab.compiler.passes.convert_through_shared import candidate_layouts

    for _ in range(12):
        rows, cols = (int(rng.choice([16, 32, 64, 128])) for _ in range(2))
        spt = int(rng.choice([1, 2, 4, 8]))
        tpw = int(rng.choice([1, 2, 4, 8, 16, 32]))
        regs = [blocked([rows, cols], [1, spt], [tpw, 32 // tpw], [2, 2], [1, 0]),
                blocked([rows, cols], [spt, 1], [32 // tpw, tpw], [4, 1], [0, 1])]  # fmt: skip
        if rows >= 16 and cols >= 8:
            regs.append(mma_m16n8k16_accumulator([rows, cols], [1, 1]))
        elem_bytes = int(rng.choice([1, 2, 4]))
        for shared in candidate_layouts([rows, cols], elem_bytes):
            for reg in regs:
                composed = reg.invert_and_compose(shared)
                want = {d: [v[0] for v in composed.in_bases(d)] for d in (REGISTER, LANE, WARP)}
                assert _offset_images(shared, reg) == want


def test_negative_offset_images_reject_layouts_of_another_shape():
    with pytest.raises(ValueError, match="different shapes"):
        from tilelab.compiler.layouts.queries import _offset_images

        _offset_images(row_major_shared([32, 32]), blocked([64, 64], [1, 4], [8, 4], [4, 1], [1, 0]))


def test_a_buffer_holding_elements_twice_takes_the_general_inverse():
    """Offsets 8-15 repeat 0-7 (a zero basis vector): no table; each bit maps to its lowest offset."""
    from tilelab.compiler.layouts.linear import LANE, OFFSET, REGISTER, WARP
    from tilelab.compiler.layouts.queries import _offset_images

    shared = LinearLayout({OFFSET: [[0, 1], [0, 2], [1, 0], [0, 0]]}, {"dim0": 2, "dim1": 4})
    reg = LinearLayout({REGISTER: [[0, 1]], LANE: [[0, 2], [1, 0]], WARP: []}, {"dim0": 2, "dim1": 4})
    assert _offset_images(shared, reg) == {REGISTER: [1], LANE: [2, 4], WARP: []}


def test_fastest_dim_of_a_blocked_and_of_a_transposed_layout():
    from tilelab.compiler.layouts import fastest_dim
    from tilelab.compiler.passes.convert_through_shared import permuted

    row = blocked([64, 128], [1, 8], [2, 16], [4, 1], [1, 0])
    assert fastest_dim(row) == 1
    assert fastest_dim(blocked([64, 128], [8, 1], [16, 2], [1, 4], [0, 1])) == 0
    # tl.trans of a row-major tile: no order, but its registers run along dim 0
    assert fastest_dim(permuted(row, [1, 0])) == 0


def test_a_conversion_buffer_gives_an_accumulator_and_its_store_layout_one_16_byte_run():
    """wgmma's f32 accumulator holds ``(r, c), (r, c+1), (r+8, c), (r+8, c+1)`` in registers 0-3; a store layout
    of four columns a thread holds ``(r, c+1)`` and ``(r+8, c)`` too: a buffer made for the pair puts those
    four side by side, so both sides move 16 bytes at once, and each side's accesses stay conflict-free."""
    from tilelab.compiler.layouts.distributed import wgmma_accumulator

    acc = wgmma_accumulator([128, 256], [8, 1], 256)
    store = blocked([128, 256], [1, 4], [1, 32], [8, 1], [1, 0])
    shared = conversion_shared(acc, store, 4)
    assert shared.in_bases("offset")[:2] == ((0, 1), (8, 0))
    for reg in (acc, store):
        model = bank_conflicts(shared, reg, 4)
        assert model.vector_elems == 4 and model.conflict_free
    assert shared_vector_width(swizzled_shared([128, 256], 4, 1, 4, [1, 0]), acc, 4) == 2  # a swizzle gives 8 bytes


def test_conversion_buffers_are_conflict_free_on_both_sides_for_random_layouts(rng):
    checked = 0
    for _ in range(60):
        pair = []
        for _ in range(2):
            rows = int(rng.choice([1, 2, 4, 8, 16, 32]))
            warps_rows = int(rng.choice([1, 2, 4]))
            spt = [int(rng.choice([1, 2, 4])), int(rng.choice([1, 2, 4, 8]))]
            order = [1, 0] if rng.random() < 0.7 else [0, 1]
            pair.append(blocked([64, 64], spt, [rows, 32 // rows], [warps_rows, 4 // warps_rows], order))
        elem_bytes = int(rng.choice([4, 8]))
        shared = conversion_shared(*pair, elem_bytes)
        assert parse_layout(str(shared), [64, 64]) == shared  # the IR text (and the cache) keep it
        assert sorted(shared.apply(offset=np.arange(64 * 64)).reshape(-1, 2).tolist()) == [
            [r, c] for r in range(64) for c in range(64)
        ]  # every element once
        models = [bank_conflicts(shared, reg, elem_bytes) for reg in pair]
        assert models[0].vector_elems == models[1].vector_elems
        if all(sum(any(v) for v in reg.in_bases("lane")) == 5 for reg in pair):  # no lane repeats another
            checked += 1
            assert all(m.conflict_free for m in models)
    assert checked > 30


def test_negative_no_conversion_buffer_for_steps_that_are_not_single_bits():
    swizzled = swizzled_shared([16, 16], 1, 1, 8, [1, 0])  # its offsets as a register layout: (r, c ^ r)
    reg = LinearLayout({"register": swizzled.in_bases("offset")[:4], "lane": swizzled.in_bases("offset")[4:]},
                       [16, 16])  # fmt: skip
    assert conversion_shared(reg, blocked([16, 16], [1, 4], [4, 8], [1, 1], [1, 0]), 4) is None
