"""Lowering of pointer arithmetic, loads, stores and atomics.

A load is a loop over the tile's elements into a buffer; a masked-off element is
never read and takes ``other`` (0 when there is none). A store is a loop that writes
the lanes where the mask holds; its value and pointer tiles are usually lazy, so
``store(out + offs, x + y)`` is one fused loop. LLVM turns these loops into vector
(masked) loads and stores.

Atomics are real LLVM ``atomicrmw`` / ``cmpxchg`` instructions (``seq_cst``): programs
run on several threads at once. Masked-off lanes of an atomic give 0.

In sanitize mode each access first checks its address against the argument
arrays' byte ranges and, when outside all of them, reports the op, the program id,
the element index and the address, and ends the program (sanitize.py).
"""

from __future__ import annotations

from llvmlite import ir

from tilelab.compiler.ir.ops import AddPtrOp, AtomicCASOp, AtomicRMWOp, LoadOp, StoreOp

from .context import Tile, lower
from .lower_elementwise import map_elements
from .sanitize import check_address
from .types import I1, I8, I64, memory_type, register_type


@lower(AddPtrOp)
def lower_addptr(lw, op):
    pointee = op.result.type.element.pointee
    mem = memory_type(pointee)
    signed = op.operands[1].type.element.is_signed

    def emit(p, off):
        if off.type.width < 64:
            off = lw.b.sext(off, I64) if signed else lw.b.zext(off, I64)
        return lw.b.gep(p, [off], source_etype=mem)

    map_elements(lw, op, emit)


def _zero(t) -> ir.Constant:
    lt = register_type(t)
    return ir.Constant(lt, 0.0 if isinstance(lt, (ir.FloatType, ir.DoubleType, ir.HalfType)) else 0)


def _read(lw, op, ptr: ir.Value, t, lin) -> ir.Value:
    mem = memory_type(t)
    check_address(lw, op, ptr, mem, lin)
    v = lw.b.load(ptr, typ=mem)
    return lw.b.icmp_unsigned("!=", v, ir.Constant(I8, 0)) if t.is_bool else v


def _masked(lw, mask: ir.Value | None, then, otherwise=None) -> ir.Value | None:
    """``then()`` where ``mask`` holds, else ``otherwise()``; a phi of both when they give values."""
    if mask is None:
        return then()
    b = lw.b
    pre = b.block
    on = b.append_basic_block("on")
    join = b.append_basic_block("join")
    b.cbranch(mask, on, join)
    b.position_at_end(on)
    v = then()
    on_end = b.block
    b.branch(join)
    b.position_at_end(join)
    if v is None:
        return None
    phi = b.phi(v.type)
    phi.add_incoming(v, on_end)
    phi.add_incoming(otherwise(pre) if otherwise else ir.Constant(v.type, None), pre)
    return phi


def _element_io(lw, op, count: int, body) -> None:
    """Run ``body(lin)`` once (scalars: ``lin`` 0) or for each element of a tile."""
    if count == 0:
        body(ir.Constant(I64, 0))
        return
    with lw.loop(count) as lin:
        body(lin)


@lower(LoadOp)
def lower_load(lw, op):
    t = op.result.type
    elem = t.element
    ptr, mask, other = (lw.get(v) if v is not None else None for v in (op.ptr, op.mask, op.other))
    tiled = t.is_tensor
    buf = lw.alloca(elem, t.numel) if tiled else None
    out = []

    def body(lin):
        m = lw.elem_at(mask, lin) if mask is not None else None
        pre_value = lw.elem_at(other, lin) if other is not None else _zero(elem)
        v = _masked(lw, m, lambda: _read(lw, op, lw.elem_at(ptr, lin), elem, lin), lambda pre: pre_value)
        if tiled:
            lw.store_elem(buf, elem, lin, v)
        else:
            out.append(v)

    _element_io(lw, op, t.numel if tiled else 0, body)
    lw.set(op.result, Tile(t.shape, elem, buf=buf) if tiled else out[0])


@lower(StoreOp)
def lower_store(lw, op):
    t = op.value.type
    elem = t.element
    ptr, value, mask = (lw.get(v) if v is not None else None for v in (op.ptr, op.value, op.mask))
    mem = memory_type(elem)

    def write(lin):
        p = lw.elem_at(ptr, lin)
        check_address(lw, op, p, mem, lin)
        v = lw.elem_at(value, lin)
        lw.b.store(lw.b.zext(v, I8) if v.type == I1 else v, p)

    def body(lin):
        _masked(lw, lw.elem_at(mask, lin) if mask is not None else None, lambda: write(lin))

    _element_io(lw, op, t.numel if t.is_tensor else 0, body)


_RMW = {
    "add": "add",
    "fadd": "fadd",
    "and": "and",
    "or": "or",
    "xor": "xor",
    "xchg": "xchg",
    "umax": "umax",
    "umin": "umin",
}


def _rmw_name(kind: str, elem) -> str:
    if kind in ("max", "min"):
        if elem.is_float:
            return "f" + kind
        return kind if elem.is_signed else "u" + kind
    if kind == "add" and elem.is_float:
        return "fadd"
    return _RMW[kind]


def _atomic_loop(lw, op, emit) -> None:
    """Run ``emit(lin) -> old`` per element (under the mask) and define the result."""
    t = op.result.type
    elem = t.element
    mask = lw.get(op.operands[2]) if op.attrs.get("has_mask") else None
    tiled = t.is_tensor
    buf = lw.alloca(elem, t.numel) if tiled else None
    out = []

    def body(lin):
        m = lw.elem_at(mask, lin) if mask is not None else None
        old = _masked(lw, m, lambda: emit(lin), lambda pre: _zero(elem))
        if tiled:
            lw.store_elem(buf, elem, lin, old)
        else:
            out.append(old)

    _element_io(lw, op, t.numel if tiled else 0, body)
    lw.set(op.result, Tile(t.shape, elem, buf=buf) if tiled else out[0])


@lower(AtomicRMWOp)
def lower_atomic_rmw(lw, op):
    elem = op.result.type.element
    ptr, val = lw.get(op.operands[0]), lw.get(op.operands[1])
    name = _rmw_name(op.attrs["kind"], elem)

    def emit(lin):
        p = lw.elem_at(ptr, lin)
        check_address(lw, op, p, memory_type(elem), lin)
        return lw.b.atomic_rmw(name, p, lw.elem_at(val, lin), "seq_cst")

    _atomic_loop(lw, op, emit)


@lower(AtomicCASOp)
def lower_atomic_cas(lw, op):
    elem = op.result.type.element
    ptr, cmp, val = (lw.get(v) for v in op.operands)

    def emit(lin):
        b = lw.b
        p = lw.elem_at(ptr, lin)
        check_address(lw, op, p, memory_type(elem), lin)
        c, v = lw.elem_at(cmp, lin), lw.elem_at(val, lin)
        if elem.is_float:  # cmpxchg compares bits: go through integers of the same width
            it = ir.IntType({"half": 16, "float": 32, "double": 64}[str(v.type)])
            pair = b.cmpxchg(p, b.bitcast(c, it), b.bitcast(v, it), "seq_cst", "seq_cst")
            return b.bitcast(b.extract_value(pair, 0), v.type)
        return b.extract_value(b.cmpxchg(p, c, v, "seq_cst", "seq_cst"), 0)

    _atomic_loop(lw, op, emit)
