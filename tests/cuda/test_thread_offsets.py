"""A thread's offset in a layout (``context.xor_flat``): right for every lane and warp, and shallow enough
for LLVM to see its bounds (no GPU: the offset function runs on the host, the kernel is only compiled).

``xor_flat`` turns ``L(lane) ^ L(warp)`` into integer code: runs of index bits that land on consecutive
single bits become one mask and one shift, terms whose bits cannot meet are joined by ``or``, the
others by ``xor``. The first test runs that code on this machine for every lane and warp of random
layouts, against the XOR of the basis vectors worked out here. The last ones check what it is for: in
a loop over a row, ``i + offset`` (``i`` a multiple of the block) leaves LLVM's O3 as ``or disjoint``,
which it is; when the offset was a chain of one ``xor`` per bit, LLVM's known-bits analysis (six
operations deep) lost its bound and the sum stayed an ``add``.
"""

import ctypes
import random
import re

import pytest
from llvmlite import ir

import tilelab
from benchmarks.corpus.kernels import cross_entropy_kernel
from tilelab.compiler.backends.cpu.codegen import compile_llvm, load_object
from tilelab.compiler.backends.cuda.context import xor_flat

I32 = ir.IntType(32)


def _reference(lane: int, warp: int, lane_ints: list[int], warp_ints: list[int]) -> int:
    out = 0
    for index, ints in ((lane, lane_ints), (warp, warp_ints)):
        for bit, flat in enumerate(ints):
            if index >> bit & 1:
                out ^= flat
    return out


def _random_bases(rng: random.Random, n: int) -> list[int]:
    """Basis vectors as layouts have them: mostly single bits in runs, some zero (broadcast), some of
    several bits (swizzles), some repeating a bit another vector has (so the terms overlap)."""
    out, at = [], rng.randrange(0, 6)
    for _ in range(n):
        kind = rng.random()
        if kind < 0.55:
            out.append(1 << at)
            at += 1
        elif kind < 0.65:
            out.append(0)
        elif kind < 0.8:
            at = rng.randrange(0, 14)
            out.append(1 << at)
        else:
            out.append(rng.randrange(1, 1 << 14))
    return out


def _offsets_function(layouts: list[tuple[list[int], list[int]]]):
    """One host function per layout, ``f(lane, warp) -> offset``, as ``xor_flat`` builds it."""
    module = ir.Module(name="offsets")
    for k, (lane_ints, warp_ints) in enumerate(layouts):
        fn = ir.Function(module, ir.FunctionType(I32, [I32, I32]), name=f"offset{k}")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        lane, warp = fn.args
        b.ret(xor_flat(b, [(lane, lane_ints), (warp, warp_ints)]))
    module.triple = ""
    _, obj, _ = compile_llvm(module, opt_level=2, want_asm=False)
    loaded = load_object(obj)
    kind = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32)
    return loaded, [kind(loaded.address(f"offset{k}")) for k in range(len(layouts))]


def test_every_lane_and_warp_gets_the_xor_of_its_basis_vectors():
    rng = random.Random(20261206)
    layouts = [(_random_bases(rng, 5), _random_bases(rng, rng.randrange(0, 4))) for _ in range(60)]
    layouts += [([8, 16, 32, 64, 128], [256, 512, 1024, 2048]), ([0] * 5, []), ([1, 2, 4, 8, 16], [0, 32])]
    loaded, functions = _offsets_function(layouts)
    for (lane_ints, warp_ints), f in zip(layouts, functions):
        for lane in range(32):
            for warp in range(1 << len(warp_ints)):
                assert f(lane, warp) == _reference(lane, warp, lane_ints, warp_ints), (lane_ints, warp_ints)
    del loaded


def test_a_run_of_bits_is_one_mask_and_one_shift():
    module = ir.Module(name="run")
    fn = ir.Function(module, ir.FunctionType(I32, [I32, I32]), name="f")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    lane, warp = fn.args
    b.ret(xor_flat(b, [(lane, [8, 16, 32, 64, 128]), (warp, [256, 512])]))
    ops = [i.opname for i in fn.blocks[0].instructions]
    assert ops == ["and", "shl", "and", "shl", "or", "ret"]


def _optimized_ir(num_warps: int, block: int) -> str:
    """The kernel's LLVM IR as O3 leaves it."""
    sig = {"X_ptr": "*bf16", "X_stride": "i32", "Y_ptr": "*i32", "loss_ptr": "*f32", "n_cols": "i32"}
    ck = tilelab.compile(
        tilelab.jit(cross_entropy_kernel), sig, {"BLOCK_SIZE": block}, target="cuda:sm_90a", num_warps=num_warps,
        num_stages=1, divisibility={"X_ptr": 16, "X_stride": 16, "n_cols": 16}, cache=False, snapshots=False,
    )  # fmt: skip
    return ck.asm["llir"]


@pytest.mark.parametrize("num_warps, block", [(4, 2048), (16, 8192)])
def test_llvm_sees_the_offsets_stay_below_the_block(num_warps, block):
    """The corpus's cross-entropy kernel (Liger-style: a row loop for the log-sum-exp, another writing the
    gradient, ``offs == y`` marking the target column): 16 elements a thread in two runs of 8, ``i`` a
    multiple of the block. In the second loop every ``i + offset`` is an ``or``."""
    llir = _optimized_ir(num_warps, block)
    loop = re.findall(r"\nfor\.body[\w.]*:.*?\n\n", llir, re.S)[-1]
    assert len(re.findall(r"= or disjoint i32", loop)) >= 16
    assert not re.search(r"= add i32 %[\w.]+, %[\w.]+", loop), "an i + offset left an add"
