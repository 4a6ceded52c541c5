"""Transfer rules of the axis analysis, one hand-worked case each, then checked on concrete values.

Each test builds the index math of a kernel in Triton users' spelling, asserts the facts worked out
by hand (``c`` contiguity, ``d`` divisibility, ``k`` constancy), and evaluates the IR on launch values
(small divisors included, so that wrap-arounds happen inside a tile) to check the facts hold.
"""

import pytest

from tilelab.compiler import ir
from tilelab.compiler.analysis import analyze
from tilelab.compiler.analysis.memory_access import vector_width

from .ir_eval import check_facts, evaluate
from .ir_kit import Kit


def facts(info):
    return info.contiguity, info.divisibility, info.constancy


def check_values(module, arg_sets, pids=(0, 1, 5, 37), skip=()):
    """The facts of every tile value (but ``skip``) hold for each launch in ``arg_sets`` and ``pids``."""
    info = analyze(module)
    for args in arg_sets:
        for pid in pids:
            env = evaluate(module, args, pid=pid)
            for value, concrete in env.items():
                if value in info and value.type.shape and value not in skip:
                    elem = value.type.element
                    check_facts(info[value], concrete, step=elem.pointee.itemsize if elem.is_pointer else 1)


def wrapped_rows(m_div, block=128):
    """``offs = (pid * BLOCK + tl.arange(0, BLOCK)) % M`` of the matmul tutorial, then ``b + offs``."""
    k = Kit("wrap", divisibility={"b": 16, "M": m_div}, b="*fp16", M="i32")
    offs = k.bin("rem", k.bin("add", k.bin("mul", k.pid(), block), k.arange(0, block)), k.arg["M"])
    ptr = k.addptr(k.arg["b"], offs)
    return k.done(), offs, ptr


