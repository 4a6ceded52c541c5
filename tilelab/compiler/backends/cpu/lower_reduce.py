"""Lowering of reductions, scans, sorts and dots: loops over buffers.

A tile of shape ``[outer..., K, inner...]`` reduced along ``K`` is seen as a
``(outer, K, inner)`` box. The accumulators (one buffer per operand, shape
``(outer, inner)``) start as slice ``k = 0``; then for each ``k`` and each inner
position the combine region runs on ``(acc..., x[o, k, i]...)``. The inner loop is
contiguous, so LLVM vectorizes reductions along any axis but the last; along the
last axis each row is one sequential chain in the combine's order.

``dot`` converts f16/bf16/fp8 operands to f32 buffers (integers to i32) and runs
``for m, k: for n: r[m, n] += a[m, k] * b[k, n]`` -- the inner loop streams a row of
``b`` into a row of ``r`` and vectorizes to FMAs.
"""

from __future__ import annotations

import functools
import math

from llvmlite import ir

from tilelab.compiler.ir.ops import DotOp, HistogramOp, ReduceOp, ReduceReturnOp, ScanOp, SortOp
from tilelab.compiler.ir.types import f32, f64, i32
from tilelab.compiler.ir.types import i64 as int64

from ..common.scalars import to_arith
from ..common.types import memory_type
from .codegen import host_vector_bits
from .context import Tile, i64, lower
from .lower_cast import convert


def run_combine(lw, block, args: list) -> list:
    """Lower a combine region inline on scalar ``args``; returns the combined scalars."""
    for arg, v in zip(block.args, args):
        lw.values[arg] = v
    for op in block.ops:
        if isinstance(op, ReduceReturnOp):
            return [lw.get(v) for v in op.operands]
        lw.lower_op(op)
    raise AssertionError("combine region without tt.reduce.return")


def _box(shape, axis):
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])


