"""The CUDA scan lowering run on every thread of a CTA at once, no GPU: the layouts a scan meets.

``lower_scan_fast.emit_fast_scan`` builds its LLVM IR through a small surface (integer ops,
selects, shuffles, shared loads and stores, barriers). Here that surface is numpy over all
``32 * num_warps`` threads in lockstep (each instruction runs in every thread before the
next, so a barrier has nothing to do), and the combine is string concatenation: associative,
not commutative, so every element must come out as its line's earlier elements *in order*.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from llvmlite import ir

from tilelab.compiler.backends.cuda import lower_scan_fast as fast
from tilelab.compiler.backends.cuda.context import GTile, reg_indices
from tilelab.compiler.ir.types import f32
from tilelab.compiler.layouts import LANE, WARP, blocked


def _v(x):
    return x.constant if isinstance(x, ir.Constant) else x


class Threads:
    """The builder: every value is an array over the CTA's threads."""

    def __init__(self, n_threads: int):
        self.active = np.ones(n_threads, bool)
        self.memory: dict[int, object] = {}

    def _int(self, fn):
        return lambda a, c: fn(np.asarray(_v(a), dtype=np.int64), np.asarray(_v(c), dtype=np.int64))

    def __getattr__(self, name):
        ops = {"and_": np.bitwise_and, "or_": np.bitwise_or, "xor": np.bitwise_xor, "lshr": np.right_shift}
        ops |= {"shl": np.left_shift, "add": np.add, "mul": np.multiply, "udiv": np.floor_divide, "urem": np.mod}
        return self._int(ops[name])

    def icmp_unsigned(self, pred, a, c):
        a, c = np.asarray(_v(a), dtype=np.int64), np.asarray(_v(c), dtype=np.int64)
        return {"==": a == c, ">=": a >= c, ">": a > c, "<": a < c}[pred]

    def select(self, cond, a, c):
        return np.where(np.asarray(_v(cond), bool), a, c)

    @contextlib.contextmanager
    def if_then(self, cond):
        saved, self.active = self.active, self.active & np.asarray(_v(cond), bool)
        yield
        self.active = saved

    def store(self, value, address):
        address = np.broadcast_to(address, self.active.shape)
        for t in np.flatnonzero(self.active):
            self.memory[int(address[t])] = value[t]

    def load(self, address):
        address = np.broadcast_to(address, self.active.shape)
        return np.array([self.memory[int(a)] if on else "" for a, on in zip(address, self.active)], dtype=object)


class CTA:
    """The lowering context: lanes, warps and shared memory."""

    def __init__(self, num_warps: int):
        self.tid = tid = np.arange(32 * num_warps)
        self.num_warps, self.warp_size = num_warps, 32
        self.lane, self.warp, self.b = tid % 32, tid // 32, Threads(32 * num_warps)
        self.hooks = Hooks()

    def thread_index(self, layout):
        index = np.zeros_like(self.lane)
        for ids, in_dim in ((self.lane, LANE), (self.warp, WARP)):
            for i, v in enumerate(layout.in_bases(in_dim)):
                index ^= np.where((ids >> i) & 1, layout.flatten(v), 0)
        return index

    def shared(self, _elem, _nbytes):
        return "smem"

    def smem_elem(self, _smem, index, _t, offset_bytes=0):
        return np.asarray(_v(index)) * 4 + offset_bytes

    def barrier(self):
        pass


class Hooks:
    """The machine's lane exchanges (``hooks.shuffle_up32`` / ``shuffle_idx32``) over numpy lanes."""

    @staticmethod
    def shuffle_up32(lw, value, delta):
        src = lw.lane - _v(delta)
        return value[lw.warp * 32 + np.where(src < 0, lw.lane, src)]

    @staticmethod
    def shuffle_idx32(lw, value, lane):
        return value[lw.warp * 32 + np.broadcast_to(np.asarray(_v(lane)), lw.lane.shape)]


def _shfl(lw, value, _elem, move):
    return move(value)  # any element type: the tokens travel whole


