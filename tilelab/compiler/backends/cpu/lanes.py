"""Loops over 1-D tiles written as LLVM vector code: one iteration computes ``width`` lanes.

Why: LLVM's loop vectorizer, and the O3 pipeline around it, cost most of a 1-D elementwise
kernel's compile time (vector add: ~15 ms of optimization, and its masked loops and runtime
alias checks add code to emit). Such a kernel's loops are simple -- contiguous loads,
arithmetic, a contiguous store -- so the backend writes them as vector code itself and the
kernel needs only a short pipeline (codegen.py). Kernels with an op this file does not
compute keep the element loops and LLVM's vectorizer.

Over one chunk of lanes ``[i, i + width)`` a 1-D tile value is ``uniform`` (one scalar),
``affine`` (integer lanes ``base + j``), ``vector`` or ``contiguous`` (pointer lanes
``p + j``): its *kind*, which lane_plan.py finds before any code is emitted. A load
through a contiguous pointer is one vector load (``llvm.masked.load`` under a mask), a
store one vector store. Affine lanes are exact only where no step wrapped its integer
type: ``Bounds`` gives those facts, and most are known at compile time (``pid * 1024 +
arange(0, 1024)`` never wraps an ``i32``); where one is left and fails at run time, the
program runs the element-by-element code instead (the *fallback*). A store reads its loads
in the same iteration as it writes when the written bytes do not overlap the read ones, or
are the very same addresses (``x[i] = f(x[i])``); otherwise it computes the stored value
into a buffer first, as the tile semantics read everything before writing.

    store(out + offs, load(x + offs, mask) + load(y + offs, mask), mask)   # offs = pid * 1024 + arange
    ->  if all masks true and out apart from x, y:
            for i in 0..1024 step 16:  out[o+i:+16] = x[o+i:+16] + y[o+i:+16]    (plain vectors)
        else:
            for i ...:  buf[i:+16] = masked x[o+i:+16] + masked y[o+i:+16]
            for i ...:  masked out[o+i:+16] = buf[i:+16]
"""

from __future__ import annotations

from llvmlite import ir

from tilelab.compiler.ir.core import Value
from tilelab.compiler.ir.ops import (
    AddPtrOp,
    BinaryOp,
    CastOp,
    CmpOp,
    FmaOp,
    LoadOp,
    MakeRangeOp,
    SelectOp,
    UnaryOp,
)

from ..common.scalars import float_min_max
from ..common.types import I32, I64, PTR, memory_type, register_type
from .bounds import Bounds
from .context import Tile, i64
from .lane_plan import (
    AFFINE,
    CONTIGUOUS,
    FLOAT_UNARY,
    LANE_BYTES,
    PREDICATES,
    SAME_LANES,
    UNIFORM,
    VECTOR,
    Lane,
    Plan,
    conversion,
)


