"""The values a kernel's Python code handles while it is being compiled.

* ``dtype`` / ``pointer_type`` -- element types with Triton's names and methods
  (``tl.float32.is_floating()``, ``ptr.dtype.element_ty``); each wraps an IR type.
* ``constexpr`` -- a compile-time value; arithmetic between constexprs folds in Python,
  so ``BLOCK * 2`` is a plain number when the IR is built.
* ``tensor`` -- a tile (or a scalar) living in the IR: it wraps an SSA ``Value`` and
  sends every Python operator to the semantic layer (``x + 1`` becomes an
  ``arith.add`` after promotion and broadcasting).
* ``block_ptr`` -- what ``tl.make_block_ptr`` returns: base pointer, shape, strides,
  offsets and block shape, kept as separate values so it can be loop-carried.
"""

from __future__ import annotations

import functools
import inspect
import math
import operator

from ..ir import types as irt
from .dtype_facts import DtypeFacts
from .errors import SemanticError

_TRITON_NAMES = {
    "i1": "int1",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "f16": "fp16",
    "bf16": "bf16",
    "f32": "fp32",
    "f64": "fp64",
    "fp8e4nv": "fp8e4nv",
    "fp8e5": "fp8e5",
    "fp8e4b8": "fp8e4b8",
    "fp8e5b16": "fp8e5b16",
    "fp8e4b15": "fp8e4b15",
}


class dtype(DtypeFacts):
    """An element type of the ``tl`` language, e.g. ``tl.float32``; ``.ir`` is the IR type.

    >>> tl.float16.is_floating(), tl.float16.primitive_bitwidth
    (True, 16)
    """

    def __init__(self, ir):
        # Triton builds dtypes by name too: tl.dtype("int8")
        self.ir = irt.parse_type(unwrap(ir)) if isinstance(unwrap(ir), str) else ir

    @property
    def name(self) -> str:
        return _TRITON_NAMES[self.ir.name]

    @property
    def primitive_bitwidth(self) -> int:
        return self.ir.bits

    @property
    def int_bitwidth(self) -> int:
        return self.ir.bits

    @property
    def fp_mantissa_width(self) -> int:
        return self.ir.fp_mantissa_bits

    @property
    def scalar(self) -> dtype:
        return self

    def is_floating(self) -> bool:
        return self.ir.is_float

    def is_int(self) -> bool:
        return self.ir.is_int

    def is_int_signed(self) -> bool:
        return self.ir.is_signed

    def is_int_unsigned(self) -> bool:
        return self.ir.is_unsigned

    def is_bool(self) -> bool:
        return self.ir.is_bool

    def is_ptr(self) -> bool:
        return False

    def is_block(self) -> bool:
        return False

    def is_fp8(self) -> bool:
        return self.ir.is_fp8

    def is_fp16(self) -> bool:
        return self.ir.name == "f16"

    def is_bf16(self) -> bool:
        return self.ir.name == "bf16"

    def is_fp32(self) -> bool:
        return self.ir.name == "f32"

    def is_fp64(self) -> bool:
        return self.ir.name == "f64"

    def __eq__(self, other) -> bool:
        if isinstance(other, constexpr):
            other = other.value
        if isinstance(other, dtype):
            return self.ir == other.ir
        return isinstance(other, irt.Type) and self.ir == other

    def __hash__(self) -> int:
        return hash(self.ir)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"tl.{irt._TL_NAME.get(self.ir.name, self.ir.name)}"