@lower(ReduceOp)
def lower_reduce(lw, op):
    """Tree reduction, in the interpreter's order: level by level, ``x[j] = f(x[j], x[j + half])``.

    Each level is a loop over independent pairs, so it vectorizes along any axis, and
    floats round exactly as the reference does.
    """
    shape = op.operands[0].type.shape
    axis = op.attrs["axis"]
    outer, n, inner = _box(shape, axis) if axis is not None else (1, math.prod(shape), 1)
    srcs = [lw.get(v) for v in op.operands]
    elems = [v.type.element for v in op.operands]
    width = max(1, n // 2 + n % 2)  # slots per line after the first level
    bufs = [lw.alloca(e, outer * width * inner) for e in elems]
    b = lw.b

    def read_source(o, j, i):
        at = b.add(b.mul(o, i64(n * inner)), b.add(b.mul(j, i64(inner)), i))
        return [lw.elem_at(src, at) for src in srcs]

    def read_scratch(o, j, i):
        at = b.add(b.mul(o, i64(width * inner)), b.add(b.mul(j, i64(inner)), i))
        return [lw.load_elem(buf, e, at) for buf, e in zip(bufs, elems)]

    def write(o, j, i, values):
        at = b.add(b.mul(o, i64(width * inner)), b.add(b.mul(j, i64(inner)), i))
        for buf, e, v in zip(bufs, elems, values):
            lw.store_elem(buf, e, at, v)

    def pair_level(o, j, i, read, half):
        write(o, j, i, run_combine(lw, op.combine, read(o, j, i) + read(o, b.add(j, i64(half)), i)))

    def carry_last(o, j, i, read, half, count):
        write(o, i64(half), i, read(o, i64(count - 1), i))

    read = read_source
    if n == 1:
        _level(lw, outer, 1, inner, lambda o, j, i: write(o, j, i, read_source(o, j, i)))
    while n > 1:
        half = n // 2
        _level(lw, outer, half, inner, functools.partial(pair_level, read=read, half=half))
        if n % 2:  # an odd line carries its last element to the next level
            _level(lw, outer, 1, inner, functools.partial(carry_last, read=read, half=half, count=n))
        read, n = read_scratch, half + n % 2
    for r, buf, e in zip(op.results, bufs, elems):
        lw.set(r, _reduced(lw, r.type, buf, e, inner, width))


def _reduced(lw, t, buf, elem, inner, width):
    """A reduce result: the first slot of each scratch line (a scalar for a full reduction)."""
    if not t.is_tensor:
        return lw.load_elem(buf, elem, i64(0))
    return Tile(t.shape, elem, fn=lambda lin: lw.load_elem(buf, elem, _first_slot(lw, lin, inner, width)))


def _first_slot(lw, lin, inner, width):
    """Where result element ``lin`` (an ``(outer, inner)`` position) sits in the scratch lines."""
    b = lw.b
    if inner == 1:
        return b.mul(lin, i64(width))
    return b.add(b.mul(b.udiv(lin, i64(inner)), i64(width * inner)), b.urem(lin, i64(inner)))


def _level(lw, outer, count, inner, body):
    """``for o < outer: for j < count: for i < inner: body(o, j, i)``."""
    with lw.loop(outer) as o:
        with lw.loop(count) as j:
            with lw.loop(inner) as i:
                body(o, j, i)


@lower(ScanOp)
def lower_scan(lw, op):
    shape = op.operands[0].type.shape
    outer, k_len, inner = _box(shape, op.attrs["axis"])
    reverse = op.attrs.get("reverse", False)
    srcs = [lw.get(v) for v in op.operands]
    elems = [v.type.element for v in op.operands]
    outs = [lw.alloca(e, math.prod(shape)) for e in elems]
    b = lw.b
    first, step = (k_len - 1, -1) if reverse else (0, 1)
    with lw.loop(outer) as o:
        base = b.mul(o, i64(k_len * inner))
        with lw.loop(inner) as i:
            at = b.add(base, b.add(i64(first * inner), i))
            for out, src, e in zip(outs, srcs, elems):
                lw.store_elem(out, e, at, lw.elem_at(src, at))
        with lw.loop(-1 if reverse else k_len, start=first + step, step=step) as k:
            with lw.loop(inner) as i:
                at = b.add(base, b.add(b.mul(k, i64(inner)), i))
                prev_at = b.sub(at, i64(step * inner))
                old = [lw.load_elem(out, e, prev_at) for out, e in zip(outs, elems)]
                new = [lw.elem_at(src, at) for src in srcs]
                for out, e, v in zip(outs, elems, run_combine(lw, op.combine, old + new)):
                    lw.store_elem(out, e, at, v)
    for r, out, e in zip(op.results, outs, elems):
        lw.set(r, Tile(shape, e, buf=out))


def _dot_work_type(src, out):
    """What products accumulate in: f32 (f64 for f64 inputs), i32 (i64 for wide int results)."""
    if src.is_float:
        return f64 if src == f64 else f32
    return int64 if out.itemsize > 4 else i32


def _to_buffer(lw, x, src_t, shape, dst_t, tf32=False) -> ir.Value:
    """Copy a tile into a fresh buffer of ``dst_t`` elements, converting (and maybe tf32-rounding) each."""
    n = math.prod(shape)
    buf = lw.alloca(dst_t, n)
    with lw.loop(n) as lin:
        v = convert(lw, lw.elem_at(x, lin), src_t, dst_t)
        lw.store_elem(buf, dst_t, lin, _round_tf32(lw.b, v) if tf32 else v)
    return buf


def _round_tf32(b, x):
    """f32 rounded to tf32 (10 mantissa bits, nearest even); NaN and infinities unchanged."""
    i32t = ir.IntType(32)
    bits = b.bitcast(x, i32t)
    lsb = b.and_(b.lshr(bits, ir.Constant(i32t, 13)), ir.Constant(i32t, 1))
    rounded = b.and_(b.add(bits, b.add(lsb, ir.Constant(i32t, 0xFFF))), ir.Constant(i32t, 0xFFFFE000 - 2**32))
    finite = b.fcmp_ordered("<", b.call(_fabs(b), [x]), ir.Constant(x.type, float("inf")))
    return b.bitcast(b.select(finite, rounded, bits), x.type)


def _fabs(b):
    fn = b.module.globals.get("llvm.fabs.f32")
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(ir.FloatType(), [ir.FloatType()]), "llvm.fabs.f32")
    return fn


