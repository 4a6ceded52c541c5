"""A small kit to build tile IR kernels in tests with ``tilelab.compiler.ir.Builder``."""

from tilelab.compiler import ir
from tilelab.compiler.ir import types as T
from tilelab.compiler.ir.core import FuncOp, Loc, Module


class Kit:
    """``k = Kit("add", x="*fp32", n="i32")``: a kernel function and a builder at its end."""

    def __init__(self, name="kernel", divisibility=None, **signature):
        self.types = [T.parse_type(t) for t in signature.values()]
        self.func = FuncOp(name, self.types, [], arg_names=list(signature))
        self.func.attrs["arg_divisibility"] = tuple((divisibility or {}).get(n, 1) for n in signature)
        self.module = Module([self.func], name)
        self.b = ir.Builder(self.func.body, Loc("kernel.py", 1))
        self.arg = dict(zip(signature, self.func.args))

    def at(self, line):
        self.b.loc = Loc("kernel.py", line)
        return self

    def op(self, op):
        return self.b.insert(op).results

    def one(self, op):
        return self.b.insert(op).result

    def const(self, value, shape=(), elem=T.i32):
        return self.one(ir.ConstantOp(value, T.tensor(shape, elem)))

    def pid(self, axis=0):
        return self.one(ir.ProgramIdOp(axis))

    def arange(self, start, end):
        return self.one(ir.MakeRangeOp(start, end, T.tensor([end - start], T.i32)))

    def splat(self, x, shape):
        return self.one(ir.SplatOp(x, T.tensor(shape, x.type)))

    def bin(self, kind, a, b):
        a, b = self._match(a, b)
        return self.one(ir.BinaryOp(kind, a, b))

    def cmp(self, pred, a, b):
        a, b = self._match(a, b)
        return self.one(ir.CmpOp(pred, a, b))

    def _match(self, a, b):
        if isinstance(b, int):
            b = self.const(b, a.type.shape, a.type.element)
        if isinstance(a, int):
            a = self.const(a, b.type.shape, b.type.element)
        if a.type.shape != b.type.shape:
            if not a.type.shape:
                a = self.splat(a, b.type.shape)
            elif not b.type.shape:
                b = self.splat(b, a.type.shape)
        return a, b

    def expand(self, x, axis):
        shape = list(x.type.shape)
        shape.insert(axis, 1)
        return self.one(ir.ExpandDimsOp(x, T.tensor(shape, x.type.element), axis=axis))

    def broadcast(self, x, shape):
        return self.one(ir.BroadcastOp(x, T.tensor(shape, x.type.element)))

    def addptr(self, ptr, offs):
        if not ptr.type.is_tensor and offs.type.is_tensor:
            ptr = self.splat(ptr, offs.type.shape)
        return self.one(ir.AddPtrOp(ptr, offs))

    def load(self, ptr, mask=None):
        return self.one(ir.LoadOp(ptr, ptr.type.with_element(ptr.type.element.pointee), mask=mask))

    def store(self, ptr, value, mask=None):
        self.op(ir.StoreOp(ptr, value, mask=mask))

    def hint(self, x, kind, *values):
        return self.one(ir.HintOp(x, kind, values))

    def done(self):
        self.op(ir.ReturnOp([]))
        ir.verify(self.module)
        return self.module