class Lanes:
    """Emits a ``Plan``'s values one chunk of ``width`` lanes at a time, at ``lw.b``."""

    def __init__(self, lw, plan: Plan, width: int, proven=frozenset()):
        self.lw = lw
        self.plan = plan
        self.width = width
        self.proven = proven  # masks known all-true in this version: ignored
        self.uniform: dict[Value, ir.Value] = {}
        self.splats: dict[int, ir.Value] = {}
        self.chunk: dict[Value, Lane] = {}
        self.hoist: ir.IRBuilder | None = None

    # ----------------------------------------------------------------- the loop
    def loop(self, numel: int, body) -> None:
        """``for i in range(0, numel, width): body(i)`` with the uniforms computed before it."""
        for v, k in self.plan.kinds.items():
            if k == UNIFORM and v.type.is_tensor and isinstance(self.lw.values.get(v), Tile):
                self.uniform[v] = self.lw.elem_at(self.lw.values[v], i64(0))
        b = self.lw.b
        pre = b.block
        head, done = b.append_basic_block("lanes"), b.append_basic_block("lanes.end")
        b.branch(head)
        self.hoist = ir.IRBuilder(pre)
        self.hoist.position_before(pre.terminator)
        self.hoist.debug_metadata = b.debug_metadata
        b.position_at_end(head)
        i = b.phi(I64)
        i.add_incoming(i64(0), pre)
        self.chunk = {}
        body(i)
        nxt = b.add(i, i64(self.width))
        i.add_incoming(nxt, b.block)
        b.cbranch(b.icmp_signed("<", nxt, i64(numel)), head, done)
        b.position_at_end(done)

    # ----------------------------------------------------------------- values
    def at(self, v: Value, i: ir.Value) -> Lane:
        """``v``'s lanes ``[i, i + width)``: each value is computed once per iteration, at its op's line."""
        if v not in self.chunk:
            b, lines, op = self.lw.b, self.lw.lines, v.defining_op
            outer = b.debug_metadata
            if lines is not None and op is not None and v.type.is_tensor:
                b.debug_metadata = lines.location(self.lw.fn, op.loc)
            self.chunk[v] = self._at(v, i)
            b.debug_metadata = outer
        return self.chunk[v]

    def vector(self, v: Value, i: ir.Value) -> ir.Value:
        """``v``'s lanes as one LLVM vector."""
        return self.as_vector(self.at(v, i), v.type.element)

    def as_vector(self, lane: Lane, elem) -> ir.Value:
        if lane.kind == VECTOR:
            return lane.value
        if lane.kind == UNIFORM:
            return self.splat(lane.value, self.hoist)
        iota = ir.Constant(ir.VectorType(register_type(elem), self.width), list(range(self.width)))
        return self.lw.b.add(self.splat(lane.value, self.lw.b), iota)  # affine: lane 0 is computed in the loop

    def splat(self, x: ir.Value, b: ir.IRBuilder) -> ir.Value:
        """``x`` in every lane (once per ``x``; uniforms are splat before the loop, by ``hoist``)."""
        if id(x) in self.splats:
            return self.splats[id(x)]
        vt = ir.VectorType(x.type, self.width)
        one = b.insert_element(ir.Constant(vt, None), x, ir.Constant(I32, 0))
        out = b.shuffle_vector(one, ir.Constant(vt, None), ir.Constant(ir.VectorType(I32, self.width), None))
        self.splats[id(x)] = out
        return out

    def _at(self, v: Value, i: ir.Value) -> Lane:
        lw, b = self.lw, self.lw.b
        t = v.type
        if not t.is_tensor:
            return Lane(UNIFORM, lw.get(v))
        if v in self.uniform:
            return Lane(UNIFORM, self.uniform[v])
        tile = lw.substitutes.get(id(lw.values[v]), lw.values[v])
        if tile.buf is not None:
            return Lane(VECTOR, self.read(tile.buf, t.element, i))
        op = v.defining_op
        if isinstance(op, SAME_LANES):
            return self.at(op.operands[0], i)
        if isinstance(op, MakeRangeOp):
            start = op.attrs["start"]
            return Lane(AFFINE, b.trunc(b.add(i, i64(start)) if start else i, register_type(t.element)))
        if isinstance(op, AddPtrOp):  # uniform pointers were computed before the loop
            return Lane(CONTIGUOUS, self._addptr(op, i))
        if isinstance(op, LoadOp):
            return Lane(VECTOR, self.load(op, i))
        if self.plan.kinds[v] == AFFINE:
            return Lane(AFFINE, self._affine(op, i))
        return Lane(VECTOR, self._vector_op(op, i))

    def _affine(self, op, i) -> ir.Value:
        """Lane 0 of an affine ``op`` (the others follow: ``+ j``)."""
        b = self.lw.b
        if isinstance(op, CastOp):
            src, dst = op.operands[0].type.element, op.result.type.element
            return _int_cast(b, self.at(op.operands[0], i).value, src, register_type(dst))
        x, y = (self.at(v, i).value for v in op.operands)
        return b.add(x, y) if op.kind == "add" else b.sub(x, y)

    def _addptr(self, op, i) -> ir.Value:
        b = self.lw.b
        p, off = self.at(op.operands[0], i).value, self.at(op.operands[1], i).value
        if off.type.width < 64:
            off = b.sext(off, I64) if op.operands[1].type.element.is_signed else b.zext(off, I64)
        return b.gep(p, [off], source_etype=memory_type(op.result.type.element.pointee))

    # ----------------------------------------------------------------- memory
    def mask(self, mask: Value | None, i) -> ir.Value | None:
        """The mask's lanes (``<width x i1>``), or ``None`` where absent or proven all-true."""
        if mask is None or mask in self.proven:
            return None
        return self.vector(mask, i)

    def read(self, ptr: ir.Value, elem, i: ir.Value | None = None, mask=None, other=None) -> ir.Value:
        """A vector load of ``width`` elements at ``ptr`` (``+ i`` for a buffer), lanes off ``mask`` ``other``."""
        b = self.lw.b
        mem = memory_type(elem)
        vt = ir.VectorType(mem, self.width)
        align = elem.itemsize
        if i is not None:
            ptr, align = b.gep(ptr, [i], inbounds=True, source_etype=mem), min(LANE_BYTES, self.width * elem.itemsize)
        if mask is None:
            v = b.load(ptr, typ=vt, align=align)
        else:
            fn = self.lw.function(f"llvm.masked.load.{_suffix(vt)}.p0", vt, [PTR, I32, mask.type, vt])
            v = b.call(fn, [ptr, ir.Constant(I32, align), mask, other if other is not None else ir.Constant(vt, None)])
        return b.icmp_unsigned("!=", v, ir.Constant(vt, [0] * self.width)) if elem.is_bool else v

    def write(self, ptr: ir.Value, elem, value: ir.Value, i: ir.Value | None = None, mask=None) -> None:
        """A vector store of ``value`` at ``ptr`` (``+ i`` for a buffer), only the lanes on in ``mask``."""
        b = self.lw.b
        mem = memory_type(elem)
        vt = ir.VectorType(mem, self.width)
        align = elem.itemsize
        if elem.is_bool:
            value = b.zext(value, vt)
        if i is not None:
            ptr, align = b.gep(ptr, [i], inbounds=True, source_etype=mem), min(LANE_BYTES, self.width * elem.itemsize)
        if not getattr(ptr.type, "is_opaque", True):  # a buffer's element pointer: store a vector through it
            ptr = b.bitcast(ptr, vt.as_pointer())
        if mask is None:
            b.store(value, ptr, align=align)
            return
        fn = self.lw.function(f"llvm.masked.store.{_suffix(vt)}.p0", ir.VoidType(), [vt, PTR, I32, mask.type])
        b.call(fn, [value, ptr, ir.Constant(I32, align), mask])

    def load(self, op, i) -> ir.Value:
        """The lanes of ``tt.load`` ``op`` (through a contiguous pointer)."""
        elem = op.result.type.element
        mask = self.mask(op.mask, i)
        other = None  # masked-off lanes: ``other``, else 0
        if mask is not None and op.other is not None:
            other = self.vector(op.other, i)
            other = self.lw.b.zext(other, _vtype(elem, self.width, memory=True)) if elem.is_bool else other
        return self.read(self.at(op.ptr, i).value, elem, mask=mask, other=other)

    # ----------------------------------------------------------------- arithmetic
    def _vector_op(self, op, i) -> ir.Value:
        b = self.lw.b
        args = [self.vector(v, i) for v in op.operands]
        t = op.result.type.element
        if isinstance(op, BinaryOp):
            return _binary(self, op.kind, t, *args)
        if isinstance(op, CmpOp):
            return _compare(b, op.predicate, op.operands[0].type.element, *args)
        if isinstance(op, SelectOp):
            return b.select(*args)
        if isinstance(op, FmaOp):
            if t.name == "f16":  # llvm.fma on halves calls a helper the JIT does not link: through f32
                wide = ir.VectorType(ir.FloatType(), self.width)
                return b.fptrunc(self.intrinsic("fma", *(b.fpext(a, wide) for a in args)), args[0].type)
            return self.intrinsic("fma", *args)
        if isinstance(op, UnaryOp):
            return _unary(self, op.kind, t, args[0])
        return _cast(self, args[0], op.operands[0].type.element, t)

    def intrinsic(self, name: str, *args: ir.Value) -> ir.Value:
        t = args[0].type
        return self.lw.b.call(self.lw.function(f"llvm.{name}.{_suffix(t)}", t, [a.type for a in args]), list(args))


