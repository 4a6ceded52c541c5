"""Reductions on sm_90a, read from PTX (no GPU): what a built-in reduction costs against a user's combine.

A butterfly step hands each lane its partner's partial; a user's ``tl.reduce`` combine may
care which side comes first, so the lowering puts the lower lane's partial first (two
``selp`` per value and step; LLVM folds them away where the combine is one commutative
op, as ``tl.sum``'s). ``tl.argmax`` / ``tl.argmin`` are two such one-op reductions (the
extreme, then the least index holding it), not a combine of (value, index) pairs; a
``tl.max`` of the same tile is the argmax's first reduction (``cse``).
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


def reductions_of(ck) -> list[ReduceOp]:
    return [op for op in ck.module.walk() if isinstance(op, ReduceOp)]


def test_argmax_and_argmin_are_one_op_reductions():
    ck = compile_(reductions)
    # argmax and argmin: the extreme and the least index holding it; the untied argmax is the first one
    combines = [[o.attrs.get("kind") for o in op.combine.ops][:-1] for op in reductions_of(ck)]
    assert combines == [["max"], ["min"], ["min"], ["min"]]
    assert len(reductions_of(compile_(user_argmax))) == 1


def test_max_and_argmax_of_one_tile_share_the_max():
    def max_and_argmax(x_ptr, out_ptr, BLOCK: tl.constexpr):
        v = tl.load(x_ptr + tl.arange(0, BLOCK))
        tl.store(out_ptr, tl.max(v, axis=0).to(tl.int32) + tl.argmax(v, axis=0))

    assert len(reductions_of(compile_(max_and_argmax))) == 2


def test_builtin_argmax_skips_the_pair_combine():
    builtin = compile_(builtin_argmax).asm["ptx"]
    user = compile_(user_argmax).asm["ptx"]
    # 5 lane steps then 2 over the warps' partials, for each of the two reductions: a max (or min) a step
    # and no selp; between them one selp a thread's element (index or none) and one for a row of NaNs.
    # The user's pair combine picks value and index with selp, and orders the partners first
    assert selp_after_shuffles(builtin) <= 1024 // (4 * 32) + 1
    assert selp_after_shuffles(user) >= selp_after_shuffles(builtin) + 4 * 6
