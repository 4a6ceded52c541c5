"""Scratch barriers on sm_90a (no GPU): ``barriers.py`` drops those with no shared access since the last
one, or none before the next one (or the end)."""

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


def test_a_barrier_between_shared_stores_stays():
    fn, barriers = _function(shared_store_between=True)
    # the first has nothing before it, the third nothing after it; the second orders two stores
    assert drop_redundant_barriers(fn, fn.blocks[0], set(barriers)) == 2
    assert [i for i in fn.blocks[0].instructions if i in barriers] == [barriers[1]]


def test_barriers_with_no_shared_access_after_them_go():
    fn, barriers = _function(shared_store_between=False)
    # the third follows the second with nothing between; then the second has nothing after it
    assert drop_redundant_barriers(fn, fn.blocks[0], set(barriers)) == 3
    assert not [i for i in fn.blocks[0].instructions if i in barriers]


def _loop(back_edge: bool):
    """``loop: st; bar; ld; bar; br (loop | exit)``, ``exit: ret``."""
    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ir.PointerType(addrspace=3), ir.IntType(1)]), "k")
    entry, loop, done = (fn.append_basic_block(n) for n in ("entry", "loop", "exit"))
    bar = module.declare_intrinsic("llvm.nvvm.barrier0", fnty=ir.FunctionType(ir.VoidType(), []))
    ir.IRBuilder(entry).branch(loop)
    b = ir.IRBuilder(loop)
    b.store(ir.Constant(ir.IntType(8), 1), fn.args[0])
    first = b.call(bar, [])
    b.load(fn.args[0], typ=ir.IntType(8))
    second = b.call(bar, [])
    b.cbranch(fn.args[1], loop, done) if back_edge else b.branch(done)
    ir.IRBuilder(done).ret_void()
    return fn, loop, [first, second]


def test_a_loops_last_barrier_stays_where_the_next_trip_stores():
    fn, loop, barriers = _loop(back_edge=True)
    assert drop_redundant_barriers(fn, loop, set(barriers)) == 0
    fn, loop, barriers = _loop(back_edge=False)  # one trip: nothing shared after the last barrier
    assert drop_redundant_barriers(fn, loop, set(barriers)) == 1
    assert [i for i in loop.instructions if i in barriers] == [barriers[0]]
