"""Reductions on sm_90a, read from PTX (no GPU): what a built-in reduction's combine lets the lowering skip.

A butterfly step hands each lane its partner's partial; a user's ``tl.reduce`` combine may
care which side comes first, so the lowering puts the lower lane's partial first (two
``selp`` per value and step; LLVM folds them away where the combine is one commutative
op, as ``tl.sum``'s). ``tl.argmax`` / ``tl.argmin`` with the lower index winning ties are a
max over (value, index) pairs: marked ``commutative`` in the IR, their steps combine the two
partials as they come.
"""

from __future__ import annotations

import re

import tilelab
import tilelab.language as tl
from tilelab.compiler.ir.ops import ReduceOp


@tilelab.jit
def first_wins(v1, i1, v2, i2):
    keep = (v1 > v2) | ((v1 == v2) & (i1 < i2)) | ((v1 != v1) & (v2 == v2))
    return tl.where(keep, v1, v2), tl.where(keep, i1, i2)


def builtin_argmax(x_ptr, out_ptr, BLOCK: tl.constexpr):
    v = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(out_ptr, tl.argmax(v, axis=0))


def user_argmax(x_ptr, out_ptr, BLOCK: tl.constexpr):
    v = tl.load(x_ptr + tl.arange(0, BLOCK))
    _, i = tl.reduce((v, tl.arange(0, BLOCK)), 0, first_wins)
    tl.store(out_ptr, i)


def reductions(x_ptr, out_ptr, BLOCK: tl.constexpr):
    v = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(out_ptr, tl.argmax(v, axis=0) + tl.argmin(v, axis=0) + tl.argmax(v, axis=0, tie_break_left=False))


def compile_(fn):
    return tilelab.compile(
        tilelab.jit(fn), {"x_ptr": "*fp32", "out_ptr": "*i32"}, {"BLOCK": 1024}, target="cuda:sm_90a",
        num_warps=4, snapshots=False, cache=False,
    )  # fmt: skip


def selp_after_shuffles(ptx: str) -> int:
    body = ptx[ptx.index("shfl.sync.bfly") :]
    return len(re.findall(r"\bselp\.", body))


def test_argmax_and_argmin_say_they_are_commutative():
    ck = compile_(reductions)
    flags = [op.attrs.get("commutative", False) for op in ck.module.walk() if isinstance(op, ReduceOp)]
    assert flags == [True, True, False]  # tie_break_left=False: either index of a tie may come back
    user = compile_(user_argmax)
    assert [op.attrs.get("commutative", False) for op in user.module.walk() if isinstance(op, ReduceOp)] == [False]


def test_builtin_argmax_skips_the_lane_order_selects():
    builtin = compile_(builtin_argmax).asm["ptx"]
    user = compile_(user_argmax).asm["ptx"]
    # 5 lane steps then 2 over the warps' partials: 2 selp each pick the (value, index) result (LLVM
    # merges a few in the last step); the user's combine adds 4 a step to order the partners first
    assert selp_after_shuffles(builtin) <= 2 * 7 + 2
    assert selp_after_shuffles(user) >= selp_after_shuffles(builtin) + 4 * 6