@lower(DotOp)
def lower_dot(lw, op):
    a_t, b_t, c_t = (v.type for v in op.operands)
    *batch, m_len, k_len = a_t.shape
    n_len = b_t.shape[-1]
    nb = math.prod(batch)
    work = _dot_work_type(a_t.element, c_t.element)
    tf32 = a_t.element == f32 and op.attrs.get("input_precision") == "tf32"
    a = _to_buffer(lw, lw.get(op.operands[0]), a_t.element, a_t.shape, work, tf32)
    bb = _to_buffer(lw, lw.get(op.operands[1]), b_t.element, b_t.shape, work, tf32)
    acc = _to_buffer(lw, lw.get(op.operands[2]), c_t.element, c_t.shape, work)
    _register_blocked_dot(lw, a, bb, acc, nb * m_len, m_len, k_len, n_len, work)
    result = Tile(c_t.shape, work, buf=acc)
    if c_t.element != work:
        wide = result
        result = lw.materialize(
            Tile(c_t.shape, c_t.element, fn=lambda lin: convert(lw, lw.elem_at(wide, lin), work, c_t.element))
        )
    lw.set(op.result, result)


def _register_blocked_dot(lw, a, bb, acc, rows: int, m_len: int, k_len: int, n_len: int, work) -> None:
    """``acc[r, :] += sum over k of a[r, k] * b[k, :]`` for all ``rows`` (batch and row together), in registers.

    Why: the plain loop nest (row, k, then columns, vectorized by LLVM) loads and stores the
    accumulator row for every k: two loads and a store per vector FMA, so the loads set the
    pace. Here a block of ``mr`` rows by one SIMD vector of columns stays in registers for the whole
    k loop (a micro-kernel, as BLAS libraries write it): per k, one vector of ``b``, ``mr``
    broadcast elements of ``a`` (folded into the FMAs), ``mr`` FMAs. Each element still sums
    over k in order, one ``fmuladd`` per k, so results are unchanged.

        for r0 in rows step mr, for n0 in columns step vl:
            c[0..mr) = acc[r0 + i, n0 : n0 + vl]
            for k: bv = b[k, n0 : n0 + vl]; c[i] = fmuladd(splat(a[r0 + i, k]), bv, c[i])
            acc[r0 + i, n0 : n0 + vl] = c[i]
    """
    b = lw.b
    scalar = memory_type(work)  # the three buffers hold work-type elements (_to_buffer)
    bits = 8 * work.itemsize
    simd = host_vector_bits()
    vl = math.gcd(n_len, simd // bits)  # columns per vector and rows per block divide the tile
    mr = math.gcd(m_len, 8 if simd >= 512 else 4)
    vec = ir.VectorType(scalar, vl)
    integer = not work.is_float
    fma = None if integer else lw.function(f"llvm.fmuladd.v{vl}f{bits}", vec, [vec] * 3)

    def vptr(buf, lin):
        ptr = b.gep(buf, [lin], inbounds=True, source_etype=scalar)
        return ptr if ptr.type.is_opaque else b.bitcast(ptr, vec.as_pointer())

    def vload(buf, lin):
        return b.load(vptr(buf, lin), typ=vec, align=bits // 8)

    def vstore(buf, lin, v):
        b.store(v, vptr(buf, lin), align=bits // 8)

    with lw.loop(rows, step=mr) as r0:
        batch = b.udiv(r0, i64(m_len))
        b_base = b.mul(batch, i64(k_len * n_len))
        with lw.loop(n_len, step=vl) as n0:
            c_at = [b.add(b.mul(b.add(r0, i64(i)), i64(n_len)), n0) for i in range(mr)]
            a_at = [b.mul(b.add(r0, i64(i)), i64(k_len)) for i in range(mr)]
            start = [vload(acc, at) for at in c_at]
            pre = b.block
            body, done = b.append_basic_block("dot.k"), b.append_basic_block("dot.k.end")
            b.branch(body)
            b.position_at_end(body)
            k = b.phi(ir.IntType(64))
            k.add_incoming(i64(0), pre)
            cs = []
            for v in start:
                phi = b.phi(vec)
                phi.add_incoming(v, pre)
                cs.append(phi)
            bv = vload(bb, b.add(b_base, b.add(b.mul(k, i64(n_len)), n0)))
            out = []
            for at, c in zip(a_at, cs):
                av = lw.load_elem(a, work, b.add(at, k))
                splat = b.shuffle_vector(
                    b.insert_element(ir.Constant(vec, ir.Undefined), av, i64(0)),
                    ir.Constant(vec, ir.Undefined),
                    ir.Constant(ir.VectorType(ir.IntType(32), vl), [0] * vl),
                )
                out.append(b.add(b.mul(splat, bv), c) if integer else b.call(fma, [splat, bv, c]))
            nxt = b.add(k, i64(1))
            k.add_incoming(nxt, b.block)
            for phi, v in zip(cs, out):
                phi.add_incoming(v, b.block)
            b.cbranch(b.icmp_signed("<", nxt, i64(k_len)), body, done)
            b.position_at_end(done)
            for at, v in zip(c_at, out):
                vstore(acc, at, v)


@lower(SortOp)
def lower_sort(lw, op):
    """Insertion sort of each line along ``dim``, on a copy of the tile."""
    t = op.result.type
    outer, k_len, inner = _box(t.shape, op.attrs.get("dim", -1) % len(t.shape))
    descending = op.attrs.get("descending", False)
    elem = t.element
    buf = lw.materialize(Tile(t.shape, elem, fn=_reader(lw, lw.get(op.operands[0])))).buf
    b = lw.b
    with lw.loop(outer * inner) as line:
        base = b.add(b.mul(b.udiv(line, i64(inner)), i64(k_len * inner)), b.urem(line, i64(inner)))
        with lw.loop(k_len, start=1) as k:
            _insert(lw, buf, elem, base, inner, k, descending)
    lw.set(op.result, Tile(t.shape, elem, buf=buf))


@lower(HistogramOp)
def lower_histogram(lw, op):
    """Bins zeroed, then one pass over the source: an element in ``0 .. bins-1`` (where the mask holds)
    adds one to its bin."""
    b = lw.b
    bins = op.result.type.shape[0]
    src, mask = lw.get(op.src), None if op.mask is None else lw.get(op.mask)
    elem = op.src.type.element
    buf = lw.alloca(i32, bins)
    with lw.loop(bins) as j:
        lw.store_elem(buf, i32, j, ir.Constant(ir.IntType(32), 0))
    with lw.loop(op.src.type.shape[0]) as lin:
        x = lw.elem_at(src, lin)
        x = (b.sext if elem.is_signed else b.zext)(x, ir.IntType(64)) if x.type.width < 64 else x
        keep = b.icmp_unsigned("<", x, i64(bins))  # unsigned: negative values are out of range too
        if mask is not None:
            keep = b.and_(keep, lw.elem_at(mask, lin))
        with lw.if_(keep):
            lw.store_elem(buf, i32, x, b.add(lw.load_elem(buf, i32, x), ir.Constant(ir.IntType(32), 1)))
    lw.set(op.result, Tile((bins,), i32, buf=buf))


def _reader(lw, x):
    return lambda lin: lw.elem_at(x, lin)


def _insert(lw, buf, elem, base, stride, k, descending):
    """Move element ``k`` of a line left past the greater (lesser, descending) elements."""
    b = lw.b

    def at(j):
        return b.add(base, b.mul(j, i64(stride)))

    key = lw.load_elem(buf, elem, at(k))
    start = b.sub(k, i64(1))
    pre = b.block
    head, body, done = (b.append_basic_block(n) for n in ("sort.head", "sort.shift", "sort.done"))
    b.branch(head)
    b.position_at_end(head)
    j = b.phi(ir.IntType(64))
    j.add_incoming(start, pre)
    more = b.icmp_signed(">=", j, i64(0))
    safe_j = b.select(more, j, i64(0))
    cur = lw.load_elem(buf, elem, at(safe_j))
    out_of_order = _less(lw, key, cur, elem) if not descending else _less(lw, cur, key, elem)
    b.cbranch(b.and_(more, out_of_order), body, done)
    b.position_at_end(body)
    lw.store_elem(buf, elem, at(b.add(j, i64(1))), cur)
    j.add_incoming(b.sub(j, i64(1)), body)
    b.branch(head)
    b.position_at_end(done)
    lw.store_elem(buf, elem, at(b.add(j, i64(1))), key)


def _less(lw, x, y, elem):
    b = lw.b
    if elem.is_float:
        return b.fcmp_ordered("<", to_arith(lw, x, elem), to_arith(lw, y, elem))
    return (b.icmp_signed if elem.is_signed else b.icmp_unsigned)("<", x, y)
