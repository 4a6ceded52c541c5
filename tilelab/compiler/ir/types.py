"""Types of the tile IR.

Three kinds of type exist:

* ``ScalarType`` -- one element: ``i1 i8 i16 i32 i64 u8 u16 u32 u64 f16 bf16 f32 f64
  fp8e4nv fp8e5 fp8e4b8 fp8e5b16 fp8e4b15``;
* ``PointerType`` -- an address of elements of a scalar type (``!ptr<f32>``);
* ``TensorType`` -- a tile: a shape (every dimension a power of two) of scalars or
  pointers, and an optional layout that the GPU passes attach
  (``tensor<128x64xf16>``).

Types are immutable and interned: compare them with ``==`` or ``is``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache, cached_property

import numpy as np


@cache
def ml_dtypes_module():
    """The ``ml_dtypes`` package (numpy's bf16 and fp8 types), imported on first use, or ``None``.

    Why lazily: importing it costs more than importing the rest of tilelab (its extension
    registers dozens of numpy casts and ufuncs), and most kernels never touch those types.
    """
    try:
        import ml_dtypes
    except ImportError:  # pragma: no cover - ml_dtypes is a dependency
        return None
    return ml_dtypes


class Type:
    """Base class of every IR type."""

    is_scalar = False
    is_pointer = False
    is_tensor = False

    @property
    def element(self) -> Type:
        """The element type: itself for scalars and pointers."""
        return self

    @property
    def shape(self) -> tuple[int, ...]:
        return ()

    @property
    def scalar(self) -> ScalarType:
        """The scalar type of the elements (pointers have none: raises)."""
        elem = self.element
        if not isinstance(elem, ScalarType):
            raise TypeError(f"{self} has no scalar element type")
        return elem

    @property
    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1


@dataclass(frozen=True)
class ScalarType(Type):
    """An element type: ``kind`` is 'int', 'uint', 'float' or 'bool'."""

    name: str
    kind: str
    bits: int

    is_scalar = True

    def __str__(self) -> str:
        return self.name

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint", "bool")

    @property
    def is_signed(self) -> bool:
        return self.kind == "int"

    @property
    def is_unsigned(self) -> bool:
        return self.kind in ("uint", "bool")

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def is_fp8(self) -> bool:
        return self.kind == "float" and self.bits == 8

    @property
    def is_narrow_float(self) -> bool:
        """bf16 and the fp8 formats: floats numpy lacks, held as raw bits by the backends."""
        return self.name in NARROW_FLOATS

    @property
    def exponent_bias(self) -> int:
        return _BIAS[self.name]

    @property
    def itemsize(self) -> int:
        return max(1, self.bits // 8)

    @property
    def fp_mantissa_bits(self) -> int:
        return _MANTISSA[self.name]

    @cached_property
    def np_dtype(self) -> np.dtype:
        """The numpy dtype that holds this type on the host."""
        if self.name in NO_NUMPY:
            raise TypeError(self.numpy_lacks)
        return np.dtype(_NUMPY[self.name]())

    @property
    def numpy_lacks(self) -> str:
        """Why a type of ``NO_NUMPY`` has no ``np_dtype``, and where it runs instead."""
        return (
            f"tl.{_TL_NAME[self.name]} has no numpy type: the interpreter cannot run it (the cpu and cuda targets "
            "can), and the host sees its raw bits"
        )

    @property
    def has_numpy(self) -> bool:
        return self.name not in NO_NUMPY

    @cached_property
    def host_dtype(self) -> np.dtype:
        """The numpy dtype of this type's memory on the host: ``np_dtype``, or its raw bits where there is none."""
        return self.np_dtype if self.has_numpy else np.dtype(f"uint{self.bits}")

    def decode(self, bits: np.ndarray) -> np.ndarray:
        """f32 values of the raw bits of an 8-bit float (every one of its 256 codes, through a table)."""
        if self.name not in _DECODED:
            codes = [_decode_narrow(c, *NARROW_FLOATS[self.name]) for c in range(256)]
            _DECODED[self.name] = np.array(codes, np.float32)
        return _DECODED[self.name][np.asarray(bits, np.uint8)]

    def float_bits(self, value: float) -> int:
        """The bits of ``value`` rounded to nearest-even in this float type: ``bf16.float_bits(1.0) == 0x3F80``.

        Too large a value becomes infinity, or NaN in ``fp8e4nv``, which has no infinity. bf16 and fp8 are
        rounded here, not through ``ml_dtypes``, so that compiling a kernel with such a constant does not
        import that package (most of a second).
        """
        return self._round(value)[0]

    def rounded(self, value: float) -> float:
        """``value`` rounded to nearest-even in this float type, as a Python float: ``bf16.rounded(1.003) == 1.0``."""
        return self._round(value)[1]

    def _round(self, value: float) -> tuple[int, float]:
        if self.name in NARROW_FLOATS:
            return _round_narrow(float(value), *NARROW_FLOATS[self.name])
        with np.errstate(over="ignore", invalid="ignore"):
            x = np.asarray(value, dtype=np.float64).astype(self.np_dtype)
        return int(x.view(f"u{self.itemsize}")), float(x)

    def __repr__(self) -> str:
        return f"tl.{_TL_NAME.get(self.name, self.name)}"


@dataclass(frozen=True)
class PointerType(Type):
    """A pointer to elements of ``pointee`` in ``address_space`` (1 = global)."""

    pointee: Type
    address_space: int = 1

    is_pointer = True

    def __str__(self) -> str:
        return f"!ptr<{self.pointee}>"

    @property
    def itemsize(self) -> int:
        return 8

    # Triton spells the pointee ``element_ty``
    @property
    def element_ty(self) -> Type:
        return self.pointee


@dataclass(frozen=True)
class TensorType(Type):
    """A tile of ``element`` (scalar or pointer) with a static ``dims`` shape."""

    dims: tuple[int, ...]
    elem: Type
    layout: object = None

    is_tensor = True

    def __str__(self) -> str:
        dims = "x".join(str(d) for d in self.dims)
        lay = f", {self.layout}" if self.layout is not None else ""
        return f"tensor<{dims}x{self.elem}{lay}>"

    @property
    def element(self) -> Type:
        return self.elem

    @property
    def shape(self) -> tuple[int, ...]:
        return self.dims

    def with_element(self, elem: Type) -> TensorType:
        return TensorType(self.dims, elem, self.layout)

    def with_layout(self, layout: object) -> TensorType:
        return TensorType(self.dims, self.elem, layout)


def _ml(name: str):
    def get():
        ml_dtypes = ml_dtypes_module()
        if ml_dtypes is None:
            raise TypeError(f"the {name} dtype needs the ml_dtypes package")
        return getattr(ml_dtypes, name)

    return get


_NUMPY = {
    "i1": lambda: np.bool_,
    "i8": lambda: np.int8,
    "i16": lambda: np.int16,
    "i32": lambda: np.int32,
    "i64": lambda: np.int64,
    "u8": lambda: np.uint8,
    "u16": lambda: np.uint16,
    "u32": lambda: np.uint32,
    "u64": lambda: np.uint64,
    "f16": lambda: np.float16,
    "bf16": _ml("bfloat16"),
    "f32": lambda: np.float32,
    "f64": lambda: np.float64,
    "fp8e4nv": _ml("float8_e4m3fn"),
    "fp8e5": _ml("float8_e5m2"),
    "fp8e4b8": _ml("float8_e4m3fnuz"),
    "fp8e5b16": _ml("float8_e5m2fnuz"),
}

#: The float types numpy lacks: exponent bits, mantissa bits, exponent bias, and what the codes at the top mean.
#: ``ieee``: the all-ones exponent is infinity (mantissa 0) or NaN; ``fn`` (finite): only the all-ones codes
#: ``x1111111`` are NaN, no infinity; ``fnuz`` (finite, unsigned zero): every code but ``0x80`` is a number,
#: ``0x80`` (negative zero elsewhere) is the one NaN, no infinity, and -0.0 encodes as +0.
NARROW_FLOATS = {
    "bf16": (8, 7, 127, "ieee"),
    "fp8e4nv": (4, 3, 7, "fn"),  # float8_e4m3fn: largest 448
    "fp8e5": (5, 2, 15, "ieee"),  # float8_e5m2: largest 57344
    "fp8e4b8": (4, 3, 8, "fnuz"),  # float8_e4m3fnuz (AMD): largest 240
    "fp8e5b16": (5, 2, 16, "fnuz"),  # float8_e5m2fnuz (AMD): largest 57344
    "fp8e4b15": (4, 3, 15, "fn"),  # Triton's fp8 for GPUs before sm_89: largest 1.75; no numpy type
}

#: Types numpy (with ml_dtypes) has no type for: the host holds their raw bits (``host_dtype``), the compiled
#: backends compute with them, the numpy interpreter cannot.
NO_NUMPY = {"fp8e4b15"}

_MANTISSA = {"f16": 10, "f32": 23, "f64": 52, **{name: f[1] for name, f in NARROW_FLOATS.items()}}
_BIAS = {"f16": 15, "f32": 127, "f64": 1023, **{name: f[2] for name, f in NARROW_FLOATS.items()}}


_DECODED: dict[str, np.ndarray] = {}


def _decode_narrow(code: int, exp_bits: int, man_bits: int, bias: int, style: str) -> float:
    """The value of an 8-bit float's ``code`` (``NARROW_FLOATS``' formats)."""
    top = 1 << (exp_bits + man_bits)
    sign = -1.0 if code & top else 1.0
    e, m = (code >> man_bits) & ((1 << exp_bits) - 1), code & ((1 << man_bits) - 1)
    ones = (1 << exp_bits) - 1
    if style == "fnuz" and code == top or style == "fn" and code & (top - 1) == top - 1:
        return math.nan
    if style == "ieee" and e == ones:
        return sign * math.inf if m == 0 else math.nan
    if e == 0:
        return sign * math.ldexp(m, 1 - bias - man_bits)
    return sign * math.ldexp((1 << man_bits) + m, e - bias - man_bits)


def top_codes(exp_bits: int, man_bits: int, style: str) -> tuple[int, int, int]:
    """``(largest finite, past the largest, NaN)`` codes, unsigned, of a ``NARROW_FLOATS`` format."""
    top = 1 << (exp_bits + man_bits)
    if style == "fnuz":
        return top - 1, top, top
    if style == "fn":
        return top - 2, top - 1, top - 1
    inf = ((1 << exp_bits) - 1) << man_bits
    return inf - 1, inf, inf | 1 << (man_bits - 1)


def _round_narrow(x: float, exp_bits: int, man_bits: int, bias: int, style: str) -> tuple[int, float]:
    """``(bits, value)`` of ``x`` rounded once, to nearest-even, into a float of these widths (``NARROW_FLOATS``).

    ``x / 2**(e - man_bits)`` is exact (a power-of-two scale), so Python's ``round`` (ties to even)
    does the rounding; subnormals keep the smallest exponent, as the formats do. Past the largest
    finite value: infinity (``ieee``) or NaN.
    """
    top = 1 << (exp_bits + man_bits)
    sign = top if math.copysign(1.0, x) < 0 else 0
    largest_code, over_code, nan_code = top_codes(exp_bits, man_bits, style)
    nan = sign | nan_code  # (fnuz: the sign bit is the NaN's own)
    overflow = (sign | over_code, math.copysign(math.inf, x)) if style == "ieee" else (nan, math.nan)
    if math.isnan(x):
        return nan, math.nan
    if math.isinf(x):
        return overflow
    emin = 1 - bias
    e_top, m_top = largest_code >> man_bits, largest_code & ((1 << man_bits) - 1)
    largest = math.ldexp((1 << man_bits) + m_top, e_top - bias - man_bits)  # e4m3fn: 448
    e = max(math.frexp(abs(x))[1] - 1, emin)
    n = round(math.ldexp(abs(x), man_bits - e))
    value = math.ldexp(n, e - man_bits)
    if value > largest:
        return overflow
    if n >> (man_bits + 1):  # rounded up to the next power of two
        n, e = n >> 1, e + 1
    if style == "fnuz" and n == 0:
        sign = 0  # no negative zero: its code is the NaN
    if n < 1 << man_bits:  # subnormal (or zero): exponent field 0
        return sign | n, math.copysign(value, -1.0 if sign else 1.0)
    return sign | (e + bias) << man_bits | (n - (1 << man_bits)), math.copysign(value, x)


_TL_NAME = {
    "i1": "int1",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "fp8e4nv": "float8e4nv",
    "fp8e5": "float8e5",
    "fp8e4b8": "float8e4b8",
    "fp8e5b16": "float8e5b16",
    "fp8e4b15": "float8e4b15",
}

i1 = ScalarType("i1", "bool", 1)
i8 = ScalarType("i8", "int", 8)
i16 = ScalarType("i16", "int", 16)
i32 = ScalarType("i32", "int", 32)
i64 = ScalarType("i64", "int", 64)
u8 = ScalarType("u8", "uint", 8)
u16 = ScalarType("u16", "uint", 16)
u32 = ScalarType("u32", "uint", 32)
u64 = ScalarType("u64", "uint", 64)
f16 = ScalarType("f16", "float", 16)
bf16 = ScalarType("bf16", "float", 16)
f32 = ScalarType("f32", "float", 32)
f64 = ScalarType("f64", "float", 64)
fp8e4nv = ScalarType("fp8e4nv", "float", 8)
fp8e5 = ScalarType("fp8e5", "float", 8)
fp8e4b8 = ScalarType("fp8e4b8", "float", 8)
fp8e5b16 = ScalarType("fp8e5b16", "float", 8)
fp8e4b15 = ScalarType("fp8e4b15", "float", 8)


SCALARS: dict[str, ScalarType] = {
    t.name: t
    for t in (
        i1,
        i8,
        i16,
        i32,
        i64,
        u8,
        u16,
        u32,
        u64,
        f16,
        bf16,
        f32,
        f64,
        fp8e4nv,
        fp8e5,
        fp8e4b8,
        fp8e5b16,
        fp8e4b15,
    )
}

#: Spellings accepted in signatures (``"*fp32"``, ``"i32"``) mapped to IR scalar names.
SIGNATURE_ALIASES: dict[str, str] = {
    "fp16": "f16",
    "fp32": "f32",
    "fp64": "f64",
    "bf16": "bf16",
    "int1": "i1",
    "bool": "i1",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "float16": "f16",
    "float32": "f32",
    "float64": "f64",
    "bfloat16": "bf16",
    "fp8e4nv": "fp8e4nv",
    "fp8e5": "fp8e5",
    "float8e4nv": "fp8e4nv",
    "float8e5": "fp8e5",
    "fp8e4b8": "fp8e4b8",
    "fp8e5b16": "fp8e5b16",
    "float8e4b8": "fp8e4b8",
    "float8e5b16": "fp8e5b16",
    "fp8e4b15": "fp8e4b15",
    "float8e4b15": "fp8e4b15",
}


def scalar_from_name(name: str) -> ScalarType:
    """``"fp32"``, ``"f32"`` or ``"float32"`` -> ``f32``; raises ``KeyError`` otherwise."""
    return SCALARS[SIGNATURE_ALIASES.get(name, name)]


def parse_type(text: str) -> Type:
    """Parse a signature type: ``"*fp32"`` (pointer), ``"i32"``, ``"*i8"``."""
    text = text.strip()
    if text.startswith("*"):
        return PointerType(parse_type(text[1:]))
    return scalar_from_name(text)


def scalar_from_numpy(dtype: np.dtype) -> ScalarType:
    """The IR scalar type of a numpy dtype (bf16 and fp8 through ml_dtypes)."""
    dtype = np.dtype(dtype)
    from_ml = dtype.type.__module__.startswith("ml_dtypes")
    for t in SCALARS.values():
        if (_NUMPY[t.name].__qualname__.startswith("_ml")) != from_ml:
            continue  # numpy's own dtypes never import ml_dtypes
        try:
            if t.np_dtype == dtype:
                return t
        except TypeError:
            continue
    raise KeyError(f"no tilelab dtype for numpy dtype {dtype}")


def tensor(shape, elem: Type) -> Type:
    """``TensorType`` of ``shape``, or ``elem`` itself when ``shape`` is empty."""
    shape = tuple(int(d) for d in shape)
    return TensorType(shape, elem) if shape else elem
