"""Scratch barriers on sm_90a (no GPU): ``barriers.py`` drops those with no shared access since the last one."""

from __future__ import annotations

from llvmlite import ir

import tilelab
import tilelab.language as tl
from tilelab.compiler.backends.cuda.barriers import drop_redundant_barriers

ARCH = "cuda:sm_90a"


@tilelab.jit
def softmax_rows_kernel(x_ptr, out_ptr, n_rows, BLOCK: tl.constexpr):
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        x = tl.load(x_ptr + row * BLOCK + tl.arange(0, BLOCK))
        num = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + row * BLOCK + tl.arange(0, BLOCK), num / tl.sum(num, axis=0))


@tilelab.jit
def user_barriers_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.debug_barrier()
    tl.debug_barrier()
    tl.store(x_ptr + offs, x + 1)


def test_two_reductions_in_a_loop_share_their_barriers():
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n_rows": "i32"}
    ck = tilelab.compile(softmax_rows_kernel, sig, {"BLOCK": 2048}, target=ARCH, num_warps=8, cache=False)
    # each reduction: partials stored, a barrier, read, a barrier (its leading barrier follows
    # the previous one's last: in the loop, the last of the trip before)
    assert ck.asm["ptx"].count("bar.sync") == 4


def test_the_users_barriers_stay():
    ck = tilelab.compile(user_barriers_kernel, {"x_ptr": "*fp32"}, {"BLOCK": 256}, target=ARCH, cache=False)
    assert ck.asm["ptx"].count("bar.sync") == 2


def _function(shared_store_between: bool):
    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ir.PointerType(addrspace=3)]), "k")
    b = ir.IRBuilder(fn.append_basic_block("body"))
    bar = module.declare_intrinsic("llvm.nvvm.barrier0", fnty=ir.FunctionType(ir.VoidType(), []))
    first = b.call(bar, [])
    b.store(ir.Constant(ir.IntType(8), 1), fn.args[0])
    second = b.call(bar, [])
    if shared_store_between:
        b.store(ir.Constant(ir.IntType(8), 2), fn.args[0])
    third = b.call(bar, [])
    b.ret_void()
    return fn, [first, second, third]


def test_a_barrier_after_a_shared_store_stays():
    fn, barriers = _function(shared_store_between=True)
    # the first has nothing before it; the others follow shared stores
    assert drop_redundant_barriers(fn, fn.blocks[0], set(barriers)) == 1
    assert [i for i in fn.blocks[0].instructions if i in barriers] == barriers[1:]


def test_back_to_back_barriers_keep_one():
    fn, barriers = _function(shared_store_between=False)
    assert drop_redundant_barriers(fn, fn.blocks[0], set(barriers)) == 2
    assert [i for i in fn.blocks[0].instructions if i in barriers] == [barriers[1]]