class ScanOp:
    pass


def _concatenate(lw, op, a, c):
    """Operand 0 appends, operand 1 prepends: both associative, neither commutative."""
    return [a[0] + c[0]] + ([c[1] + a[1]] if len(a) > 1 else [])


def run_scan(layout, axis, num_warps, monkeypatch, operands: int = 1):
    monkeypatch.setattr(fast, "_shfl", _shfl)
    monkeypatch.setattr(fast, "combine", _concatenate)
    monkeypatch.setattr(fast, "to_bits", lambda b, v, e: v)
    monkeypatch.setattr(fast, "from_bits", lambda b, v, e: v)
    lw = CTA(num_warps)
    base = lw.thread_index(layout)
    tokens = np.array([f"{i}," for i in range(layout.num_elements)], dtype=object)
    regs = [tokens[base ^ r] for r in reg_indices(layout)]
    bits = fast.axis_bits(layout, axis)
    assert bits is not None
    scanned = fast.emit_fast_scan(lw, ScanOp(), [GTile(layout, f32, regs)] * operands, axis, bits)
    lines = np.moveaxis(tokens.reshape(layout.shape), axis, -1)
    for i, step in enumerate([lambda a, c: a + c, lambda a, c: c + a][:operands]):
        got = np.empty(layout.num_elements, dtype=object)
        for r, values in zip(reg_indices(layout), scanned[i].regs):
            got[base ^ r] = values
        want = np.moveaxis(np.frompyfunc(step, 2, 1).accumulate(lines, axis=-1), -1, axis)
        assert got.tolist() == want.reshape(-1).tolist()
    return bits


@pytest.mark.parametrize(
    "shape, spt, tpw, wpc, axis",
    [
        ([1024], [1], [32], [4], 0),  # 8 chunks of one element per thread over 4 warps
        ([1024], [4], [32], [4], 0),  # 2 chunks of 4-element vectors
        ([1024], [8], [32], [4], 0),  # one chunk
        ([8, 256], [1, 2], [1, 32], [8, 1], 1),  # warps along the other dim: chunks within one warp
        ([64, 64], [1, 4], [2, 16], [4, 1], 1),  # two lines per warp, 16 lanes each
        ([64, 64], [1, 4], [2, 16], [4, 1], 0),  # down the rows: lanes, warps, then register chunks
        # 128 totals a thread: made prefixes in place first (``PREFIX_IN_PLACE_ABOVE``), a thread a line
        ([64, 256], [1, 4], [2, 16], [4, 1], 0),  # 256 lines: two per thread in that pass
        ([64, 64], [1, 2], [1, 32], [4, 1], 0),  # 64 lines for 128 threads: half of them idle in it
        ([32, 128], [1, 4], [1, 32], [2, 2], 1),  # warps split both dims
        ([16, 32], [1, 1], [1, 32], [4, 1], 0),  # down the rows: warps then register chunks, no lanes
    ],
)
def test_fast_scan_in_blocked_layouts(shape, spt, tpw, wpc, axis, monkeypatch):
    num_warps = int(np.prod(wpc))
    layout = blocked(shape, spt, tpw, wpc, list(range(len(shape)))[::-1])
    run_scan(layout, axis, num_warps, monkeypatch)


def test_one_element_per_thread_scans_in_chunks(monkeypatch):
    bits = run_scan(blocked([1024], [1], [32], [4], [0]), 0, 4, monkeypatch)
    assert bits == {"register": [], "lane": [0, 1, 2, 3, 4], "warp": [0, 1], "chunk": [0, 1, 2]}


def test_two_operands_scan_together(monkeypatch):
    # associative_scan over a tuple (a linear recurrence): both operands through every step
    run_scan(blocked([2048], [2], [32], [8], [0]), 0, 8, monkeypatch, operands=2)
    run_scan(blocked([16, 256], [1, 4], [1, 32], [4, 1], [1, 0]), 1, 4, monkeypatch, operands=2)
