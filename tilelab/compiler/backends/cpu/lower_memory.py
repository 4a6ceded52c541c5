"""Lowering of pointer arithmetic, loads, stores and atomics.

A load is a loop over the tile's elements into a buffer; a masked-off element is
never read and takes ``other`` (0 when there is none). A store is a loop that writes
the lanes where the mask holds; its value and pointer tiles are usually lazy, so
``store(out + offs, x + y)`` is one fused loop. LLVM turns these loops into vector
(masked) loads and stores; in lane mode (1-D kernels) lanes.py writes them as vector
code itself, and the element loops here are its fallback.

Atomics are real LLVM ``atomicrmw`` / ``cmpxchg`` instructions (``seq_cst``): programs
run on several threads at once. Masked-off lanes of an atomic give 0.

In sanitize mode each access first checks its address against the argument
arrays' byte ranges and, when outside all of them, reports the op, the program id,
the element index and the address, and ends the program (sanitize.py).
"""

from __future__ import annotations

from contextlib import contextmanager

from llvmlite import ir

from tilelab.compiler.ir.ops import AddPtrOp, AtomicCASOp, AtomicRMWOp, LoadOp, StoreOp

from ..common.scalars import soft_float_add
from ..common.types import I1, I8, I64, is_soft_float, memory_type, register_type
from . import lanes
from .bounds import Bounds, conjunction
from .context import Tile, lower
from .lower_elementwise import map_elements
from .sanitize import check_address


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
    elem = t.element if t.is_tensor else t
    if not t.is_tensor:
        lw.set(op.result, _load_element(lw, op, ir.Constant(I64, 0)))
        return
    if op.result in lw.lazy_ok:  # read where the single user needs it (fusion.py)
        lw.set(op.result, Tile(t.shape, elem, fn=lambda lin: _load_element(lw, op, lin)))
        return
    buf = lw.alloca(elem, t.numel)

    def loop():
        with lw.loop(t.numel) as lin:
            lw.store_elem(buf, elem, lin, _load_element(lw, op, lin))

    if not lanes.load(lw, op, buf, loop):
        _with_mask_versions(lw, Bounds(lw), [op.mask], [], loop, loop)
    lw.set(op.result, Tile(t.shape, elem, buf=buf))


def _load_element(lw, op, lin) -> ir.Value:
    """Element ``lin`` of load ``op``: read where its mask holds (or is proven), else ``other`` or 0."""
    t = op.result.type
    elem = t.element if t.is_tensor else t
    ptr = lw.get(op.ptr)
    mask = lw.mask_of(op.mask)
    m = lw.elem_at(mask, lin) if mask is not None else None
    pre_value = lw.elem_at(lw.get(op.other), lin) if op.other is not None else _zero(elem)
    return _masked(lw, m, lambda: _read(lw, op, lw.elem_at(ptr, lin), elem, lin), lambda pre: pre_value)


@lower(StoreOp)
def lower_store(lw, op):
    t = op.value.type
    elem = t.element if t.is_tensor else t
    ptr, value = lw.get(op.ptr), lw.get(op.value)
    mem = memory_type(elem)

    def write(lin):
        p = lw.elem_at(ptr, lin)
        check_address(lw, op, p, mem, lin)
        v = lw.elem_at(value, lin)
        lw.b.store(lw.b.zext(v, I8) if v.type == I1 else v, p)

    def loop():
        mask = lw.mask_of(op.mask)
        with _elements(lw, t) as lin:
            _masked(lw, lw.elem_at(mask, lin) if mask is not None else None, lambda: write(lin))

    def unfused():
        saved = dict(lw.substitutes)
        _compute_before_writing(lw, [op.value, op.ptr, op.mask])
        loop()
        lw.substitutes = saved

    if lanes.store(lw, op, unfused):
        return
    bounds = Bounds(lw)
    loads = fused_loads(lw, [op.ptr, op.value, op.mask])
    apart = [bounds.disjoint(op.ptr, ld.ptr) for ld in loads]
    if any(a is None for a in apart):  # overlap not ruled out: read everything before writing
        _materialize(lw, loads)
        loads, apart = [], []

    _with_mask_versions(lw, bounds, [op.mask] + [ld.mask for ld in loads], apart, loop, unfused)


@contextmanager
def _elements(lw, t):
    """``lin`` over a tile's elements, or once (``lin`` 0) for a scalar."""
    if not t.is_tensor:
        yield ir.Constant(I64, 0)
        return
    with lw.loop(t.numel) as lin:
        yield lin


def _with_mask_versions(lw, bounds: Bounds, masks, facts, fast, slow) -> None:
    """``fast()`` where every mask it can is proven all-true and ``facts`` hold, else ``slow()``."""
    masks = [m for m in dict.fromkeys(masks) if m is not None and m not in lw.proven]
    known = {m: f for m in masks if (f := bounds.all_true(m)) is not None}
    lw.versions(conjunction(lw.b, [*known.values(), *facts]), known, fast, slow)


def fused_loads(lw, values) -> list:
    """The lazy loads an access evaluates inside its loop (through lazy tiles), outermost first."""
    found, stack, seen = [], list(values), set()
    while stack:
        v = stack.pop()
        if v is None or v in seen or v not in lw.lazy_ok:
            continue
        seen.add(v)
        op = v.defining_op
        if isinstance(op, LoadOp):
            found.append(op)
        stack.extend(op.operands)
    return found


def _compute_before_writing(lw, values) -> None:
    """Compute each lazy tile among ``values`` that reads memory into a buffer now: one loop each.

    Why: the store's slow path must read everything before it writes (its arrays may
    overlap). Buffering the whole stored value, its loads fused into one loop, takes
    fewer loops than buffering each load (vector add: two loops, not three), and
    LLVM's time grows with every loop it vectorizes.
    """
    for v in dict.fromkeys(values):
        tile = lw.get(v) if v is not None else None
        if isinstance(tile, Tile) and tile.buf is None and fused_loads(lw, [v]):
            lw.substitutes[id(tile)] = lw.materialize(tile)


def _materialize(lw, loads) -> None:
    """Read the lazy ``loads`` into buffers now (innermost first); later reads use the buffers."""
    for ld in reversed(loads):
        tile = lw.get(ld.result)
        lw.substitutes[id(tile)] = lw.materialize(tile)


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
        if is_soft_float(elem):  # bf16: an add, the only atomic 16-bit floats take
            return soft_float_add(lw, p, lw.elem_at(val, lin), elem, memory_type(elem), "seq_cst")
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
