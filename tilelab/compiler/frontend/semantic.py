"""The one place where Triton's semantics live: promotion, broadcasting, casts, elementwise ops.

The code generator and every ``tl.*`` builtin call methods of ``Semantic``; each
method checks its operands, converts them (promotion, broadcasting, weak Python
scalars), and emits IR through one ``Builder``. Errors are ``SemanticError`` with a
message naming both shapes or dtypes; the code generator adds the source line.

    sem = Semantic(builder)
    z = sem.binary("+", x, 1.0)   # x: tensor<128xf16> -> arith.add on f16, constant splatted

Memory, block pointers and atomics live in ``semantic_memory``; reductions, scans,
dot and sorting in ``semantic_reduce``; shape ops in ``semantic_shape``. ``Semantic``
combines them.
"""

from __future__ import annotations

import math

from ..ir import ops
from ..ir import types as irt
from .errors import SemanticError
from .promotion import check_fits, computation_type, python_scalar_type
from .semantic_compat import CompatMixin
from .semantic_memory import MemoryMixin
from .semantic_reduce import ReduceMixin
from .semantic_scaled import ScaledDotMixin
from .semantic_shape import ShapeMixin
from .values import constexpr, tensor, to_ir_type, unwrap

_ARITH = {"+": "add", "-": "sub", "*": "mul", "%": "rem", "&": "and", "|": "or", "^": "xor", "<<": "shl", ">>": "shr"}
_CMP = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
_INT_ONLY = {"&", "|", "^", "<<", ">>"}


def is_python_scalar(v) -> bool:
    """True for Python numbers and constexprs holding one (the *weak* operands of promotion)."""
    v = unwrap(v)
    return isinstance(v, (bool, int, float)) and not isinstance(v, tensor)


def shape_str(t) -> str:
    return str(list(t.type.shape)) if isinstance(t, tensor) else "scalar"


#: ``x.sum(0)``, ``x.reshape(...)``...: name -> ``fn(semantic, x, *args)``, the semantic method of the same
#: meaning (``tensor.__getattr__`` looks a name up in its builder's ``Semantic.tensor_methods``)
TENSOR_METHODS = dict(
    sum=lambda s, x, axis=None, keep_dims=False, dtype=None: s.sum(x, axis, keep_dims, dtype),
    max=lambda s, x, axis=None, **kw: s.max_reduce(x, axis, kind="max", **kw),
    min=lambda s, x, axis=None, **kw: s.max_reduce(x, axis, kind="min", **kw),
    argmax=lambda s, x, axis, tie_break_left=True, keep_dims=False: s.argminmax(
        x, axis, "max", keep_dims, tie_break_left=tie_break_left
    ),
    argmin=lambda s, x, axis, tie_break_left=True, keep_dims=False: s.argminmax(
        x, axis, "min", keep_dims, tie_break_left=tie_break_left
    ),
    reduce=lambda s, x, axis, combine_fn, keep_dims=False: s.reduce_user(x, axis, combine_fn, keep_dims),
    cumsum=lambda s, x, axis=0, reverse=False: s.cumulative(x, axis, "add", reverse),
    cumprod=lambda s, x, axis=0, reverse=False: s.cumulative(x, axis, "mul", reverse),
    reshape=lambda s, x, *shape, can_reorder=False: s.reshape(x, shape, can_reorder),
    view=lambda s, x, *shape: s.reshape(x, shape, True),
    broadcast_to=lambda s, x, *shape: s.broadcast_to_shape(x, s.shape_args(shape), "broadcast"),
    expand_dims=lambda s, x, axis: s.expand_dims(x, axis),
    trans=lambda s, x, *dims: s.permute(x, dims),
    permute=lambda s, x, *dims: s.permute(x, dims),
    ravel=lambda s, x: s.reshape(x, (x.numel,), False),
    split=lambda s, x: s.split(x),
    sort=lambda s, x, dim=None, descending=False: s.sort(x, dim, descending),
    flip=lambda s, x, dim=None: s.flip(x, dim),
    exp=lambda s, x: s.math_unary("exp", x),
    log=lambda s, x: s.math_unary("log", x),
    sqrt=lambda s, x: s.math_unary("sqrt", x),
    abs=lambda s, x: s.math_unary("abs", x, float_only=False),
)