class pointer_type(dtype):
    """The type of a pointer to ``element_ty`` elements: ``tl.pointer_type(tl.float32)``."""

    def __init__(self, element_ty, address_space: int = 1):
        element_ty = wrap_dtype(to_ir_type(element_ty))
        super().__init__(irt.PointerType(element_ty.ir, address_space))
        self.element_ty = element_ty

    @property
    def name(self) -> str:
        return f"pointer<{self.element_ty.name}>"

    @property
    def primitive_bitwidth(self) -> int:
        return 64

    def is_ptr(self) -> bool:
        return True

    def is_floating(self) -> bool:
        return False

    def is_int(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"tl.pointer_type({self.element_ty!r})"


class block_type(dtype):
    """``tl.block_type(element_ty, shape)``: a block of ``shape`` elements, what a block pointer points to.

    Casts take its element (``x.to(p.dtype.element_ty)`` for a block pointer ``p``), as Triton's do.
    """

    def __init__(self, element_ty, shape):
        element_ty = wrap_dtype(to_ir_type(element_ty))
        super().__init__(element_ty.ir)
        self.element_ty = element_ty
        self.shape = tuple(int(unwrap(d)) for d in shape)

    @property
    def name(self) -> str:
        return f"<{list(self.shape)}, {self.element_ty.name}>"

    @property
    def scalar(self) -> dtype:
        return self.element_ty

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def is_block(self) -> bool:
        return True

    def get_block_shapes(self) -> tuple:
        return self.shape

    def __eq__(self, other) -> bool:
        return isinstance(other, block_type) and (self.element_ty, self.shape) == (other.element_ty, other.shape)

    def __hash__(self) -> int:
        return hash((self.ir, self.shape))

    def __repr__(self) -> str:
        return f"tl.block_type({self.element_ty!r}, {list(self.shape)})"


def wrap_dtype(t) -> dtype:
    """The ``tl`` dtype for an IR scalar or pointer type (tensor types give their element)."""
    if isinstance(t, dtype):
        return t
    t = t.element if isinstance(t, irt.TensorType) else t
    if isinstance(t, irt.PointerType):
        return pointer_type(t.pointee, t.address_space)
    return dtype(t)


def to_ir_type(t):
    """The IR type behind a ``tl`` dtype, an IR type, a constexpr of one, or a name like ``"fp32"``."""
    if isinstance(t, constexpr):
        t = t.value
    if isinstance(t, dtype):
        return t.ir
    if isinstance(t, irt.Type):
        return t
    if isinstance(t, str):
        try:
            return irt.parse_type(t)
        except KeyError:
            pass
    raise SemanticError(f"expected a dtype, got {t!r}")


class constexpr:
    """A value known at compile time (``BLOCK: tl.constexpr``); operators fold in Python.

    >>> (constexpr(4) * 2).value
    8
    """

    def __init__(self, value):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self) -> str:
        return f"constexpr[{self.value!r}]"

    def __hash__(self) -> int:
        return hash(self.value)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __index__(self) -> int:
        return int(self.value)

    def __int__(self) -> int:
        return int(self.value)

    def __float__(self) -> float:
        return float(self.value)

    def __call__(self, *args, **kwargs):
        return self.value(*args, **kwargs)

    def __neg__(self):
        return constexpr(-self.value)

    def __pos__(self):
        return self

    def __invert__(self):
        return constexpr(~self.value)

    def __abs__(self):
        return constexpr(abs(self.value))


def _fold(op, reverse=False):
    def method(self, other):
        if isinstance(other, tensor):
            return NotImplemented
        other = other.value if isinstance(other, constexpr) else other
        a, b = (other, self.value) if reverse else (self.value, other)
        return constexpr(op(a, b))

    return method


def _install_constexpr_operators():
    o = operator
    table = {
        "add": o.add,
        "sub": o.sub,
        "mul": o.mul,
        "truediv": o.truediv,
        "floordiv": o.floordiv,
        "mod": o.mod,
        "pow": o.pow,
        "and": o.and_,
        "or": o.or_,
        "xor": o.xor,
        "lshift": o.lshift,
        "rshift": o.rshift,
    }
    for name, fn in table.items():
        setattr(constexpr, f"__{name}__", _fold(fn))
        setattr(constexpr, f"__r{name}__", _fold(fn, reverse=True))
    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        setattr(constexpr, f"__{name}__", _fold(getattr(o, name)))


_install_constexpr_operators()


def unwrap(v):
    """A constexpr's Python value; anything else unchanged."""
    return v.value if isinstance(v, constexpr) else v


