"""A small kernel builder for interpreter and CPU backend tests: tile IR by hand, without the frontend.

    k = KernelBuilder("add", {"x": "*fp32", "out": "*fp32", "n": "i32"})
    offs, mask = k.block_offsets(128, k.arg("n"))
    x = k.load(k.addptr(k.arg("x"), offs), mask)
    k.store(k.addptr(k.arg("out"), offs), x, mask)
    module = k.finish()

Each op gets the location of the current source line (``k.line(5)``); the kernel's
``source`` attribute holds one fake source line per line number so error messages can
quote it: line ``n`` reads ``line n``.
"""

from __future__ import annotations

import numpy as np

from tilelab.compiler import ir
from tilelab.compiler.ir import Builder, Loc, Module
from tilelab.compiler.ir import ops as O
from tilelab.compiler.ir.types import Type, i32, parse_type, tensor

FILE = "kern.py"


def scalar(name: str) -> Type:
    return parse_type(name)


class KernelBuilder:
    """Builds a one-kernel module; methods insert one op and return its result."""

    def __init__(self, name: str, params: dict[str, str], num_lines: int = 60):
        types = [parse_type(t) for t in params.values()]
        self.func = O.FuncOp(name, types, [], arg_names=list(params), loc=Loc(FILE, 1))
        source = "\n".join(f"line {n}" for n in range(1, num_lines + 1))
        self.func.attrs.update(source=source, filename=FILE, first_line=1)
        self.names = list(params)
        self.b = Builder(self.func.body, Loc(FILE, 2))
        self.funcs = [self.func]

    def line(self, n: int) -> KernelBuilder:
        """Give the following ops source line ``n``."""
        self.b.loc = Loc(FILE, n, 4)
        return self

    def arg(self, name: str):
        return self.func.args[self.names.index(name)]

    def op(self, op):
        self.b.insert(op)
        if len(op.results) == 1:
            return op.result
        return op.results if op.results else op

    def const(self, value, type: Type | str, shape=()):
        type = scalar(type) if isinstance(type, str) else type
        return self.op(O.ConstantOp(value, tensor(shape, type)))

    def pid(self, axis: int = 0):
        return self.op(O.ProgramIdOp(axis))

    def arange(self, n: int):
        return self.op(O.MakeRangeOp(0, n, tensor((n,), i32)))

    def splat(self, x, shape):
        return self.op(O.SplatOp(x, tensor(shape, x.type.element)))

    def bin(self, kind: str, a, b):
        return self.op(O.BinaryOp(kind, a, b))

    def cmp(self, pred: str, a, b):
        return self.op(O.CmpOp(pred, a, b))

    def addptr(self, ptr, offs):
        if offs.type.shape and not ptr.type.shape:
            ptr = self.splat(ptr, offs.type.shape)
        return self.op(O.AddPtrOp(ptr, offs))

    def load(self, ptr, mask=None, other=None):
        elem = ptr.type.element.pointee
        return self.op(O.LoadOp(ptr, tensor(ptr.type.shape, elem), mask=mask, other=other))

    def store(self, ptr, value, mask=None):
        return self.op(O.StoreOp(ptr, value, mask=mask))

    def block_offsets(self, block: int, n):
        """``offs = pid * block + arange(block)`` and ``mask = offs < n``."""
        start = self.bin("mul", self.pid(0), self.const(block, "i32"))
        offs = self.bin("add", self.splat(start, (block,)), self.arange(block))
        mask = self.cmp("lt", offs, self.splat(n, (block,)))
        return offs, mask

    def region(self, block):
        """Insert into ``block`` (a context manager)."""
        return self.b.at_end(block)

    def combine(self, op, fn):
        """Fill a reduce/scan combine block: ``fn(*args)`` gives the combined values.

        ``op`` is the reduce/scan op or what ``self.op`` returned for it.
        """
        if isinstance(op, list):
            op = op[0]
        if isinstance(op, ir.Value):
            op = op.owner
        with self.region(op.regions[0].block):
            self.op(O.ReduceReturnOp(list(fn(*op.regions[0].block.args))))
        return op

    def finish(self) -> Module:
        self.b.set_insertion_point_to_end(self.func.body)
        self.op(O.ReturnOp([]))
        module = Module(self.funcs, self.func.sym_name)
        ir.verify(module)
        return module


def io_kernel(in_types: list[str], out_type: str, body, block: int = 64):
    """A kernel ``out[i] = body(k, *loaded inputs)`` over ``n`` elements, masked."""
    params = {f"x{i}": "*" + t for i, t in enumerate(in_types)}
    params.update(out="*" + out_type, n="i32")
    k = KernelBuilder("io", params)
    offs, mask = k.block_offsets(block, k.arg("n"))
    xs = [k.load(k.addptr(k.arg(f"x{i}"), offs), mask) for i in range(len(in_types))]
    k.store(k.addptr(k.arg("out"), offs), body(k, *xs), mask)
    return k.finish()


def poisoned(shape, dtype) -> np.ndarray:
    """An output array filled with values no kernel computes (NaN / int minimum)."""
    dtype = np.dtype(dtype)
    out = np.empty(shape, dtype)
    if dtype.kind == "i":
        out[...] = np.iinfo(dtype).min
    elif dtype.kind == "u":
        out[...] = np.iinfo(dtype).max
    elif dtype.kind == "b":
        out[...] = True
    else:
        out[...] = np.nan
    return out