def _vtype(elem, width: int, memory: bool = False) -> ir.VectorType:
    return ir.VectorType(memory_type(elem) if memory else register_type(elem), width)


def _suffix(vt: ir.VectorType) -> str:
    """The overload suffix of an intrinsic on ``vt``: ``v16f32``, ``v8i64``."""
    names = {"half": "f16", "float": "f32", "double": "f64"}
    return f"v{vt.count}{names.get(str(vt.element), str(vt.element))}"


def _int_cast(b: ir.IRBuilder, x: ir.Value, src, dst: ir.Type) -> ir.Value:
    width = x.type.width if isinstance(x.type, ir.IntType) else x.type.element.width
    target = dst.width if isinstance(dst, ir.IntType) else dst.element.width
    if width > target:
        return b.trunc(x, dst)
    if width < target:
        return b.sext(x, dst) if src.is_signed else b.zext(x, dst)
    return x


def _binary(lanes: Lanes, kind: str, t, x: ir.Value, y: ir.Value) -> ir.Value:
    b = lanes.lw.b
    if t.is_float:
        simple = {"add": b.fadd, "sub": b.fsub, "mul": b.fmul, "div": b.fdiv, "fdiv": b.fdiv}
        return simple[kind](x, y) if kind in simple else float_min_max(b, kind, x, y)  # -0.0 < +0.0
    simple = {"add": b.add, "sub": b.sub, "mul": b.mul, "and": b.and_, "or": b.or_, "xor": b.xor, "shl": b.shl}
    if kind in simple:
        return simple[kind](x, y)
    if kind == "shr":
        return b.ashr(x, y) if t.is_signed else b.lshr(x, y)
    less = (b.icmp_signed if t.is_signed else b.icmp_unsigned)("<" if kind == "min" else ">", x, y)
    return b.select(less, x, y)