class tensor:
    """A tile or scalar in the IR; Python operators on it emit IR through the semantic layer."""

    def __init__(self, handle, sem):
        self.handle = handle
        self._sem = sem

    # ------------------------------------------------------------ type facts
    @property
    def type(self):
        return self.handle.type

    @property
    def dtype(self) -> dtype:
        return wrap_dtype(self.handle.type)

    @property
    def shape(self) -> list[int]:
        return list(self.handle.type.shape)

    @property
    def numel(self) -> int:
        return self.handle.type.numel

    def __repr__(self) -> str:
        return f"tensor({self.handle.type})"

    def __bool__(self):
        raise SemanticError("a tensor's truth value is only known at run time; use it in `if`/`while` directly")

    def __iter__(self):
        raise SemanticError("a tensor cannot be iterated over in Python")

    def __index__(self):
        raise SemanticError("a tensor cannot be used where a compile-time integer is needed")

    # ------------------------------------------------------------ methods
    def to(self, dtype, bitcast=False, fp_downcast_rounding=None):
        return self._sem.cast(self, dtype, bitcast=unwrap(bitcast), rounding=unwrap(fp_downcast_rounding))

    @property
    def T(self):
        return self._sem.permute(self, None)

    def __getitem__(self, index):
        return self._sem.subscript(self, index)

    def __getattr__(self, name):
        method = None if name.startswith("_") else self._sem.tensor_methods.get(name)
        if method is None:
            raise AttributeError(f"tensor has no attribute {name!r}")
        return lambda *args, **kwargs: method(self._sem, self, *args, **kwargs)


def _binop(symbol, reverse=False):
    def method(self, other):
        return self._sem.binary(symbol, other, self) if reverse else self._sem.binary(symbol, self, other)

    return method


def _install_tensor_operators():
    symbols = {
        "add": "+",
        "sub": "-",
        "mul": "*",
        "truediv": "/",
        "floordiv": "//",
        "mod": "%",
        "pow": "**",
        "and": "&",
        "or": "|",
        "xor": "^",
        "lshift": "<<",
        "rshift": ">>",
    }
    for name, sym in symbols.items():
        setattr(tensor, f"__{name}__", _binop(sym))
        setattr(tensor, f"__r{name}__", _binop(sym, reverse=True))
    cmps = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
    for name, sym in cmps.items():
        setattr(tensor, f"__{name}__", _binop(sym))
    tensor.__hash__ = object.__hash__
    tensor.__neg__ = lambda self: self._sem.unary("-", self)
    tensor.__pos__ = lambda self: self
    tensor.__invert__ = lambda self: self._sem.unary("~", self)
    tensor.logical_and = lambda self, other: self._sem.logical("and", self, other)
    tensor.logical_or = lambda self, other: self._sem.logical("or", self, other)


_install_tensor_operators()


class block_ptr:
    """A block pointer: ``base`` plus per-dimension ``shape``, ``strides``, ``offsets``.

    ``shape``/``strides`` are i64 scalar tensors, ``offsets`` i32 scalar tensors;
    ``block_shape`` and ``order`` are Python tuples. Loads and stores through it are
    lowered to ordinary pointer tiles with masks (see ``semantic_memory``).
    """

    def __init__(self, base, shape, strides, offsets, block_shape, order):
        self.base = base
        self.shape = list(shape)
        self.strides = list(strides)
        self.offsets = list(offsets)
        self.block_shape = tuple(block_shape)
        self.order = tuple(order)

    def parts(self) -> list:
        """The runtime values, in a fixed order (for loop-carrying and branches)."""
        return [self.base, *self.shape, *self.strides, *self.offsets]

    def rebuild(self, parts: list) -> block_ptr:
        """A block pointer like this one, with ``parts`` (as from ``parts()``) as its values."""
        n = len(self.shape)
        return block_ptr(
            parts[0], parts[1 : 1 + n], parts[1 + n : 1 + 2 * n], parts[1 + 2 * n :], self.block_shape, self.order
        )

    @property
    def type(self) -> pointer_type:
        """A pointer to a ``block_type`` of ``block_shape`` elements (``p.dtype.element_ty`` names the element
        type a store through it expects, as in Triton)."""
        t = pointer_type(self.base.dtype.element_ty)
        t.element_ty = block_type(t.element_ty, self.block_shape)
        return t

    dtype = type

    def advance(self, offsets):
        return self.base._sem.advance(self, offsets)

    def __repr__(self) -> str:
        return f"block_ptr({self.base.type}, block_shape={list(self.block_shape)})"


