"""Shared-memory addresses keep an index's constant terms outside its scaling to bytes (no GPU needed)."""

import re

import numpy as np
from llvmlite import ir

import tilelab
import tilelab.language as tl
from tests.support.llvm_ir import optimized_ir
from tilelab.compiler.backends.cuda.context import split_constant

I32 = ir.IntType(32)


def _builder():
    fn = ir.Function(ir.Module(), ir.FunctionType(I32, [I32, I32]), "f")
    return ir.IRBuilder(fn.append_basic_block()), fn.args


def test_split_constant_gathers_the_constants_of_an_add_tree():
    b, (x, y) = _builder()
    assert split_constant(b, ir.Constant(I32, 7)) == (None, 7)
    assert split_constant(b, b.add(x, ir.Constant(I32, 3))) == (x, 3)
    rest, c = split_constant(b, b.add(b.add(ir.Constant(I32, 1), x), b.add(y, ir.Constant(I32, -5))))
    assert c == -4 and rest.opname == "add" and list(rest.operands) == [x, y]


def test_negative_split_constant_leaves_what_is_not_a_sum_with_a_constant():
    b, (x, y) = _builder()
    for v in (b.xor(x, ir.Constant(I32, 3)), b.add(x, y), x):
        assert split_constant(b, v) == (v, 0)


def test_split_constant_is_exact_in_wrapping_i32():
    """``x + c`` rebuilt from the split equals the sum for any inputs, overflow included."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        xs, cs = rng.integers(-(2**31), 2**31, 2), rng.integers(-(2**31), 2**31, 2)
        b, (x, y) = _builder()
        v = b.add(b.add(x, ir.Constant(I32, int(cs[0]))), b.add(ir.Constant(I32, int(cs[1])), y))
        rest, c = split_constant(b, v)
        assert list(rest.operands) == [x, y]
        want = (int(xs[0]) + int(cs[0]) + int(cs[1]) + int(xs[1])) % 2**32
        assert (int(xs[0]) + int(xs[1]) + c) % 2**32 == want


@tilelab.jit
def tutorial_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, BM: tl.constexpr,
                    BN: tl.constexpr, BK: tl.constexpr):  # fmt: skip
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = (pid_m * BM + tl.arange(0, BM)) % M
    rn = (pid_n * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    rcm = pid_m * BM + tl.arange(0, BM)
    rcn = pid_n * BN + tl.arange(0, BN)
    tl.store(
        c_ptr + rcm[:, None] * stride_cm + rcn[None, :],
        acc.to(tl.float16),
        mask=(rcm[:, None] < M) & (rcn[None, :] < N),
    )


def test_ring_stages_and_tile_places_become_constant_byte_offsets():
    """After O3, no shared address of a pipelined matmul scales a sum with a constant (``(x | 2560) << 1``): the
    constant is added in bytes, where the access takes it as its immediate offset (3 of 39 did before)."""
    sig = {n: "*f16" for n in ("a_ptr", "b_ptr", "c_ptr")} | {
        n: "i32" for n in ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")
    }
    ck = tilelab.compile(
        tutorial_matmul, sig, {"BM": 128, "BN": 256, "BK": 64}, target="cuda:sm_90a", num_warps=8, num_stages=3,
        divisibility={n: 16 for n in sig}, cache=False, snapshots=False,
    )  # fmt: skip
    text = optimized_ir(ck)
    sums = dict(re.findall(r"(%[\w.]+) = ((?:or disjoint|add(?: nuw)?(?: nsw)?) i32 %[\w.]+, \d+)", text))
    scaled = dict(re.findall(r"(%[\w.]+) = (?:shl|mul)(?: nuw)?(?: nsw)? i32 (%[\w.]+), \d+", text))
    indices = re.findall(r"getelementptr i8, ptr addrspace\(3\) @tilelab_smem, i32 (%[\w.]+)", text)
    assert indices
    assert [i for i in indices if scaled.get(i) in sums] == []