class Semantic(CompatMixin, MemoryMixin, ReduceMixin, ScaledDotMixin, ShapeMixin):
    """Typed IR construction with Triton's rules; ``builder`` says where ops go and with which location."""

    tensor_methods = TENSOR_METHODS

    def __init__(self, builder, inline_call=None):
        self.builder = builder
        self.inline_call = inline_call  # (jit fn, args) -> result; set by the code generator

    # ------------------------------------------------------------------ emitting
    def emit(self, op):
        """Insert ``op``; wrap its single result (if any) as a tensor."""
        for result in op.results:
            _check_tile_size(result.type)
        self.builder.insert(op)
        return tensor(op.results[0], self) if len(op.results) == 1 else op

    def wrap(self, value) -> tensor:
        return tensor(value, self)

    def constant(self, value, type) -> tensor:
        """A constant of IR ``type`` (a scalar, or a tile with every element ``value``)."""
        elem = type.element
        value = bool(value) if elem.is_bool else int(value) if elem.is_int else float(value)
        return self.emit(ops.ConstantOp(value, type))

    def to_tensor(self, v, dtype=None) -> tensor:
        """A tensor for ``v``: tensors pass through, Python numbers become constants (of ``dtype`` if given)."""
        v = unwrap(v)
        if isinstance(v, tensor):
            return v
        if is_python_scalar(v):
            return self.constant(v, to_ir_type(dtype) if dtype is not None else python_scalar_type(v))
        raise SemanticError(f"expected a tensor or a number, got {type(v).__name__} {v!r}")

    # ------------------------------------------------------------------ broadcasting
    def broadcast_to_shape(self, x: tensor, shape, what="broadcast") -> tensor:
        """``x`` stretched to ``shape`` (numpy rules: leading dims added, size-1 dims stretched)."""
        shape = tuple(int(unwrap(d)) for d in shape)
        src = tuple(x.type.shape)
        if src == shape:
            return x
        if not src:
            return self.emit(ops.SplatOp(x.handle, irt.tensor(shape, x.type.element)))
        if len(src) > len(shape) or any(s not in (1, d) for s, d in zip(src[::-1], shape[::-1])):
            raise SemanticError(f"cannot {what} shape {list(src)} to {list(shape)}")
        while len(src) < len(shape):
            x = self.emit(ops.ExpandDimsOp(x.handle, irt.tensor((1, *src), x.type.element), axis=0))
            src = (1, *src)
        return self.emit(ops.BroadcastOp(x.handle, irt.tensor(shape, x.type.element)))

    def broadcast_shapes(self, *shapes, what="") -> tuple:
        """The common shape of ``shapes`` under numpy's rules, or an error naming them."""
        rank = max(len(s) for s in shapes)
        out = []
        for i in range(1, rank + 1):
            dims = {s[-i] for s in shapes if len(s) >= i} - {1}
            if len(dims) > 1:
                shown = " and ".join(str(list(s)) for s in shapes)
                raise SemanticError(f"incompatible shapes{' for ' + what if what else ''}: {shown}")
            out.append(dims.pop() if dims else 1)
        return tuple(out[::-1])

    def broadcast(self, *xs: tensor, what="") -> list[tensor]:
        shape = self.broadcast_shapes(*(tuple(x.type.shape) for x in xs), what=what)
        return [self.broadcast_to_shape(x, shape) for x in xs]

    def inline_asm_elementwise(self, asm, constraints, args, dtype, is_pure, pack):
        """``tl.inline_asm_elementwise``: ``asm`` over the broadcast ``args``, ``pack`` elements an instance.

        Gives one tensor of each of ``dtype`` (a tuple of dtypes gives a tuple), of the args' shape.
        """
        asm, constraints = unwrap(asm), unwrap(constraints)
        if not isinstance(asm, str) or not isinstance(constraints, str):
            raise SemanticError("inline_asm_elementwise needs the assembly and the constraints as strings")
        pack = self.constexpr_int(pack, "inline_asm_elementwise's pack")
        if pack < 1:
            raise SemanticError(f"inline_asm_elementwise's pack must be at least 1, got {pack}")
        args = [self.to_tensor(a) for a in (unwrap(args) or [])]
        for a in args:
            if not a.type.element.is_pointer and a.type.element.is_bool:
                raise SemanticError("inline_asm_elementwise takes no bool tensors: cast them to tl.int8 first")
        args = self.broadcast(*args, what="inline_asm_elementwise") if len(args) > 1 else args
        dtypes = unwrap(dtype)
        single = not isinstance(dtypes, (tuple, list))
        elems = [to_ir_type(d) for d in ([dtypes] if single else dtypes)]
        if not elems:
            raise SemanticError("inline_asm_elementwise must give at least one result (return a dummy if need be)")
        for e in [a.type.element for a in args] + elems:
            per_register, bits = ops.InlineAsmOp.packing(e, pack)
            if pack % per_register:
                raise SemanticError(
                    f"inline_asm_elementwise: pack {pack} does not fill whole registers of {e} "
                    f"({32 // bits} to a 32-bit register): use a multiple of {per_register}"
                )
        shape = args[0].type if args else None
        rtypes = [shape.with_element(e) if shape is not None and shape.is_tensor else e for e in elems]
        op = ops.InlineAsmOp(asm, constraints, [a.handle for a in args], rtypes, bool(unwrap(is_pure)), pack)
        self.builder.insert(op)
        results = [tensor(r, self) for r in op.results]
        return results[0] if single else tuple(results)

    # ------------------------------------------------------------------ casts
    def cast(self, x, dtype, bitcast=False, rounding=None) -> tensor:
        """``x.to(dtype)``: a value conversion, or a reinterpretation of the bits with ``bitcast=True``."""
        x = self.to_tensor(x)
        dst = to_ir_type(dtype)
        src = x.type.element
        if src == dst:
            return x
        rtype = x.type.with_element(dst) if x.type.is_tensor else dst
        if bitcast:
            src_bits = 64 if src.is_pointer else src.bits
            dst_bits = 64 if dst.is_pointer else dst.bits
            if src_bits != dst_bits:
                raise SemanticError(f"cannot bitcast {src} to {dst}: sizes differ ({src_bits} and {dst_bits} bits)")
            return self.emit(ops.BitcastOp(x.handle, rtype))
        if dst.is_scalar and dst.is_bool and not src.is_pointer:
            return self.compare("!=", x, self.constant(0, x.type))
        if rounding not in (None, "rtne", "rtz"):
            raise SemanticError(f"fp_downcast_rounding must be 'rtne' or 'rtz', got {rounding!r}")
        return self.emit(ops.CastOp(x.handle, rtype, rounding or "rtne"))

    def cast_scalar_to(self, v, elem) -> tensor:
        """A weak Python number or a tensor converted to element type ``elem``."""
        if is_python_scalar(v):
            value = unwrap(v)
            if elem.is_int and isinstance(value, float):
                raise SemanticError(f"cannot use float {value} where {elem} is needed")
            check_fits(value, elem)
            return self.constant(value, elem)
        return self.cast(v, elem)

    # ------------------------------------------------------------------ binary ops
    def promote(self, a, b, symbol="", div_or_mod=False) -> tuple[tensor, tensor]:
        """Both operands converted to their computation type and one shape."""
        ta, tb = self._scalar_type(a), self._scalar_type(b)
        if ta.is_pointer or tb.is_pointer:
            raise SemanticError(f"unsupported operand types for {symbol}: {ta} and {tb}")
        ctype = computation_type(ta, is_python_scalar(a), tb, is_python_scalar(b), div_or_mod)
        a, b = self.cast_scalar_to(a, ctype), self.cast_scalar_to(b, ctype)
        return tuple(self.broadcast(a, b, what=symbol))

    def _scalar_type(self, v):
        return python_scalar_type(unwrap(v)) if is_python_scalar(v) else self.to_tensor(v).type.element

    def binary(self, symbol: str, a, b) -> tensor:
        """``a <symbol> b`` with Triton's promotion, broadcasting and pointer arithmetic."""
        if symbol in _CMP:
            return self.compare(symbol, a, b)
        for v in (a, b):
            if not isinstance(unwrap(v), tensor) and not is_python_scalar(v):
                raise SemanticError(f"unsupported operand for {symbol}: {type(unwrap(v)).__name__}")
        ta, tb = self._scalar_type(a), self._scalar_type(b)
        if ta.is_pointer or tb.is_pointer:
            return self._pointer_arith(symbol, a, b, ta, tb)
        if symbol == "/":
            return self.truediv(a, b)
        if symbol == "//":
            return self.floordiv(a, b)
        if symbol == "**":
            a, b = self.promote(a, b, symbol)
            if a.type.element.is_int:
                a, b = self.cast(a, irt.f32), self.cast(b, irt.f32)
            return self.emit(ops.BinaryOp("pow", a.handle, b.handle))
        if symbol in _INT_ONLY and (ta.is_float or tb.is_float):
            raise SemanticError(f"invalid operands of type {ta} and {tb}: {symbol} needs integer operands")
        a, b = self.promote(a, b, symbol, div_or_mod=symbol == "%")
        if symbol == ">>" and not ta.is_bool and ta.is_signed != a.type.element.is_signed:
            return self._shift_as(a, b, ta.is_signed)
        return self.emit(ops.BinaryOp(_ARITH[symbol], a.handle, b.handle))

    def _shift_as(self, a, b, signed: bool) -> tensor:
        """``>>`` arithmetic when the left operand was signed, logical when not (Triton picks by it,
        before promotion: ``int8 >> uint8`` shifts the uint8 bits arithmetically)."""
        t = a.type.element
        twin = irt.parse_type(("i" if signed else "u") + str(t.bits))
        shifted = self.emit(ops.BinaryOp("shr", self.cast(a, twin).handle, self.cast(b, twin).handle))
        return self.cast(shifted, t)

    def _pointer_arith(self, symbol, a, b, ta, tb) -> tensor:
        if symbol == "+" and tb.is_pointer and not ta.is_pointer:
            a, b, ta, tb = b, a, tb, ta
        if symbol not in ("+", "-") or tb.is_pointer or not tb.is_int:
            raise SemanticError(f"unsupported operand types for {symbol}: {ta} and {tb}")
        ptr, off = self.to_tensor(a), self.to_tensor(b)
        if symbol == "-":
            off = self.unary("-", off)
        ptr, off = self.broadcast(ptr, off, what=symbol)
        return self.emit(ops.AddPtrOp(ptr.handle, off.handle))

    def truediv(self, a, b) -> tensor:
        """``/``: ints are divided as f32; floats in their promoted type."""
        a, b = self.promote(a, b, "/", div_or_mod=True)
        if a.type.element.is_int:
            a, b = self.cast(a, irt.f32), self.cast(b, irt.f32)
        return self.emit(ops.BinaryOp("fdiv", a.handle, b.handle))

    def floordiv(self, a, b) -> tensor:
        """``//``: C-style (truncating) division of integers, like Triton (``-7 // 2 == -3``).

        Triton refuses ``//`` when either operand is a float; so does tilelab, pointing to
        ``tl.floor(a / b)`` or ``tl.math.div_rn``.
        """
        a, b = self.promote(a, b, "//", div_or_mod=True)
        if not a.type.element.is_int:
            raise SemanticError(f"// needs integer operands, got {a.type.element}; use tl.floor(a / b) for floats")
        return self.emit(ops.BinaryOp("div", a.handle, b.handle))

    def compare(self, symbol: str, a, b) -> tensor:
        """Comparisons give i1; pointers compare with pointers."""
        ta, tb = self._scalar_type(a), self._scalar_type(b)
        if ta.is_pointer or tb.is_pointer:
            if not (ta.is_pointer and tb.is_pointer):
                raise SemanticError(f"cannot compare {ta} with {tb}")
            a, b = self.broadcast(self.to_tensor(a), self.to_tensor(b), what=symbol)
        else:
            a, b = self.promote(a, b, symbol)
        return self.emit(ops.CmpOp(_CMP[symbol], a.handle, b.handle))

    def logical(self, kind: str, a, b) -> tensor:
        """``a and b`` / ``a or b`` on tensors: both converted to i1, then bitwise."""
        a, b = self.cast(self.to_tensor(a), irt.i1), self.cast(self.to_tensor(b), irt.i1)
        a, b = self.broadcast(a, b, what=kind)
        return self.emit(ops.BinaryOp(kind, a.handle, b.handle))

    def unary(self, symbol: str, x) -> tensor:
        """``-x``, ``~x`` (ints only) and ``not x`` (gives i1)."""
        x = self.to_tensor(x)
        elem = x.type.element
        if symbol == "-":
            if elem.is_pointer:
                raise SemanticError(f"cannot negate a pointer ({elem})")
            return self.emit(ops.UnaryOp("neg", x.handle))
        if symbol == "~":
            if not elem.is_int:
                raise SemanticError(f"~ needs an integer operand, got {elem}")
            return self.emit(ops.UnaryOp("not", x.handle))
        if symbol == "not":
            return self.compare("==", self.cast(x, irt.i1), False)
        raise SemanticError(f"unsupported unary operator {symbol}")

    # ------------------------------------------------------------------ math
    def math_unary(self, kind: str, x, float_only=True) -> tensor:
        """A math function (``exp``, ``sqrt``, ...) applied elementwise."""
        x = self.to_tensor(x)
        if float_only and not x.type.element.is_float:
            raise SemanticError(f"{kind} expects a floating point input, got {x.type.element}")
        rtype = x.type.with_element(irt.i1) if kind in ("isnan", "isinf", "signbit") and x.type.is_tensor else None
        if rtype is None and kind in ("isnan", "isinf", "signbit"):
            rtype = irt.i1
        return self.emit(ops.UnaryOp(kind, x.handle, rtype))

    def math_binary(self, kind: str, a, b, rounding: str | None = None) -> tensor:
        """A math function of two operands; ``rounding="rn"`` asks for a correctly rounded result."""
        a, b = self.promote(a, b, kind)
        if kind in ("pow", "atan2", "fdiv", "copysign", "hypot") and not a.type.element.is_float:
            a, b = self.cast(a, irt.f32), self.cast(b, irt.f32)
        if kind == "umulhi" and not a.type.element.is_int:
            raise SemanticError(f"umulhi expects integer inputs, got {a.type.element}")
        op = ops.BinaryOp(kind, a.handle, b.handle)
        if rounding:
            op.attrs["rounding"] = rounding
        return self.emit(op)

    def minmax(self, kind: str, a, b, propagate_nan=False) -> tensor:
        """``maximum``/``minimum``; with ``propagate_nan`` a NaN in either operand gives NaN."""
        a, b = self.promote(a, b, kind)
        r = self.emit(ops.BinaryOp(kind, a.handle, b.handle))
        if not propagate_nan or not a.type.element.is_float:
            return r
        r = self.where(self.math_unary("isnan", b), b, r)
        return self.where(self.math_unary("isnan", a), a, r)

    def fma(self, a, b, c) -> tensor:
        ta = computation_type(self._scalar_type(a), is_python_scalar(a), self._scalar_type(b), is_python_scalar(b))
        t = computation_type(ta, False, self._scalar_type(c), is_python_scalar(c))
        a, b, c = (self.cast_scalar_to(v, t) for v in (a, b, c))
        a, b, c = self.broadcast(a, b, c, what="fma")
        return self.emit(ops.FmaOp(a.handle, b.handle, c.handle))

    def where(self, cond, x, y) -> tensor:
        """``cond ? x : y`` elementwise, with promotion of ``x``/``y`` and broadcasting of all three."""
        cond = self.cast(self.to_tensor(cond), irt.i1)
        tx, ty = self._scalar_type(x), self._scalar_type(y)
        if tx.is_pointer or ty.is_pointer:
            x, y = self.to_tensor(x), self.to_tensor(y)
            if tx != ty:
                raise SemanticError(f"where: incompatible types {tx} and {ty}")
        else:
            x, y = self.promote(x, y, "where")
        cond, x, y = self.broadcast(cond, x, y, what="where")
        return self.emit(ops.SelectOp(cond.handle, x.handle, y.handle))

    # ------------------------------------------------------------------ creation
    def program_id(self, axis) -> tensor:
        axis = self.constexpr_int(axis, "program_id's axis")
        if axis not in (0, 1, 2):
            raise SemanticError(f"program_id axis must be 0, 1, or 2 but got {axis}")
        return self.emit(ops.ProgramIdOp(axis))

    def num_programs(self, axis) -> tensor:
        axis = self.constexpr_int(axis, "num_programs's axis")
        if axis not in (0, 1, 2):
            raise SemanticError(f"num_programs axis must be 0, 1 or 2, got {axis}")
        return self.emit(ops.NumProgramsOp(axis))

    def constexpr_int(self, v, what: str) -> int:
        v = unwrap(v)
        if isinstance(v, bool) or not isinstance(v, int):
            got = f"a run-time value ({v.type})" if isinstance(v, tensor) else repr(v)
            raise SemanticError(f"{what} must be a compile-time integer (tl.constexpr), got {got}")
        return v

    def constexpr_shape(self, shape, what: str) -> tuple[int, ...]:
        shape = unwrap(shape)
        if isinstance(shape, (int, constexpr, tensor)):
            shape = [shape]
        dims = tuple(self.constexpr_int(d, what) for d in shape)
        for d in dims:
            if d <= 0 or d & (d - 1):
                raise SemanticError(f"{what} must be powers of two, got {list(dims)}")
        return dims

    def arange(self, start, end) -> tensor:
        start = self.constexpr_int(start, "arange's start")
        end = self.constexpr_int(end, "arange's end")
        n = end - start
        if n <= 0 or n & (n - 1):
            raise SemanticError(f"arange's length must be a power of 2, got {n} (from {start} to {end})")
        return self.emit(ops.MakeRangeOp(start, end, irt.tensor((n,), irt.i32)))

    def full(self, shape, value, dtype) -> tensor:
        shape = self.constexpr_shape(shape, "full's shape")
        elem = to_ir_type(dtype)
        if is_python_scalar(value):
            if math.isnan(float(unwrap(value))) and elem.is_int:
                raise SemanticError(f"cannot fill an {elem} tile with nan")
            return self.constant(unwrap(value), irt.tensor(shape, elem))
        value = self.to_tensor(value)
        if value.type.is_tensor:
            raise SemanticError(f"full's value must be a scalar, got shape {list(value.type.shape)}")
        return self.broadcast_to_shape(self.cast(value, elem), shape)


#: the most elements a tile may have (Triton's limit: larger tiles do not fit a program's registers or stack)
MAX_TILE_ELEMENTS = 2**20


def _check_tile_size(t) -> None:
    """Refuse a tile over ``MAX_TILE_ELEMENTS`` here, rather than crash the CPU target's stack at launch."""
    if isinstance(t, irt.TensorType) and t.numel > MAX_TILE_ELEMENTS:
        raise SemanticError(
            f"a tile of shape {list(t.shape)} has {t.numel} elements, over the limit of {MAX_TILE_ELEMENTS} "
            "(2**20, as in Triton); use smaller blocks over more programs"
        )
