"""GPU lowering of the software pipeliner's ops: ring stages and ``cp.async`` copies.

``ttg.memdesc_index`` names stage ``i`` of a ring: the ring's ``SharedBuffer`` with a
run-time element offset ``i * stage_elems`` (the swizzle of one stage is unchanged, and
every stage starts 16-byte aligned, so ``ldmatrix`` still applies).

``ttg.async_copy_global_to_local`` copies, per thread, runs of registers that are
adjacent both in global memory (axis info of the pointers, as for ``tt.load``) and in the
buffer (its shared layout) with one ``cp.async`` each: 16 bytes with ``.cg`` (bypassing
L1), 4 or 8 bytes with ``.ca``. A masked-off run gets ``src-size`` 0: nothing is read and
the bytes are zero-filled. In a layout with fewer elements than threads, a thread holding
copies of another thread's elements skips the instruction (``@p``: only each element's owner
copies it; a zero-filling copy would race with the owner's)::

    cp.async.cg.shared.global [%r1], [%rd2], 16, %r3;     // %r3 = mask ? 16 : 0

Runs under 4 bytes (2-byte elements without vector alignment) fall back to a predicated
``ld.global`` and ``st.shared`` in the same place, which the wait and barrier order the
same way. ``ttg.async_commit_group`` and ``ttg.async_wait {num}`` become
``cp.async.commit_group`` and ``cp.async.wait_group num``.
"""

from __future__ import annotations

import contextlib

from llvmlite import ir

from tilelab.compiler.analysis.memory_access import vector_width
from tilelab.compiler.ir.ops import AsyncCommitGroupOp, AsyncCopyGlobalToLocalOp, AsyncWaitOp, MemDescIndexOp
from tilelab.compiler.layouts import LANE, WARP, contiguous_elements, fastest_dim, vector_run

from ..common.types import I32
from .context import broadcast_mask, const_i32, lower
from .lower_memory import _load_group, from_bits, memory_bits, to_bits
from .lower_shape import _affine_split, xor_const
from .lower_shared import SharedBuffer, first_index


@lower(MemDescIndexOp)
def lower_memdesc_index(lw, op):
    ring, index = lw.get(op.ring), lw.get(op.index)
    offset = lw.b.mul(index, const_i32(ring.stage_elems))
    if ring.dynamic is not None:
        offset = lw.b.add(offset, ring.dynamic)
    lw.set(op.result, SharedBuffer(ring.first, ring.bits, ring.places, ring.stage_elems, offset))


def _global_width(lw, op, elem_bytes: int) -> int:
    """Elements a thread may read at once from the pointers of ``op`` (contiguity, alignment, mask)."""
    layout = op.ptrs.type.layout
    dim = fastest_dim(layout)
    mask = lw.axis[op.mask] if op.mask is not None and op.mask in lw.axis else None
    by_address = vector_width(lw.axis[op.ptrs], elem_bytes, dim, mask) if op.ptrs in lw.axis else 1
    return max(1, min(by_address, contiguous_elements(layout, dim)))


def address_run(lw, ptrs) -> int:
    """Registers in a row (0, 1, ...) of a thread whose addresses follow one another: the pointers' contiguity
    along ``fastest_dim`` (the axis analysis's), as far as the thread holds it; alignment and masks aside."""
    layout = ptrs.type.layout
    dim = fastest_dim(layout)
    by_address = lw.axis[ptrs].contiguity[dim] if ptrs in lw.axis else 1
    return max(1, min(by_address, contiguous_elements(layout, dim)))


def run_addresses(lw, regs: list, pointee, run: int) -> list:
    """``regs`` (an address per register) with each one after the first of its ``run`` rebuilt as that first
    plus a constant.

    For copies narrower than the run (a K-major shared operand takes 4 bytes at a time from rows of 16
    contiguous bytes in global memory, the shared side's order limiting the vector), each register's
    address was computed on its own, from an offset a loop keeps in a register of its own. Rebuilt, one
    offset a run is kept and the others are constant steps from it (tf32's pipelined matmul, 128x128x32
    on 4 warps: 240 -> 202 registers).

        before: %a1 = getelementptr float, ptr addrspace(1) %base, i64 %off1
        after:  %a1 = getelementptr float, ptr addrspace(1) %a0, i32 1
    """
    return [regs[r] if r % run == 0 else lw.b.gep(regs[r - r % run], [const_i32(r % run)], source_etype=pointee)
            for r in range(len(regs))]  # fmt: skip


