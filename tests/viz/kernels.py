"""Small kernels whose memory behaviour is known by hand, for the analysis-view tests."""

import tilelab
import tilelab.language as tl


@tilelab.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


@tilelab.jit
def strided(x, out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + 2 * offs))


@tilelab.jit
def transposed(x, out, B: tl.constexpr):
    rows = tl.arange(0, B)
    cols = tl.arange(0, B)
    tile = tl.load(x + rows[:, None] + cols[None, :] * B)
    tl.store(out + rows[:, None] * B + cols[None, :], tile)


@tilelab.jit
def matmul(a, b, c, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    n = tl.num_programs(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
        y = tl.load(b + (k + rk)[:, None] * n + rn[None, :])
        acc += tl.dot(x, y)
    tl.store(c + rm[:, None] * n + rn[None, :], acc)


def compile_add(block=1024, n_divisible=True, target="cpu", dtype="fp32"):
    sig = {"x": f"*{dtype}", "y": f"*{dtype}", "out": f"*{dtype}", "n": "i32"}
    div = {"n": 16} if n_divisible else {"n": 1}
    return tilelab.compile(add, signature=sig, constants={"BLOCK": block}, target=target, divisibility=div, cache=False)


def compile_matmul(bm=64, bn=64, bk=32, target="cpu"):
    sig = {"a": "*fp16", "b": "*fp16", "c": "*fp32", "K": "i32"}
    consts = {"BM": bm, "BN": bn, "BK": bk}
    return tilelab.compile(matmul, signature=sig, constants=consts, target=target, divisibility={"K": 16}, cache=False)


@tilelab.jit
def column_store(x, out, N: tl.constexpr, B: tl.constexpr):
    rows = tl.program_id(0) * B + tl.arange(0, B)
    cols = tl.program_id(1) * B + tl.arange(0, B)
    tile = tl.load(x + rows[:, None] * N + cols[None, :])
    tl.store(out + cols[None, :] * N + rows[:, None], tile)  # contiguous along dim 0: through shared memory


def compile_column_store(block=64, dtype="fp32", target="cuda:sm_90a"):
    sig = {"x": f"*{dtype}", "out": f"*{dtype}"}
    return tilelab.compile(column_store, signature=sig, constants={"N": 1024, "B": block}, target=target, cache=False)
