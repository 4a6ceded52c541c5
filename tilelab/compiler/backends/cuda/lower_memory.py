"""GPU lowering of pointer arithmetic, loads, stores and atomics.

A load or store moves, per thread, groups of ``vec`` consecutive registers with one
predicated instruction: on NVIDIA inline PTX (``hooks.NvvmHooks.load``)::

    mov.b32 $0, $6; ... ; @$4 ld.global.v4.b32 {$0, $1, $2, $3}, [$5];

on AMD a branch around one ``load <4 x i32>`` (``global_load_dwordx4``).

``vec`` is what both the layout (consecutive elements in consecutive registers) and
the addresses (axis info: contiguity, divisibility in bytes, mask constancy) allow:
``vec * element size <= 16`` bytes. Masked-off lanes keep ``other``. Copies of an
element held by several threads (broadcast layouts) are stored by one of them only.
Atomics are one predicated PTX ``atom`` (``red`` where nothing reads the old values) spelled with
the op's ordering and scope (``hooks.NvvmHooks.atomic_form``), f32 adds up to 4 elements at a time
as the addresses allow; what PTX lacks (float max and min) is LLVM's ``atomicrmw`` under a branch.
"""

from __future__ import annotations

import struct

from llvmlite import ir

from tilelab.compiler.analysis.memory_access import vector_width
from tilelab.compiler.ir.ops import AddPtrOp, AtomicCASOp, AtomicRMWOp, LoadOp, StoreOp
from tilelab.compiler.layouts import contiguous_elements, fastest_dim

from ..common.scalars import soft_float_add
from ..common.types import I16, I32, I64, is_soft_float
from .context import GTile, gpu_type, lower, memory_type
from .hooks import pair_word
from .lower_elementwise import map_regs


def elem_of(t):
    return t.element if t.is_tensor else t


@lower(AddPtrOp)
def lower_addptr(lw, op):
    pointee = memory_type(elem_of(op.result.type).pointee)
    off_t = elem_of(op.operands[1].type)

    def emit(p, off):
        if not off_t.is_signed and off.type.width < 64:
            off = lw.b.zext(off, I64)
        return lw.b.gep(p, [off], source_etype=pointee)

    map_regs(lw, op, emit)


# ------------------------------------------------------------------ bits of elements


def memory_bits(t) -> int:
    """Bits of one element in memory (bools are bytes, pointers 64-bit addresses)."""
    if t.is_pointer:
        return 64
    return 8 if t.is_bool else t.itemsize * 8


#: the ``struct`` format of each float type's bits
_FLOAT_FORMATS = {ir.HalfType: "<e", ir.FloatType: "<f", ir.DoubleType: "<d"}


def constant_bits(x: ir.Value, width: int) -> ir.Constant | None:
    """``x``'s bits as an ``iN`` constant when ``x`` is a number constant (an ``other`` of a load...), else None.

    Why: a masked load's ``other`` is usually a constant tile; packed into words with a bitcast per
    element and an ``insertelement`` per half, its 0.0s made a fifth of a 128x128 f16 kernel's
    LLVM IR (O3 folds it all back to the same constants, after printing, parsing and reading it).
    """
    if not isinstance(x, ir.Constant) or isinstance(x.constant, (list, tuple, bytearray)):
        return None
    value = x.constant
    if value is None:  # zeroinitializer
        return ir.Constant(ir.IntType(width), 0)
    if isinstance(x.type, ir.IntType) and isinstance(value, int):
        return ir.Constant(ir.IntType(width), value & ((1 << x.type.width) - 1))
    fmt = _FLOAT_FORMATS.get(type(x.type))
    if fmt is None or not isinstance(value, (int, float)):
        return None
    packed = struct.pack(fmt, float(value))
    return ir.Constant(ir.IntType(width), int.from_bytes(packed, "little"))


def to_bits(b, x, t) -> ir.Value:
    """An element as an integer of its memory width (bools as bytes, pointers as addresses)."""
    it = ir.IntType(memory_bits(t))
    if not t.is_pointer and (bits := constant_bits(x, it.width)) is not None:
        return bits
    if t.is_pointer:
        return b.ptrtoint(x, it)
    if t.is_bool:
        return b.zext(x, it)
    if x.type == it:
        return x
    if isinstance(x, ir.CastInstr) and x.opname == "bitcast" and x.operands[0].type == it:
        return x.operands[0]  # the bits it was made from (a half unpacked from a word stays that half)
    return b.bitcast(x, it)


