"""The state of lowering one kernel function to LLVM: values, tiles, loops and buffers.

A scalar IR value becomes one LLVM value. A tile becomes a ``Tile``: its shape and
element type, and either

* a *buffer* -- a stack array (an ``alloca`` in the entry block) holding the elements
  in row-major order, or
* a *lazy* element function ``fn(lin) -> llvm value`` that computes element ``lin``
  (its row-major linear index) where it is needed.

Lazy tiles are how elementwise chains fuse: ``store(p + offs, exp(x) * 2)`` emits one
loop whose body loads ``x[i]``, calls ``exp``, multiplies and stores; shape ops
(``splat``, ``broadcast``, ``trans``, ``expand_dims`` ...) are lazy index arithmetic
over their source. A value that several ops use is *materialized* once into a buffer
by a loop over its elements (``FunctionLowering.materialize``); the policy lives in
``fusion.py``. Loops over elements are plain counted loops that LLVM vectorizes -- or,
over the 1-D tiles of kernels without accumulators, vector code written by lanes.py.

Lowering functions register per op class with ``@lower(OpClass)`` and receive the
``FunctionLowering`` and the op.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import contextmanager

from llvmlite import ir

from tilelab._registry import Registry
from tilelab.compiler.ir.core import Block, Op, Value
from tilelab.compiler.ir.types import Type

from ..common.types import I1, I8, I64, memory_type, register_type

#: op class -> lowering function ``fn(lowering, op)``, registered with ``@lower`` in these modules
LOWERINGS = Registry(
    "CPU lowering",
    __package__,
    modules=("lower_cast", "lower_control", "lower_elementwise", "lower_memory", "lower_reduce", "lower_shape"),
)
lower = LOWERINGS.register


class LoweringBug(Exception):
    """An internal error of the CPU backend (not a user mistake): names the op and location."""


def i64(n: int) -> ir.Constant:
    return ir.Constant(I64, n)


class Tile:
    """A tile during lowering: ``shape``, IR element type ``elem``, and a buffer or a lazy ``fn``."""

    def __init__(self, shape, elem: Type, buf: ir.Value | None = None, fn: Callable | None = None):
        self.shape = tuple(shape)
        self.elem = elem
        self.buf = buf
        self.fn = fn

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


class FunctionLowering:
    """Lowers one ``FuncOp`` body into the LLVM function ``fn`` (see the module docstring)."""

    def __init__(self, fn: ir.Function, entry: ir.Block, sanitize: bool, op_ids: dict, lazy_ok: set):
        self.fn = fn
        self.module = fn.module
        self.entry = entry
        self.b = ir.IRBuilder(fn.append_basic_block("body"))
        self.sanitize = sanitize
        self.op_ids = op_ids  # op -> small int naming it in runtime reports
        self.lazy_ok = lazy_ok  # values allowed to stay lazy (fusion.py)
        self.values: dict[Value, object] = {}
        self.pids: list[ir.Value] = []
        self.grid: list[ir.Value] = []
        self.ranges: tuple[ir.Value, ir.Value] | None = None
        self.fail_block: ir.Block | None = None
        self.proven: set[Value] = set()  # bool tiles known all-true where code is emitted now
        self.substitutes: dict[int, Tile] = {}  # id(lazy tile) -> its materialized copy
        self.lines = None  # a debuginfo.LineTable: instructions get their op's source line
        self.lane_mode = False  # loops over 1-D tiles may be written as vector code (lanes.py)
        self.fallback = 0  # > 0 while emitting code that runs only where lanes' facts fail
        self.scalar_loops = 0  # element loops emitted outside any fallback

    # ----------------------------------------------------------------- values
    def get(self, v: Value):
        try:
            return self.values[v]
        except KeyError:
            raise LoweringBug(f"value {v} used before it was lowered") from None

    def set(self, v: Value, x) -> None:
        if isinstance(x, Tile) and x.buf is None and v not in self.lazy_ok:
            self.values[v] = x  # what lanes.materialize reads
            x = self.materialize(x, value=v)
        self.values[v] = x

    def elem_at(self, x, lin: ir.Value) -> ir.Value:
        """Element ``lin`` of a tile, or the scalar itself (scalars broadcast)."""
        if not isinstance(x, Tile):
            return x
        x = self.substitutes.get(id(x), x)
        if x.buf is None:
            return x.fn(lin)
        return self.load_elem(x.buf, x.elem, lin)

    def load_elem(self, buf: ir.Value, elem: Type, lin: ir.Value) -> ir.Value:
        mem = memory_type(elem)
        v = self.b.load(self.b.gep(buf, [lin], inbounds=True, source_etype=mem), typ=mem)
        return self.b.trunc(v, I1) if mem is I8 and register_type(elem) is I1 else v

    def store_elem(self, buf: ir.Value, elem: Type, lin: ir.Value, v: ir.Value) -> None:
        mem = memory_type(elem)
        if mem is I8 and v.type == I1:
            v = self.b.zext(v, I8)
        self.b.store(v, self.b.gep(buf, [lin], inbounds=True, source_etype=mem))

    # ----------------------------------------------------------------- buffers and loops
    def alloca(self, elem: Type, n: int) -> ir.Value:
        """A stack buffer of ``n`` elements, allocated once in the entry block."""
        eb = ir.IRBuilder(self.entry)
        eb.position_at_start(self.entry)
        buf = eb.alloca(memory_type(elem), size=i64(n))
        buf.align = 64
        return buf

    def materialize(self, t: Tile, into: ir.Value | None = None, value: Value | None = None) -> Tile:
        """Compute every element of a lazy tile into a buffer (``into`` or a fresh one).

        With ``value`` (the IR value of ``t``) a 1-D tile may be computed lane-wise (lanes.py).
        """
        from . import lanes  # lanes.py builds on this module

        buf = into if into is not None else self.alloca(t.elem, t.numel)

        def elements():
            with self.loop(t.numel) as lin:
                self.store_elem(buf, t.elem, lin, self.elem_at(t, lin))

        if value is None or not lanes.materialize(self, value, buf, elements):
            elements()
        return Tile(t.shape, t.elem, buf=buf)

    def copy_into(self, t: Tile, buf: ir.Value) -> None:
        self.materialize(t, into=buf)

    @contextmanager
    def loop(self, n, start=0, step=1):
        """``for lin in range(start, n, step)`` over i64 (``n`` an int or an i64 value)."""
        b = self.b
        n = i64(n) if isinstance(n, int) else n
        self.scalar_loops += not self.fallback
        pre = b.block
        head = b.append_basic_block("loop")
        body = b.append_basic_block("loop.body")
        done = b.append_basic_block("loop.end")
        b.branch(head)
        b.position_at_end(head)
        lin = b.phi(I64)
        lin.add_incoming(i64(start) if isinstance(start, int) else start, pre)
        cond = b.icmp_signed("<" if step > 0 else ">", lin, n)
        b.cbranch(cond, body, done)
        b.position_at_end(body)
        yield lin
        nxt = b.add(lin, i64(step))
        lin.add_incoming(nxt, b.block)
        b.branch(head)
        b.position_at_end(done)

    def mask_of(self, mask: Value | None):
        """The lowered ``mask`` of an access, or ``None`` where it is absent or proven all-true."""
        return None if mask is None or mask in self.proven else self.get(mask)

    def versions(self, cond: ir.Value | None, proven, fast, slow) -> None:
        """Emit ``fast()`` where ``cond`` holds (with the masks ``proven`` all-true), else ``slow()``.

        Why: a loop whose masks are known all-true vectorizes to plain full-width loads
        and stores; only the last program of a grid usually takes the slow version.
        Without a ``cond`` only ``slow()`` is emitted.
        """
        if cond is None:
            slow()
            return
        with self.b.if_else(cond) as (then, otherwise):
            with then:
                saved, self.proven = self.proven, self.proven | set(proven)
                fast()
                self.proven = saved
            with otherwise:
                slow()

    @contextmanager
    def if_(self, cond: ir.Value):
        """Emit the body only where ``cond`` holds (an ``i1``)."""
        with self.b.if_then(cond):
            yield

    # ----------------------------------------------------------------- failures and reports
    def fail(self) -> ir.Block:
        """The block that ends this program with status 1 (an assert or bounds failure)."""
        if self.fail_block is None:
            self.fail_block = self.fn.append_basic_block("fail")
            ir.IRBuilder(self.fail_block).ret(ir.Constant(ir.IntType(32), 1))
        return self.fail_block

    def function(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        """An LLVM function (an intrinsic or a libm symbol) declared once per module."""
        existing = self.module.globals.get(name)
        if existing is not None:
            return existing
        return ir.Function(self.module, ir.FunctionType(ret, args), name)

    # ----------------------------------------------------------------- blocks
    def lower_block(self, block: Block) -> None:
        for op in block.ops:
            self.lower_op(op)

    def lower_op(self, op: Op) -> None:
        fn = LOWERINGS.get(type(op))
        if fn is None:
            raise LoweringBug(f"the CPU backend cannot lower {op.name} at {op.loc}")
        if self.lines is None:
            fn(self, op)
            return
        outer, here = self.b.debug_metadata, self.lines.location(self.fn, op.loc)
        self.b.debug_metadata = here
        fn(self, op)
        self.b.debug_metadata = outer
        for r in op.results:  # a lazy tile's code is emitted later, elsewhere, but keeps its own line
            x = self.values.get(r)
            if isinstance(x, Tile) and x.fn is not None:
                x.fn = self._located(x.fn, here)

    def _located(self, fn: Callable, location) -> Callable:
        def element(lin):
            outer, self.b.debug_metadata = self.b.debug_metadata, location
            try:
                return fn(lin)
            finally:
                self.b.debug_metadata = outer

        return element


def coords(b: ir.IRBuilder, lin: ir.Value, shape) -> list[ir.Value]:
    """Row-major coordinates of ``lin`` in ``shape`` (powers of two: shifts and masks)."""
    out = []
    stride = math.prod(shape)
    for d in shape:
        stride //= d
        c = _div(b, lin, stride)
        out.append(_rem(b, c, d))
    return out


def _div(b: ir.IRBuilder, x: ir.Value, n: int) -> ir.Value:
    if n == 1:
        return x
    return b.lshr(x, i64(n.bit_length() - 1)) if n & (n - 1) == 0 else b.udiv(x, i64(n))


def _rem(b: ir.IRBuilder, x: ir.Value, n: int) -> ir.Value:
    if n == 1:
        return i64(0)
    return b.and_(x, i64(n - 1)) if n & (n - 1) == 0 else b.urem(x, i64(n))


def linear(b: ir.IRBuilder, cs: list[ir.Value], shape) -> ir.Value:
    """The row-major linear index of coordinates ``cs`` in ``shape`` (the inverse of ``coords``)."""
    lin = i64(0)
    stride = math.prod(shape)
    for c, d in zip(cs, shape):
        stride //= d
        if d > 1:
            lin = b.add(lin, b.mul(c, i64(stride)) if stride > 1 else c)
    return lin


#: ``report`` kinds, read by the runtime's callback
REPORT_PRINT, REPORT_ASSERT, REPORT_OUT_OF_BOUNDS, REPORT_ZERO_STEP = 1, 2, 3, 4
REPORT_GLOBAL = "__tilelab_report"
#: report(kind, op id, pid x, pid y, pid z, element index, address, data, count)
REPORT_FN_TYPE = ir.FunctionType(ir.VoidType(), [ir.IntType(32)] * 5 + [I64, I64, ir.PointerType(), I64])


def report(lw: FunctionLowering, kind: int, op: Op, index: ir.Value, addr=None, data=None, n=None) -> None:
    """Call the runtime's report callback (a function pointer in a global the loader sets)."""
    b = lw.b
    gv = lw.module.globals.get(REPORT_GLOBAL)
    if gv is None:
        gv = ir.GlobalVariable(lw.module, ir.PointerType(), REPORT_GLOBAL)
        gv.initializer = ir.Constant(ir.PointerType(), None)
    fp = b.load(gv, typ=ir.PointerType())
    i32 = ir.IntType(32)
    args = [ir.Constant(i32, kind), ir.Constant(i32, lw.op_ids.get(op, -1)), *lw.pids, index]
    args += [addr if addr is not None else i64(0), data if data is not None else ir.Constant(ir.PointerType(), None)]
    args.append(n if n is not None else i64(0))
    b.call(_FnPtr(fp), args)


class _FnPtr:
    """Adapts an opaque function pointer so ``IRBuilder.call`` knows its signature."""

    def __init__(self, ptr):
        self.ptr = ptr
        self.function_type = REPORT_FN_TYPE
        self.type = ir.PointerType()

    def get_reference(self):
        return self.ptr.get_reference()
