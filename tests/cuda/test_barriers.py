"""Scratch barriers on sm_90a (no GPU): ``barriers.py`` drops those with no shared access since the last
one, or none before the next one (or the end)."""

from __future__ import annotations

import numpy as np
import pytest
from llvmlite import ir

import tilelab
import tilelab.language as tl
from tilelab.compiler.backends.cuda.barriers import _SHARED_ASM, drop_redundant_barriers

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


@tilelab.jit
def spin_lock_kernel(lock_ptr, total_ptr, x_ptr):
    """Every program adds its value to one total under a lock: a ``while`` on ``atomic_cas`` takes it."""
    x = tl.load(x_ptr + tl.program_id(0))
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(total_ptr, tl.load(total_ptr) + x)
    tl.atomic_xchg(lock_ptr, 0)


@pytest.mark.parametrize(
    "asm,shared",
    [
        ("ld.global.nc.L1::evict_last.v4.b32 {$0, $1, $2, $3}, [$4];", False),
        ("@$1 atom.acq_rel.gpu.global.cas.b32 $0, [$2], $3, $4;", False),  # qualifiers before the space
        ("@$2 red.relaxed.gpu.global.add.v4.f32 [$0], {$1};", False),
        ("st.shared.v4.b32 [$0], {$1, $2, $3, $4};", True),
        ("atom.shared.add.f32 $0, [$1], $2;", True),
        ("ld.volatile.b32 $0, [$1];", True),  # no state space: generic, may be shared
        ("ld.shared.b32 $0, [$1]; st.global.b32 [$2], $0;", True),
        ("cp.async.cg.shared.global [$0], [$1], 16;", True),
    ],
)
def test_which_inline_ptx_may_touch_shared_memory(asm, shared):
    assert bool(_SHARED_ASM.search(asm)) == shared


def test_a_spin_loop_on_a_global_lock_waits_at_two_barriers_a_trip():
    sig = {"lock_ptr": "*i32", "total_ptr": "*i32", "x_ptr": "*i32"}
    ck = tilelab.compile(spin_lock_kernel, sig, {}, target=ARCH, num_warps=4, cache=False)
    # thread 0 swaps, the old word goes through shared memory to every thread: a barrier after its
    # store and one after the loads (the next trip's store); the atomic itself touches no shared memory
    assert ck.asm["ptx"].count("bar.sync") == 2


def test_spin_lock_totals(backend, dev, rng):
    n = 512
    x = rng.integers(-1000, 1000, n, dtype=np.int32)
    lock, total = dev.put(np.zeros(1, np.int32)), dev.put(np.zeros(1, np.int32))
    spin_lock_kernel[(n,)](lock, total, dev.put(x), num_warps=1, target=backend)
    np.testing.assert_array_equal(dev.get(total), [x.sum()])
    np.testing.assert_array_equal(dev.get(lock), [0])


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
