"""GPU lowering of the explicit shared-memory ops: ``local_alloc``, ``local_store``, ``local_load``, ``memdesc_trans``.

A buffer is ``offset`` bytes into the program's dynamic shared memory (the offset the
``allocate-shared-memory`` pass chose). Its shared layout maps each element's row-major
index ``i`` to its place in the buffer, ``P(i)``; as the layout is linear over GF(2), so is
``P``, and the place of register ``r`` of a thread is a constant XOR a per-thread part:
``P(REG[r] ^ T) = P(REG[r]) ^ P(T)``. Registers that sit side by side in the
buffer move as one vector (up to 16 bytes; ``vector_groups``: neighbouring registers, or any a
buffer laid out for the conversion puts together); 16-bit mma fragments move with ``ldmatrix`` and
``stmatrix`` (``lower_ldmatrix.py``). Barriers are not placed here: the
``insert-barriers`` pass put ``gpu.barrier`` ops exactly where the accesses race.
A stage of a ring (``ttg.memdesc_index``, lowered in ``lower_async.py``) is the same
buffer plus a run-time element offset (``dynamic``), a multiple of the stage size. A
transposed view (``ttg.memdesc_trans``) is the same bytes with the view's index map.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from tilelab.compiler.ir.ops import LocalAllocOp, LocalLoadOp, LocalStoreOp, MemDescTransOp
from tilelab.compiler.layouts import OFFSET, LinearLayout, flat_of, vector_groups

from .context import GTile, LoweringBug, const_i32, lower
from .lower_ldmatrix import emit_ldmatrix, emit_stmatrix, ldmatrix_enabled, plan_ldmatrix
from .lower_memory import from_bits, memory_bits, pack, to_bits
from .lower_shape import _affine_split, xor_const


@dataclass
class SharedBuffer:
    """A lowered ``local_alloc``: its first element (in elements of ``bits``) and its index map.

    A ring stage adds ``dynamic`` (an i32 llvmlite value, a multiple of ``stage_elems``) to ``first``.
    """

    first: int
    bits: int
    places: np.ndarray  # places[row-major index] = element offset in the buffer
    stage_elems: int = 0  # elements of one stage of a ring
    dynamic: ir.Value | None = None


def first_index(lw, buf: SharedBuffer) -> ir.Value:
    """The buffer's first element as an i32 (the constant ``first``, plus a ring stage's offset)."""
    first = const_i32(buf.first)
    return first if buf.dynamic is None else lw.b.add(buf.dynamic, first)


#: the largest swizzle repeat (8 rows of 128 bytes): where the dynamic shared memory starts when a
#: swizzled buffer is read by the async proxy (wgmma, TMA), which swizzles absolute address bits
SMEM_ALIGN = 1024


def shared_address(lw, buf: SharedBuffer, elem: ir.Value | None = None) -> ir.Value:
    """The i32 shared-memory address of a buffer's first element (or of element ``elem`` after it).

    For the async proxy's readers and writers (wgmma descriptors, TMA copies): the dynamic shared
    memory is declared ``SMEM_ALIGN``-aligned, so that swizzle patterns agree with the hardware's.
    """
    smem = lw.shared(ir.IntType(8), 0, private=False)
    smem.align = max(smem.align or 1, SMEM_ALIGN)
    index = first_index(lw, buf)
    if elem is not None:
        index = lw.b.add(index, elem)
    return lw.b.ptrtoint(lw.smem_elem(smem, index, ir.IntType(buf.bits), private=False), ir.IntType(32))


def buffer_places(shared: LinearLayout) -> np.ndarray:
    """``P``: for each row-major index of the tile, the element offset the shared layout gives it."""
    offsets = np.arange(shared.in_size(OFFSET))
    flats = flat_of(shared, shared.apply(offset=offsets))
    places = np.empty_like(offsets)
    places[flats] = offsets
    return places


@lower(LocalAllocOp)
def lower_local_alloc(lw, op):
    t = op.result.type
    offset = op.attrs.get("offset")
    if offset is None or t.layout is None:
        raise LoweringBug(f"{op.name} at {op.loc} has no offset or no shared layout (run allocate-shared-memory)")
    bits = memory_bits(t.element)
    lw.shared(ir.IntType(8), offset + op.nbytes, private=False)
    stage_elems = op.stage_bytes * 8 // bits
    lw.set(op.result, SharedBuffer(offset * 8 // bits, bits, buffer_places(t.layout), stage_elems))


@lower(MemDescTransOp)
def lower_memdesc_trans(lw, op):
    buf = lw.get(op.src)
    places = buffer_places(op.result.type.layout)
    lw.set(op.result, SharedBuffer(buf.first, buf.bits, places, buf.stage_elems, buf.dynamic))


def _pointer(lw, index, it, v):
    smem = lw.shared(it, 0, private=False)
    p = lw.smem_elem(smem, index, it, private=False)
    return p if v == 1 else lw.b.bitcast(p, ir.VectorType(it, v).as_pointer(3))


@lower(LocalStoreOp)
def lower_local_store(lw, op):
    buf, tile = lw.get(op.buf), lw.get(op.value)
    b, it = lw.b, ir.IntType(buf.bits)
    consts, per_thread, flats = _affine_split(lw, tile.layout, lambda i: buf.places[i])
    runs = vector_groups(consts, flats, buf.bits)
    v = len(runs[0])
    first = first_index(lw, buf)
    matrices = _stmatrix_plan(lw, buf, tile.layout, v)
    if matrices is not None:
        emit_stmatrix(lw, first, matrices, tile.regs, tile.elem)
        return
    for run in runs:
        index = b.add(xor_const(b, per_thread, flats, consts[run[0]]), first)
        values = [to_bits(b, tile.regs[r], tile.elem) for r in run]
        if v == 1:
            b.store(values[0], _pointer(lw, index, it, 1))
            continue
        # 16-bit elements as 32-bit words: a pair loaded as one word is stored as that word (no re-packing)
        words = pack(b, values, 16, 32) if buf.bits == 16 else values
        vt = ir.VectorType(words[0].type, len(words))
        vec = ir.Constant(vt, None)
        for j, x in enumerate(words):
            vec = b.insert_element(vec, x, const_i32(j))
        b.store(vec, b.bitcast(_pointer(lw, index, it, 1), vt.as_pointer(3)), align=v * buf.bits // 8)


@lower(LocalLoadOp)
def lower_local_load(lw, op):
    buf, t = lw.get(op.buf), op.result.type
    groups = _ldmatrix_plan(lw, buf, t.layout)
    if groups is not None:
        lw.set(op.result, GTile(t.layout, t.element, emit_ldmatrix(lw, first_index(lw, buf), groups, t.element)))
        return
    b, it = lw.b, ir.IntType(buf.bits)
    consts, per_thread, flats = _affine_split(lw, t.layout, lambda i: buf.places[i])
    runs = vector_groups(consts, flats, buf.bits)
    v = len(runs[0])
    first = first_index(lw, buf)
    # Every vector load first, then their elements: LLVM's O3 splits a vector load whose elements are
    # taken right after it into scalar loads (that the code generator joins again), and GVN then asks
    # alias analysis about each of them against every shared store before it (tf32's epilogue: 128
    # loads instead of 32, ~0.08 s of its LLVM steps).
    regs: list = [None] * len(consts)
    vectors = []
    for run in runs:
        index = b.add(xor_const(b, per_thread, flats, consts[run[0]]), first)
        if v == 1:
            regs[run[0]] = from_bits(b, b.load(_pointer(lw, index, it, 1)), t.element)
            continue
        vectors.append((run, b.load(_pointer(lw, index, it, v), align=v * buf.bits // 8)))
    for run, vec in vectors:
        for j, r in enumerate(run):
            regs[r] = from_bits(b, b.extract_element(vec, const_i32(j)), t.element)
    lw.set(op.result, GTile(t.layout, t.element, regs))


def _ldmatrix_plan(lw, buf: SharedBuffer, layout: LinearLayout):
    """``ldmatrix`` groups for a 16-bit load into an mma operand layout, or None (plain loads)."""
    return matrix_plan(layout, buf.places, buf.bits, lw.num_warps, store=False, **_conditions(lw, buf))


def _stmatrix_plan(lw, buf: SharedBuffer, layout: LinearLayout, vector: int):
    """``stmatrix`` groups for a 16-bit store from a layout of mma fragments (sm_90 on), or None (plain stores)."""
    return matrix_plan(layout, buf.places, buf.bits, lw.num_warps, store=True, vector=vector, **_conditions(lw, buf))


def _conditions(lw, buf: SharedBuffer) -> dict:
    aligned = not (buf.first % 8 or (buf.dynamic is not None and buf.stage_elems % 8))
    return {"sm": lw.sm, "enabled": ldmatrix_enabled(lw), "aligned": aligned}


def matrix_plan(layout, places, bits: int, num_warps: int, *, store: bool, sm: int, enabled: bool, aligned: bool,
                vector: int = 0):  # fmt: skip
    """The ``ldmatrix`` (load) or ``stmatrix`` (store) groups an access of a buffer takes, or None.

    Loads: into an mma operand layout. Stores (sm_90 on): from any layout whose registers form
    8x8 matrices, when plain stores would move less than 16 bytes at once (``vector`` elements).
    Both need the path on (``CompileOptions.ldmatrix``), 16-bit elements and 16-byte aligned rows
    (``aligned``: the buffer's first element and its stages); the plan itself checks every row.
    The shared-memory view asks the same question of the buffers it draws.
    """
    if not enabled or bits != 16 or not aligned:
        return None
    if store and (sm < 90 or vector * bits >= 128):
        return None
    if not store and layout.params.get("kind") != "dot_operand":
        return None
    return plan_ldmatrix(layout, places, num_warps)
