"""``join``, ``split`` and ``reshape`` of computed tiles cost no data movement on the GPU (as in Triton):
each element stays in the thread and register that holds it, so no shared memory and no barrier."""

from __future__ import annotations

import tilelab
import tilelab.language as tl


@tilelab.jit
def pairs_kernel(a_ptr, b_ptr, out_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    pairs = tl.join(tl.load(a_ptr + i), tl.load(b_ptr + i)) * 2.0
    x, y = tl.split(pairs)
    grid = tl.reshape(x - y, (16, BLOCK // 16)) + 1.0
    tl.store(out_ptr + i, tl.reshape(grid, (BLOCK,)))


@tilelab.jit
def dequant_kernel(q_ptr, scale_ptr, out_ptr, BLOCK: tl.constexpr):
    """Two 4-bit values per byte, interleaved back in order, times the scale of their group."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    packed = tl.load(q_ptr + offs)
    lo = ((packed & 0xF).to(tl.int8) - 8).to(tl.float16)
    hi = (((packed >> 4) & 0xF).to(tl.int8) - 8).to(tl.float16)
    s = tl.load(scale_ptr + offs // 32)
    out = tl.interleave(lo, hi) * tl.interleave(s, s)
    tl.store(out_ptr + tl.program_id(0) * 2 * BLOCK + tl.arange(0, 2 * BLOCK), out)


def ptx_of(kernel, signature, constants):
    ck = tilelab.compile(kernel, signature, constants, target="cuda:sm_90a", cache=False, snapshots=False)
    return ck.asm["ptx"]


def test_join_split_and_reshape_move_nothing():
    ptx = ptx_of(pairs_kernel, {"a_ptr": "*fp32", "b_ptr": "*fp32", "out_ptr": "*fp32"}, {"BLOCK": 512})
    assert "bar.sync" not in ptx and ".shared" not in ptx


def test_interleave_moves_only_for_the_store():
    """The interleaved tile (16 halves a thread) meets the store's layout (8 a thread) once, through shared memory."""
    ptx = ptx_of(dequant_kernel, {"q_ptr": "*u8", "scale_ptr": "*fp16", "out_ptr": "*fp16"}, {"BLOCK": 1024})
    assert ptx.count("bar.sync") == 1


@tilelab.jit
def split_loaded_pairs_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    """Pairs split from a loaded row: the load gives one element per thread, so each half has to move."""
    r = tl.arange(0, BLOCK)
    x1, x2 = tl.split(tl.reshape(tl.load(x_ptr + r), (BLOCK // 2, 2)))
    tl.store(out_ptr + tl.arange(0, BLOCK // 2), x1 * x2)


def test_both_halves_of_a_split_share_one_trip_through_shared_memory():
    ptx = ptx_of(split_loaded_pairs_kernel, {"x_ptr": "*fp16", "out_ptr": "*fp16"}, {"BLOCK": 128})
    # the row stored once, both halves read back (side by side: one ld.shared.v2.b16); one barrier
    # between (none before: nothing came first; none after: nothing shared follows)
    assert ptx.count("st.shared") == 1 and 1 <= ptx.count("ld.shared") <= 2
    assert ptx.count("bar.sync") == 1