def _compare(b: ir.IRBuilder, predicate: str, t, x: ir.Value, y: ir.Value) -> ir.Value:
    pred = PREDICATES[predicate]
    if t.is_float:
        return b.fcmp_unordered(pred, x, y) if pred == "!=" else b.fcmp_ordered(pred, x, y)
    return (b.icmp_signed if t.is_signed else b.icmp_unsigned)(pred, x, y)


def _unary(lanes: Lanes, kind: str, t, x: ir.Value) -> ir.Value:
    b = lanes.lw.b
    if t.is_float:
        return b.fneg(x) if kind == "neg" else lanes.intrinsic(FLOAT_UNARY[kind], x)
    zero = ir.Constant(x.type, [0] * x.type.count)
    return b.sub(zero, x) if kind == "neg" else b.xor(x, ir.Constant(x.type, [-1] * x.type.count))


def _cast(lanes: Lanes, x: ir.Value, src, dst) -> ir.Value:
    b = lanes.lw.b
    how = conversion(src, dst)
    vt = _vtype(dst, lanes.width)
    if how == "nonzero":
        zero = ir.Constant(x.type, [0.0 if src.is_float else 0] * lanes.width)
        return b.fcmp_unordered("!=", x, zero) if src.is_float else b.icmp_unsigned("!=", x, zero)
    if how in ("trunc", "ext", "same"):
        return _int_cast(b, x, src, vt)
    if how == "itofp":
        return b.sitofp(x, vt) if src.is_signed else b.uitofp(x, vt)
    return b.fpext(x, vt) if how == "fpext" else b.fptrunc(x, vt)


# --------------------------------------------------------------------- versions