def from_bits(b, bits, t) -> ir.Value:
    """The inverse of ``to_bits``."""
    if t.is_pointer:
        return b.inttoptr(bits, gpu_type(t))
    if t.is_bool:
        return b.icmp_unsigned("!=", bits, ir.Constant(bits.type, 0))
    target = gpu_type(t)
    return bits if bits.type == target else b.bitcast(bits, target)


def words_of(eb: int, vec: int) -> tuple[int, int, int]:
    """How ``vec`` elements of ``eb`` bits travel: ``(register bits, number of registers, PTX width)``.

    A lone byte travels in a 16-bit register with ``.b8``; otherwise elements are packed
    into 16-, 32- or 64-bit registers, at most four of them (16 bytes).
    """
    total = eb * vec
    if total < 16:
        return 16, 1, total
    word = eb if eb >= 32 else min(32, total)
    return word, total // word, word


def pack(b, elems: list, eb: int, word: int) -> list:
    """Element bit patterns (``eb`` wide) packed little-endian into ``word``-bit integers.

    16-bit elements go through a ``<n x i16>`` vector (``mov.b32 %r, {%rs0, %rs1}``: no
    widening, shifting and or-ing of each half).
    """
    per = max(1, word // eb)
    wt = ir.IntType(word)
    out = []
    for i in range(0, len(elems), per):
        group = elems[i : i + per]
        if all(isinstance(e, ir.Constant) and isinstance(e.constant, int) for e in group):  # the word, folded
            mask = (1 << eb) - 1
            out.append(ir.Constant(wt, sum((e.constant & mask) << (k * eb) for k, e in enumerate(group))))
            continue
        if eb == 16 and per == 2 and len(group) == 2:
            out.append(pair_word(b, *group))
            continue
        if eb == 16 and len(group) == per > 1:
            vec = ir.Constant(ir.VectorType(ir.IntType(16), per), None)
            for k, e in enumerate(group):
                vec = b.insert_element(vec, e, ir.Constant(I32, k))
            out.append(b.bitcast(vec, wt))
            continue
        acc = ir.Constant(wt, 0)
        for k, e in enumerate(group):
            part = b.zext(e, wt) if eb < word else e
            acc = b.or_(acc, b.shl(part, ir.Constant(wt, k * eb))) if k else b.or_(acc, part)
        out.append(acc)
    return out


def unpack(lw, words: list, eb: int, word: int, count: int) -> list:
    """The ``count`` elements of ``eb`` bits packed in ``words`` (lowest bits first)."""
    b = lw.b
    per = max(1, word // eb)
    et = ir.IntType(eb)
    out = []
    for w in words:  # (shifts, not a vector: LLVM folds ``lshr`` + ``trunc`` into a widening to f32)
        for k in range(per):
            if eb == word:
                out.append(w)
            elif eb == 16 and k:
                out.append(lw.hooks.shifted_half(lw, w, k * eb))
            elif not k:  # a plain ``trunc``: ``word_of_halves`` recognizes the pair
                out.append(b.trunc(w, et))
            else:
                out.append(b.trunc(b.lshr(w, ir.Constant(w.type, k * eb)), et))
    return out[:count]


# ------------------------------------------------------------------ vector width


def access_width(lw, op, layout, elem) -> int:
    """Elements per thread per instruction for ``op`` (1 for scalars)."""
    if layout is None:
        return 1
    info = lw.axis
    dim = fastest_dim(layout)
    mask = info[op.mask] if op.mask is not None else None
    by_address = vector_width(info[op.ptr], max(1, memory_bits(elem) // 8), dim, mask)
    return max(1, min(by_address, contiguous_elements(layout, dim)))


# ------------------------------------------------------------------ load


def _to_words(b, bits: list, eb: int, word: int) -> list:
    if word > eb * len(bits):  # a lone byte in a 16-bit register
        return [b.zext(bits[0], ir.IntType(word))]
    return pack(b, bits, eb, word)


def _load_group(lw, elem, addr, pred, others, vec, volatile) -> list:
    b = lw.b
    eb = memory_bits(elem)
    word, n, ptx = words_of(eb, vec)
    other_words = _to_words(b, [to_bits(b, o, elem) for o in others], eb, word) if others is not None else None
    words = lw.hooks.load(lw, addr, pred, other_words, word, n, ptx, volatile)
    if word > eb * vec:
        return [from_bits(b, b.trunc(words[0], ir.IntType(eb)), elem)]
    return [from_bits(b, e, elem) for e in unpack(lw, words, eb, word, vec)]


@lower(LoadOp)
def lower_load(lw, op):
    t = op.result.type
    elem = elem_of(t)
    ptr, mask, other = (lw.get(v) if v is not None else None for v in (op.ptr, op.mask, op.other))
    if not t.is_tensor:
        others = [other] if other is not None else None
        lw.set(op.result, _load_group(lw, elem, ptr, mask, others, 1, op.attrs.get("volatile"))[0])
        return
    vec = access_width(lw, op, t.layout, elem)
    regs = []
    for i in range(0, len(ptr.regs), vec):
        pred = mask.regs[i] if mask is not None else None
        others = other.regs[i : i + vec] if other is not None else None
        regs += _load_group(lw, elem, ptr.regs[i], pred, others, vec, op.attrs.get("volatile"))
    lw.set(op.result, GTile(t.layout, elem, regs))


# ------------------------------------------------------------------ store


def _store_group(lw, elem, addr, pred, values) -> None:
    b = lw.b
    eb = memory_bits(elem)
    word, n, ptx = words_of(eb, len(values))
    lw.hooks.store(lw, addr, pred, _to_words(b, [to_bits(b, v, elem) for v in values], eb, word), word, ptx)


@lower(StoreOp)
def lower_store(lw, op):
    vt = op.value.type
    elem = elem_of(vt)
    ptr, value = lw.get(op.ptr), lw.get(op.value)
    mask = lw.get(op.mask) if op.mask is not None else None
    layout = vt.layout if vt.is_tensor else None
    owner = lw.is_owner(layout)
    if not vt.is_tensor:
        pred = owner if mask is None else lw.b.and_(owner, mask)
        _store_group(lw, elem, ptr, pred, [value])
        return
    vec = access_width(lw, op, layout, elem)
    for i in range(0, len(ptr.regs), vec):
        pred = owner if mask is None else lw.b.and_(owner, mask.regs[i])
        _store_group(lw, elem, ptr.regs[i], pred, value.regs[i : i + vec])


# ------------------------------------------------------------------ atomics

_ORDERING = {"acq_rel": "acq_rel", "acquire": "acquire", "release": "release", "relaxed": "monotonic"}


def predicated(lw, pred, emit, rtype):
    """``emit()`` where ``pred`` holds, else undef: returns the phi of the two."""
    b = lw.b
    start = b.block
    with b.if_then(pred):
        value = emit()
        then = b.block
    phi = b.phi(rtype)
    phi.add_incoming(value, then)
    phi.add_incoming(ir.Constant(rtype, ir.Undefined), start)
    return phi


def _rmw_kind(kind: str, elem) -> str:
    if elem.is_float:
        return {"fadd": "fadd", "add": "fadd", "max": "fmax", "min": "fmin"}.get(kind, kind)
    return {"fadd": "add", "max": "max" if elem.is_signed else "umax", "min": "min" if elem.is_signed else "umin"}.get(
        kind, kind
    )


def _per_group(lw, op, n_values: int, emit, vec: int = 1) -> None:
    """Run ``emit(pred, ptr, *values)`` per group of ``vec`` consecutive elements; define the result.

    ``ptr`` is the group's first address, each of ``values`` the group's list of one operand, ``pred``
    the group's mask and ownership (``vec`` is at most what ``access_width`` allows: the mask is the
    same over a group). ``emit`` gives the group's old values (whatever it likes where ``pred`` is false).
    """
    t = op.result.type
    elem = elem_of(t)
    layout = t.layout if t.is_tensor else None
    owner = lw.is_owner(layout)
    ins = [lw.get(v) for v in op.operands[: 1 + n_values]]
    mask = lw.get(op.mask) if getattr(op, "mask", None) is not None else None
    if not t.is_tensor:
        pred = owner if mask is None else lw.b.and_(owner, mask)
        (old,) = emit(pred, ins[0], *[[x] for x in ins[1:]])
        lw.set(op.result, broadcast_from_thread0(lw, old, elem) if op.result.has_uses() else old)
        return
    regs = []
    for r in range(0, len(ins[0].regs), vec):
        pred = owner if mask is None else lw.b.and_(owner, mask.regs[r])
        regs += emit(pred, ins[0].regs[r], *[x.regs[r : r + vec] for x in ins[1:]])
    lw.set(op.result, GTile(layout, elem, regs))


def broadcast_from_thread0(lw, value, elem):
    """The value thread 0 holds, in every thread (through shared memory)."""
    b = lw.b
    bits = to_bits(b, value, elem)
    smem = lw.shared(bits.type, 8)
    slot = lw.smem_elem(smem, ir.Constant(I32, 0), bits.type)
    lw.barrier()
    with b.if_then(b.icmp_unsigned("==", lw.tid, ir.Constant(I32, 0))):
        b.store(bits, slot)
    lw.barrier()
    out = b.load(slot)
    lw.barrier()
    return from_bits(b, out, elem)


def _sem_scope(op) -> tuple[str, str]:
    return op.attrs.get("sem") or "acq_rel", op.attrs.get("scope") or "gpu"


@lower(AtomicRMWOp)
def lower_atomic_rmw(lw, op):
    elem = elem_of(op.result.type)
    form = lw.hooks.atomic_form(lw, op.attrs["kind"], elem)
    if form is None:
        _llvm_atomic_rmw(lw, op, elem)
        return
    name, most = form
    sem, scope = _sem_scope(op)
    returns = op.result.has_uses()
    t, b = op.result.type, lw.b

    def group(pred, addr, values) -> list:
        words = [to_bits(b, v, elem) for v in values]
        old = lw.hooks.atomic_rmw(lw, name, addr, pred, words, sem, scope, returns)
        if not old:  # a ``red``: nothing reads the result
            return [ir.Constant(gpu_type(elem), ir.Undefined)] * len(values)
        return [from_bits(b, w, elem) for w in old]

    vec = min(most, access_width(lw, op, t.layout, elem)) if t.is_tensor else 1
    _per_group(lw, op, 1, group, vec)


def _llvm_atomic_rmw(lw, op, elem) -> None:
    """``atomicrmw`` under a branch: what PTX has no ``atom`` for (float max and min: a ``cmpxchg`` loop; bf16
    adds before sm_90: a ``cmpxchg`` loop on its bits, ``scalars.soft_float_add``)."""
    kind = _rmw_kind(op.attrs["kind"], elem)
    ordering = _ORDERING.get(_sem_scope(op)[0], "acq_rel")
    rt = gpu_type(elem)

    def emit(pred, p, values):
        if is_soft_float(elem):  # bf16 before sm_90: held as bits, which LLVM's float atomicrmw does not take
            return [predicated(lw, pred, lambda: soft_float_add(lw, p, values[0], elem, rt, ordering), rt)]
        return [predicated(lw, pred, lambda: lw.b.atomic_rmw(kind, p, values[0], ordering), rt)]

    _per_group(lw, op, 1, emit)


@lower(AtomicCASOp)
def lower_atomic_cas(lw, op):
    elem = elem_of(op.result.type)
    sem, scope = _sem_scope(op)
    ordering = _ORDERING.get(sem, "acq_rel")
    failure = "monotonic" if ordering in ("release", "monotonic") else "acquire"
    b = lw.b

    def emit(pred, p, cmps, vals):
        cb, vb = to_bits(b, cmps[0], elem), to_bits(b, vals[0], elem)
        old = lw.hooks.atomic_cas(lw, p, pred, cb, vb, sem, scope)
        if old is None:
            old = predicated(lw, pred, lambda: b.extract_value(b.cmpxchg(p, cb, vb, ordering, failure), 0), cb.type)
        return [from_bits(b, old, elem)]

    _per_group(lw, op, 2, emit)


__all__ = ["to_bits", "from_bits", "predicated", "broadcast_from_thread0", "I16"]
