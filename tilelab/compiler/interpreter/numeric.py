"""Numeric helpers of the interpreter: dtypes of IR types, wrapping ints, casts.

These are the numeric rules the interpreter shares with the compiled backends, in
numpy. Integers wrap (two's complement) like the hardware; floats narrow with
round-to-nearest-even (numpy for f16, ml_dtypes for bf16 and fp8); floats become
ints by truncating toward zero, saturating at the type's range with NaN giving 0 (what
``cvt.rzi`` does on NVIDIA GPUs).
"""

from __future__ import annotations

import numpy as np

from ..ir.types import PointerType, ScalarType, Type

POINTER_DTYPE = np.dtype(np.int64)


def dtype_of(type: Type) -> np.dtype:
    """The numpy dtype holding elements of ``type`` (int64 addresses for pointers)."""
    elem = type.element
    return POINTER_DTYPE if isinstance(elem, PointerType) else elem.np_dtype


def unsigned_dtype(bits: int) -> np.dtype:
    """The unsigned numpy integer of ``bits`` bits (``bits`` 8, 16, 32 or 64)."""
    return np.dtype(f"uint{bits}")


def wrap_scalar(value, dtype: np.dtype):
    """``value`` (a Python number) as a 0-d array of ``dtype``; ints wrap to its width.

    >>> int(wrap_scalar(2**32 - 1, np.dtype(np.int32)))
    -1
    """
    if isinstance(value, (bool, np.bool_)) or dtype.kind not in "iu":
        return np.asarray(value).astype(dtype)
    bits = dtype.itemsize * 8
    return np.asarray(int(value) % (1 << bits), dtype=unsigned_dtype(bits)).view(dtype)


def constant(value, type: Type) -> np.ndarray:
    """The value of a ``ConstantOp``: a scalar, or a tile filled with ``value``."""
    scalar = wrap_scalar(value, dtype_of(type))
    return np.full(type.shape, scalar, dtype=scalar.dtype) if type.shape else scalar


def is_float(type: Type) -> bool:
    elem = type.element
    return isinstance(elem, ScalarType) and elem.is_float


def compute_dtype(type: Type) -> np.dtype:
    """The float dtype math runs in: f64 for f64, f32 for every narrower float."""
    return np.dtype(np.float64) if type.element.name == "f64" else np.dtype(np.float32)


def cast(x, src: Type, dst: Type, rounding: str = "rtne"):
    """Convert ``x`` of element type ``src`` to element type ``dst`` (see module doc)."""
    src, dst = src.element, dst.element
    out_dtype = dtype_of(dst)
    x = np.asarray(x)
    if isinstance(src, PointerType) or isinstance(dst, PointerType):
        return x.astype(out_dtype)
    if dst.is_bool:
        return x != 0
    if src.is_float and dst.is_float:
        return _float_to_float(x, dst, rounding)
    if src.is_float:
        return _float_to_int(x, out_dtype)
    if dst.is_float and dst.np_dtype.kind != "f":  # bf16 and fp8 come from a wide float: rounded once
        x = _int64_to_odd_f64(x) if x.dtype.itemsize == 8 else x.astype(np.float64)
    return x.astype(out_dtype)


def _int64_to_odd_f64(x: np.ndarray) -> np.ndarray:
    """64-bit integers to f64 rounded to odd, so that the narrow float's rounding after it is the only one.

    The halves are exact in f64; their sum rounds once and TwoSum gives its error exactly. An
    inexact sum with an even last bit moves one ulp toward the error: the odd neighbour on the
    integer's side (``+ 0`` to nearest would tie-break a second time: 2**60 + 2**52 + 1 would go
    to 2**60 in bf16, not to 2**60 + 2**53).
    """
    hi = (x >> 32).astype(np.float64) * 2.0**32
    lo = (x & np.asarray(0xFFFFFFFF, x.dtype)).astype(np.float64)
    total = hi + lo
    b = total - hi
    err = (hi - (total - b)) + (lo - b)
    bits = total.view(np.int64)
    away = (total < 0) == (err < 0)
    odd = (bits + np.where(away, 1, -1)).view(np.float64)
    return np.where((err != 0) & (bits & 1 == 0), odd, total)


def _float_to_int(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    wide = x.astype(np.float64)
    wide = np.where(np.isnan(wide), 0.0, np.trunc(wide))
    big = wide >= float(info.max)  # float(max) may round up: pick the exact max there
    out = np.clip(wide, float(info.min), float(info.max)).astype(dtype)
    return np.where(big, np.asarray(info.max, dtype), out)


def _float_to_float(x: np.ndarray, dst: ScalarType, rounding: str) -> np.ndarray:
    out = x.astype(dst.np_dtype)
    if rounding != "rtz" or out.dtype.itemsize >= x.dtype.itemsize:
        return out
    exact = x.astype(np.float64)
    rounded = out.astype(np.float64)
    away = np.isfinite(exact) & (np.abs(rounded) > np.abs(exact))
    if not away.any():
        return out
    toward_zero = np.nextafter(out, np.zeros_like(out))
    return np.where(away, toward_zero, out)


def round_to_tf32(x: np.ndarray) -> np.ndarray:
    """f32 values rounded to tf32 (10 mantissa bits, nearest even), still stored as f32."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    finite = np.isfinite(x)
    rounded = (bits + np.uint32(0xFFF) + ((bits >> np.uint32(13)) & np.uint32(1))) & np.uint32(0xFFFFE000)
    return np.where(finite, rounded, bits).view(np.float32)