def test_rem_by_runtime_multiple_of_16_keeps_runs_of_16():
    # pid*128 + [0..127] is 128 contiguous from a multiple of 128; M = 16*p: a wrap can only
    # happen at a multiple of 16, so runs of 16 stay consecutive and start at multiples of 16.
    module, offs, ptr = wrapped_rows(16)
    info = analyze(module)
    assert facts(info[offs]) == ((16,), (16,), (1,))
    assert facts(info[ptr]) == ((16,), (16,), (1,))
    assert vector_width(info[ptr], 2) == 8  # 16-byte vectors of f16
    check_values(module, [[4096, 16], [4096, 48], [4096, 4000 // 16 * 16], [4096, 4096]])


def test_rem_by_runtime_value_of_unknown_divisibility_is_not_contiguous():
    module, offs, ptr = wrapped_rows(1)
    info = analyze(module)
    assert info[offs].contiguity == (1,) and vector_width(info[ptr], 2) == 1
    check_values(module, [[4096, 5], [4096, 4000]])


def test_rem_by_one_is_zero_and_scalar_rem_keeps_common_divisibility():
    k = Kit("r", divisibility={"a": 8, "b": 4}, a="i32", b="i32")
    zero = k.bin("rem", k.arange(0, 64), 1)
    scalar = k.bin("rem", k.arg["a"], k.arg["b"])
    module = k.done()
    info = analyze(module)
    assert info[zero].constant == 0 and info[zero].constancy == (64,)
    assert info[scalar].divisibility == (4,)  # a - q*b with 8 | a and 4 | b
    for a, b in [(8, 4), (24, 12), (800, 36)]:
        assert evaluate(module, [a, b])[scalar] % 4 == 0


def test_div_by_runtime_uniform_value_is_constant_in_runs():
    # (pid*64 + [0..63]) // N with 16 | N: the quotient steps only at multiples of N, so of 16
    k = Kit("q", divisibility={"N": 16}, N="i32")
    offs = k.bin("add", k.bin("mul", k.pid(), 64), k.arange(0, 64))
    quotient = k.bin("div", offs, k.arg["N"])
    module = k.done()
    info = analyze(module)
    assert facts(info[quotient]) == ((1,), (1,), (16,))
    check_values(module, [[16], [48], [1024]])


def test_tutorial_b_tile_vectorizes_along_n_with_wrapped_columns():
    # b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] with offs_bn = (...) % N, 16 | N, 16 | stride
    k = Kit("btile", divisibility={"b": 16, "N": 16, "sbk": 16}, b="*fp16", N="i32", sbk="i32")
    offs_bn = k.bin("rem", k.bin("add", k.bin("mul", k.pid(), 128), k.arange(0, 128)), k.arg["N"])
    rows = k.broadcast(k.expand(k.bin("mul", k.arange(0, 64), k.arg["sbk"]), 1), [64, 128])
    cols = k.broadcast(k.expand(offs_bn, 0), [64, 128])
    ptr = k.addptr(k.arg["b"], k.bin("add", rows, cols))
    module = k.done()
    info = analyze(module)
    assert info[ptr].contiguity == (1, 16) and info[ptr].divisibility == (2, 16)  # the base: 16 bytes
    assert vector_width(info[ptr], 2, dim=1) == 8
    check_values(module, [[4096, 4096, 4096], [4096, 48, 64]])


@pytest.mark.parametrize(
    "pred,flip_runs",
    [("lt", 16), ("ge", 16), ("gt", 1), ("le", 1)],  # offs < n, offs >= n flip only at n (16 | n)
)
def test_compare_offsets_with_a_runtime_bound(pred, flip_runs):
    k = Kit("cmp", divisibility={"n": 16}, n="i32")
    offs = k.bin("add", k.bin("mul", k.pid(), 256), k.arange(0, 256))
    mask = k.cmp(pred, offs, k.arg["n"])
    module = k.done()
    info = analyze(module)
    assert info[mask].constancy == (flip_runs,)
    check_values(module, [[16], [272], [4096]])


def test_bound_on_the_left_flips_at_the_bound():
    k = Kit("cmp", divisibility={"n": 16}, n="i32")
    offs = k.bin("add", k.bin("mul", k.pid(), 256), k.arange(0, 256))
    mask = k.cmp("gt", k.splat(k.arg["n"], [256]), offs)  # n > offs, i.e. offs < n
    module = k.done()
    assert analyze(module)[mask].constancy == (16,)
    check_values(module, [[16], [272]])


def test_masked_k_tail_of_the_tutorial_is_uniform_per_column():
    # mask = offs_k[None, :] < K - k * BK (BK = 64, 16 | K): runs of 16 along K, whole rows down M
    k = Kit("ktail", divisibility={"K": 16}, K="i32")
    rest = k.bin("sub", k.arg["K"], k.bin("mul", k.pid(), 64))
    offs_k = k.broadcast(k.expand(k.arange(0, 64), 0), [128, 64])
    mask = k.cmp("lt", offs_k, k.splat(rest, [128, 64]))
    module = k.done()
    info = analyze(module)
    assert info[mask].constancy == (128, 16)
    check_values(module, [[16], [4000 // 16 * 16], [4096]], pids=(0, 1, 2))


def test_clamped_bound_keeps_the_common_divisibility():
    # a block pointer's mask bound: min(max(K - off, 0), 64) with 16 | K and 16 | off is a multiple of 16
    k = Kit("clamp", divisibility={"K": 16}, K="i32")
    rest = k.bin("sub", k.arg["K"], k.bin("mul", k.pid(), 64))
    bound = k.bin("min", k.bin("max", rest, 0), 64)
    offs_k = k.arange(0, 64)
    mask = k.cmp("lt", offs_k, k.splat(bound, [64]))
    odd = k.bin("max", k.splat(rest, [64]), k.bin("add", offs_k, 3))
    module = k.done()
    info = analyze(module)
    assert info[mask].constancy == (16,)
    assert facts(info[odd])[1] == (1,)  # 3 + [0..63] shares no divisor with K - off
    check_values(module, [[16], [4000 // 16 * 16], [4096]], pids=(0, 1, 2))


def test_shifts_and_bit_masks():
    k = Kit("bits")
    offs = k.bin("add", k.bin("mul", k.pid(), 256), k.arange(0, 256))
    left, right = k.bin("shl", offs, 3), k.bin("shr", offs, 4)
    low, high = k.bin("and", offs, 63), k.bin("and", offs, -64)
    ored = k.bin("or", k.bin("shl", offs, 4), 3)
    module = k.done()
    info = analyze(module)
    assert facts(info[left]) == ((1,), (8,), (1,))
    assert facts(info[right]) == ((1,), (1,), (16,))
    assert facts(info[low])[:2] == ((64,), (64,))
    assert info[high].divisibility == (64,)
    assert info[ored].divisibility == (1,)
    check_values(module, [[]])


def test_splat_broadcast_expand_dims_and_make_range():
    k = Kit("shape", divisibility={"s": 32}, s="i32")
    rng = k.arange(64, 128)  # starts at 64
    col = k.expand(k.bin("mul", k.arange(0, 16), k.arg["s"]), 1)  # [16, 1]: every element 32 | x
    row = k.expand(rng, 0)  # [1, 64]
    grid = k.bin("add", k.broadcast(col, [16, 64]), k.broadcast(row, [16, 64]))
    splat = k.splat(k.arg["s"], [16, 64])
    module = k.done()
    info = analyze(module)
    assert facts(info[rng]) == ((64,), (64,), (1,))
    assert facts(info[col]) == ((1, 1), (32, 32), (1, 1))
    assert facts(info[row]) == ((1, 64), (1, 64), (1, 1))  # the new dim: every element, 65 too
    assert facts(info[grid]) == ((1, 64), (1, 32), (1, 1))
    assert facts(info[splat]) == ((1, 1), (32, 32), (16, 64))
    check_values(module, [[32], [96]])


def test_select_mixes_runs_so_the_persistent_matmul_needs_its_hints():
    # tl.where(offs < M, offs, 0): a run is either consecutive or all 0, so neither fact holds
    # (as in Triton); tl.max_contiguous(tl.multiple_of(...)) after it states what the user knows.
    k = Kit("sel", divisibility={"M": 16}, M="i32")
    offs = k.bin("add", k.bin("mul", k.pid(), 128), k.arange(0, 128))
    inside = k.cmp("lt", offs, k.arg["M"])
    clamped = k.one(ir.SelectOp(inside, offs, k.const(0, [128])))
    shifted = k.one(ir.SelectOp(inside, offs, k.bin("add", offs, 256)))
    aligned = k.hint(clamped, "multiple_of", 128)
    hinted = k.hint(aligned, "max_contiguous", 128)
    module = k.done()
    info = analyze(module)
    assert facts(info[clamped]) == ((1,), (1,), (1,))
    assert facts(info[shifted]) == ((16,), (16,), (1,))
    assert facts(info[hinted])[:2] == ((128,), (128,))
    check_values(module, [[16], [48], [4096]], skip={aligned, hinted})  # a hint is the user's promise


def test_loop_carried_pointer_advanced_by_a_runtime_stride():
    # a_ptrs += BK * stride_ak with 16 | stride: alignment survives the loop, contiguity too
    k = Kit("walk", divisibility={"a": 16, "s": 16, "n": 16}, a="*fp16", s="i32", n="i32")
    ptr0 = k.addptr(k.arg["a"], k.arange(0, 64))
    step = k.splat(k.bin("mul", k.arg["s"], 64), [64])
    loop = k.b.insert(ir.ForOp(k.const(0), k.arg["n"], k.const(1), [ptr0]))
    with k.b.at_end(loop.body):
        (p,) = loop.body.args[1:]
        k.load(p)
        k.op(ir.YieldOp([k.addptr(p, step)]))
    module = k.done()
    info = analyze(module)
    assert facts(info[loop.body.args[1]]) == ((64,), (16,), (1,))
    assert vector_width(info[loop.body.args[1]], 2) == 8


def test_random_programs_of_the_wrapped_tile(rng):
    module, _, _ = wrapped_rows(16, block=256)
    sets = [[16 * int(rng.integers(1, 4096)), 16 * int(rng.integers(1, 64))] for _ in range(6)]
    check_values(module, sets, pids=tuple(int(p) for p in rng.integers(0, 500, 4)))