def _cp_async(lw, dst, src, nbytes: int, pred, owner=None) -> None:
    """One ``cp.async`` of ``nbytes`` (4, 8 or 16) from global ``src`` to the shared address ``dst``.

    ``pred`` false zero-fills the destination; ``owner`` false skips the instruction.
    """
    kind = "cg" if nbytes == 16 else "ca"
    args, cons = [dst, src], "r,l"
    text = f"cp.async.{kind}.shared.global [$0], [$1], {nbytes}"
    if pred is not None:
        args.append(lw.b.select(pred, const_i32(nbytes), const_i32(0)))
        text, cons = text + f", ${len(args) - 1}", cons + ",r"
    if owner is not None:
        args.append(owner)
        text, cons = f"@${len(args) - 1} " + text, cons + ",b"
    asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), [a.type for a in args]), text + ";", cons + ",~{memory}", True)
    lw.b.call(asm, args)


def _sync_copy(lw, elem, smem_ptr, src, pred, v: int, owner=None) -> None:
    """The fallback for runs under 4 bytes: a predicated load (zeros when masked off) stored to shared memory.

    ``owner`` false (a thread holding copies of another thread's elements) stores nothing.
    """
    b = lw.b
    zero = from_bits(b, ir.Constant(ir.IntType(memory_bits(elem)), 0), elem)
    values = _load_group(lw, elem, src, pred, [zero] * v if pred is not None else None, v, False)
    with b.if_then(owner) if owner is not None else contextlib.nullcontext():
        for j, x in enumerate(values):
            b.store(to_bits(b, x, elem), b.gep(smem_ptr, [const_i32(j)]))


@lower(AsyncCopyGlobalToLocalOp)
def lower_async_copy(lw, op):
    buf, ptrs = lw.get(op.view), lw.get(op.ptrs)
    mask = lw.get(op.mask) if op.mask is not None else None
    elem = op.view.type.element
    bits = memory_bits(elem)
    it = ir.IntType(bits)
    consts, per_thread, flats = _affine_split(lw, op.ptrs.type.layout, lambda i: buf.places[i])
    v = min(vector_run(consts, flats, bits), _global_width(lw, op, bits // 8))
    first = first_index(lw, buf)
    smem = lw.shared(it, 0, private=False)
    layout = op.ptrs.type.layout
    owner = None  # threads holding copies of another thread's elements copy nothing
    if (
        broadcast_mask(layout, LANE)
        or broadcast_mask(layout, WARP)
        or len(layout.in_bases(WARP)) < lw.num_warps.bit_length() - 1
    ):
        owner = lw.is_owner(layout)
    run = address_run(lw, op.ptrs)
    srcs = run_addresses(lw, ptrs.regs, it, run) if run > v else ptrs.regs
    for r in range(0, len(consts), v):
        index = lw.b.add(xor_const(lw.b, per_thread, flats, consts[r]), first)
        ptr = lw.smem_elem(smem, index, it, private=False)
        pred = mask.regs[r] if mask is not None else None
        if v * bits >= 32:
            _cp_async(lw, lw.b.ptrtoint(ptr, I32), srcs[r], v * bits // 8, pred, owner)
        else:
            _sync_copy(lw, elem, ptr, srcs[r], pred, v, owner)


def _asm(lw, text: str) -> None:
    asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), []), text, "~{memory}", True)
    lw.b.call(asm, [])


@lower(AsyncCommitGroupOp)
def lower_commit(lw, op):
    _asm(lw, "cp.async.commit_group;")


@lower(AsyncWaitOp)
def lower_wait(lw, op):
    _asm(lw, f"cp.async.wait_group {op.num};")