def facts(bounds: Bounds, plan: Plan) -> list | None:
    """The facts under which ``plan``'s affine lanes are exact (no step wrapped), or ``None``.

    Contiguous addresses are then exact too: lane ``j`` is ``p + base + j`` as the element
    code computes it (LLVM's pointer arithmetic wraps the same way in both).
    """
    out = []
    for v in dict.fromkeys(plan.exact):
        r = bounds.range(v)
        if r is None:
            return None
        out.append(r.ok)
    return out


def apart(bounds: Bounds, store_ptr: Value, load_ptr: Value) -> ir.Value | None:
    """The condition under which a store through ``store_ptr`` may be fused with a load through ``load_ptr``.

    Both are contiguous: the store writes ``S`` bytes from address ``A`` (its lane 0, the
    lowest), the load reads ``L`` bytes from ``B``. Fusing is right when the spans do not
    overlap, ``A - B >= L`` or ``A - B <= -S``, or when they are the very same addresses
    (``A == B``, equal element sizes: every lane reads the address it then writes). One
    unsigned compare tests the interval. ``None`` where the addresses are not known.
    """
    a, c = bounds.range(store_ptr), bounds.range(load_ptr)
    if a is None or c is None:
        return None
    b = bounds.b
    (first_a, _), (first_c, _) = bounds._common(a, c)
    numel = store_ptr.type.numel
    size_a, size_c = (p.type.element.pointee.itemsize for p in (store_ptr, load_ptr))
    ty = first_a.type
    d = b.sub(first_a, first_c)
    far = b.icmp_unsigned(
        ">=", b.add(d, ir.Constant(ty, numel * size_a - 1)), ir.Constant(ty, numel * (size_a + size_c) - 1)
    )
    return b.or_(b.icmp_unsigned("==", d, ir.Constant(ty, 0)), far) if size_a == size_c else far


def choose(lw, versions, fallback) -> None:
    """Emit the first of ``versions`` (``(condition, emit)``) whose condition holds, else ``fallback()``.

    A ``None`` condition always holds: the versions after it, and the fallback, are not emitted.
    The fallback's loops are not counted as scalar loops (``FunctionLowering.fallback``).
    """
    if not versions:
        lw.fallback += 1
        fallback()
        lw.fallback -= 1
        return
    (cond, emit), rest = versions[0], versions[1:]
    if cond is None:
        emit()
        return
    with lw.b.if_else(cond) as (then, otherwise):
        with then:
            emit()
        with otherwise:
            choose(lw, rest, fallback)


def _chain(b: ir.IRBuilder, cond: ir.Value | None, facts) -> ir.Value | None:
    """``cond and f1 and f2 ...`` as one flat chain (``None``: no condition, always true).

    Flat, each fact once: LLVM's instruction combiner is slow on trees of ``and`` with
    shared leaves (bounds.py).
    """
    for f in facts:
        cond = f if cond is None else b.and_(cond, f)
    return cond


def plan_for(lw, roots, accessed=(), written=None) -> Plan | None:
    """The ``Plan`` of a loop reading ``roots`` and accessing the pointers ``accessed``, or ``None``."""
    if lw.fallback or not lw.lane_mode:
        return None
    plan = Plan.of(lw, [*roots, *accessed])
    if plan is None or any(plan.kind(p) != CONTIGUOUS for p in accessed):
        return None
    if written is not None:
        plan.touches(written)
    return plan