class tensor_descriptor:
    """``tl.make_tensor_descriptor(base, shape, strides, block_shape)`` or a host ``TensorDescriptor`` argument.

    A view that loads and stores ``block_shape`` blocks at element offsets; out-of-bounds
    elements read as ``padding`` (zero or NaN) and are not written, as with a TMA descriptor.
    Each access is a block-pointer access with every dimension bounds-checked. ``shape`` and
    ``strides`` hold Python ints or scalar tensors; only the tensors are runtime ``parts``.
    Its loads and stores say what they go through (``LoadOp.descriptor``), so that a GPU may
    copy blocks with TMA; a ``host`` descriptor (a launch argument) is one the launch checked
    as Triton checks it (alignment, 16-byte strides).
    """

    def __init__(self, base, shape, strides, block_shape, padding="zero", host=False):
        self.base = base
        self.shape = list(shape)
        self.strides = list(strides)
        self.block_shape = list(block_shape)
        self.padding = padding
        self.host = host

    @property
    def dtype(self):
        return self.base.type.element.pointee

    def parts(self) -> list:
        """The runtime values (tensors), in a fixed order (for calls, loop-carrying and branches)."""
        return [v for v in (self.base, *self.shape, *self.strides) if isinstance(v, tensor)]

    def rebuild(self, parts: list) -> tensor_descriptor:
        """A descriptor like this one, with ``parts`` (as from ``parts()``) as its runtime values."""
        it = iter(parts)
        fields = [next(it) if isinstance(v, tensor) else v for v in (self.base, *self.shape, *self.strides)]
        n = len(self.shape)
        return tensor_descriptor(
            fields[0], fields[1 : 1 + n], fields[1 + n :], self.block_shape, self.padding, self.host
        )

    def _block_ptr(self, offsets):
        sem = self.base._sem
        offsets = list(unwrap(offsets))
        if len(offsets) != len(self.block_shape):
            raise SemanticError(f"a descriptor of rank {len(self.block_shape)} needs as many offsets, got {offsets}")
        order = tuple(reversed(range(len(self.block_shape))))
        return sem.make_block_ptr(self.base, self.shape, self.strides, offsets, self.block_shape, order)

    def load(self, offsets):
        checks = tuple(range(len(self.block_shape)))
        block = self._block_ptr(offsets)
        return self.base._sem.load(
            block,
            boundary_check=checks,
            padding_option=self.padding,
            descriptor=(self, block.offsets),
        )

    def store(self, offsets, value):
        sem = self.base._sem
        checks = tuple(range(len(self.block_shape)))
        value = sem.cast(sem.to_tensor(value), self.dtype)
        block = self._block_ptr(offsets)
        return sem.store(block, value, boundary_check=checks, descriptor=(self, block.offsets))

    def __repr__(self) -> str:
        return f"tensor_descriptor({self.base.type}, block_shape={self.block_shape})"


class range_spec:
    """``range(...)``, ``tl.range(...)`` or ``tl.static_range(...)`` in a ``for`` header.

    ``static`` loops are unrolled at compile time (their bounds must be constexpr);
    the others become one ``scf.for`` with the given pipelining hints.
    """

    static = False

    def __init__(self, arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None, **hints):
        start, end = (0, arg1) if arg2 is None else (arg1, arg2)
        self.start, self.end = start, end
        self.step = 1 if step is None else step
        self.num_stages = unwrap(num_stages)
        self.loop_unroll_factor = unwrap(loop_unroll_factor)
        self.hints = {k: unwrap(v) for k, v in hints.items()}


class static_range_spec(range_spec):
    """``tl.static_range``: a loop unrolled at compile time."""

    static = True


def builtin(fn):
    """Mark ``fn`` as a ``tl`` builtin: the code generator calls it with ``_semantic=``.

    Called from plain Python (outside a kernel being compiled) it raises a clear error.
    """
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args, _semantic=None, **kwargs):
        if _semantic is None:
            raise RuntimeError(f"tl.{fn.__name__} can only be called inside a @jit kernel")
        try:
            signature.bind(*args, _semantic=_semantic, **kwargs)
        except TypeError as e:
            raise SemanticError(f"wrong arguments for tl.{fn.__name__}: {e}") from None
        return fn(*args, _semantic=_semantic, **kwargs)

    wrapper.__tilelab_builtin__ = True
    return wrapper


def is_builtin(obj) -> bool:
    return getattr(obj, "__tilelab_builtin__", False) is True


def device_function(fn):
    """Mark a plain Python function written in the ``tl`` language as callable from kernels.

    The library (``tl.sigmoid``, ``tl.rand``...) uses it where a user would write
    ``@triton.jit``: the code generator compiles the function like any ``@jit`` callee.
    """
    fn._tilelab_fn = fn
    return fn