def in_lanes(lw, plan: Plan, numel: int, masks, body, fallback, fused=None, masked=None, bounds=None) -> bool:
    """Emit ``body(lanes, i)`` lane-wise over ``numel`` elements, in versions; ``False``: not possible.

    1. every mask (``masks`` and those of the loads read) proven all-true, and the ``fused``
       conditions: ``body`` with plain vector loads and stores;
    2. the lanes exact: ``masked()`` (default: ``body`` with masked loads and stores);
    3. else ``fallback()`` -- not emitted where the lanes are exact by construction.
    """
    width = plan.width(numel)
    if numel % width:
        return False
    bounds = bounds or Bounds(lw)
    exact = facts(bounds, plan)
    if exact is None:
        return False
    b = lw.b
    exact = Bounds._and(*exact)
    exact_cond = _chain(b, None, exact)

    def version(proven):
        def emit():
            lanes = Lanes(lw, plan, width, frozenset(proven))
            lanes.loop(numel, lambda i: body(lanes, i))

        return emit

    masks = [m for m in dict.fromkeys([*masks, *(ld.mask for ld in plan.loads)]) if m is not None]
    proofs = [bounds.all_true(m) for m in masks]
    versions = []
    if all(p is not None for p in proofs) and (masks or fused):
        more = [f for f in Bounds._and(*proofs, *(fused or ())) if not any(f is e for e in exact)]
        versions.append((_chain(b, exact_cond, more), version(masks)))
    versions.append((exact_cond, masked or version(())))
    choose(lw, versions, fallback)
    return True


def store(lw, op, fallback) -> bool:
    """``tt.store`` of a 1-D tile (see the module docstring).

    Its loads are read in the store's loop where the spans are ``apart``; else (and under
    masks) the stored value is computed into a buffer first, then stored: the tile
    semantics read everything before writing.
    """
    t = op.value.type
    if not t.is_tensor:
        return False
    plan = plan_for(lw, [op.value, op.mask], accessed=[op.ptr], written=t.element)
    if plan is None:
        return False

    def body(lanes, i):
        value = lanes.vector(op.value, i)
        lanes.write(lanes.at(op.ptr, i).value, t.element, value, mask=lanes.mask(op.mask, i))

    if not plan.loads:
        return in_lanes(lw, plan, t.numel, [op.mask], body, fallback)
    bounds = Bounds(lw)
    fused = [apart(bounds, op.ptr, ld.ptr) for ld in plan.loads]
    if None in fused:
        return False
    buffered = lambda: _buffered(lw, op, plan)  # noqa: E731
    return in_lanes(lw, plan, t.numel, [op.mask], body, fallback, fused, buffered, bounds)


def _buffered(lw, op, plan: Plan) -> None:
    """A store whose value (or mask) reads memory: compute those into buffers, then store; masked."""
    t = op.value.type
    width = plan.width(t.numel)
    reads = [v for v in (op.value, op.mask) if v is not None and Plan.of(lw, [v]).loads]
    bufs = {v: lw.alloca(v.type.element, t.numel) for v in reads}
    first = Lanes(lw, plan, width)

    def compute(i):
        for v, buf in bufs.items():
            first.write(buf, v.type.element, first.vector(v, i), i=i)

    first.loop(t.numel, compute)
    saved = dict(lw.substitutes)
    for v, buf in bufs.items():
        lw.substitutes[id(lw.values[v])] = Tile(v.type.shape, v.type.element, buf=buf)
    then = Lanes(lw, Plan.of(lw, [op.value, op.mask, op.ptr]), width)

    def write(i):
        then.write(then.at(op.ptr, i).value, t.element, then.vector(op.value, i), mask=then.mask(op.mask, i))

    then.loop(t.numel, write)
    lw.substitutes = saved


def load(lw, op, buf: ir.Value, fallback) -> bool:
    """``tt.load`` of a 1-D tile into the buffer ``buf``."""
    t = op.result.type
    plan = plan_for(lw, [op.mask, op.other], accessed=[op.ptr], written=t.element)

    def body(lanes, i):
        lanes.write(buf, t.element, lanes.load(op, i), i=i)

    return plan is not None and in_lanes(lw, plan, t.numel, [op.mask], body, fallback)


def materialize(lw, v: Value, buf: ir.Value, fallback) -> bool:
    """Compute the lazy 1-D tile ``v`` into ``buf``; it reads its loads (if any) in the same loop."""
    t = v.type
    plan = plan_for(lw, [v], written=t.element)

    def body(lanes, i):
        lanes.write(buf, t.element, lanes.vector(v, i), i=i)

    return plan is not None and in_lanes(lw, plan, t.numel, [], body, fallback)
