"""How tile IR types are spelled in LLVM (by the CPU and GPU backends alike), and the bf16 bit tricks.

Every IR scalar has a *register* type (what an LLVM value of it is) and a *memory*
type (what one element occupies in a buffer or an array):

| IR | register | memory |
|---|---|---|
| i1 | i1 | i8 (numpy bools are bytes) |
| i8 … u64 | iN (signedness lives in the ops) | iN |
| f16, f32, f64 | half, float, double | same |
| bf16 | i16 (the raw bits: LLVM's bfloat is not portable) | i16 |
| fp8e4nv, fp8e5, fp8e4b8, fp8e5b16, fp8e4b15 | i8 (the raw bits, fp8.py) | i8 |
| pointers | ptr | ptr |

bf16 and fp8 arithmetic widens to f32, computes, and rounds back to nearest even,
which is what numpy does with ml_dtypes: ``bf16(a) + bf16(b) == bf16(f32(a) + f32(b))``.
"""

from __future__ import annotations

from llvmlite import ir

from tilelab.compiler.ir.types import ScalarType, Type

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F32 = ir.FloatType()
F64 = ir.DoubleType()
PTR = ir.PointerType()

_REGISTER = {
    "i1": I1,
    "i8": I8,
    "i16": I16,
    "i32": I32,
    "i64": I64,
    "u8": I8,
    "u16": I16,
    "u32": I32,
    "u64": I64,
    "f16": ir.HalfType(),
    "bf16": I16,
    "f32": F32,
    "f64": F64,
    "fp8e4nv": I8,
    "fp8e5": I8,
    "fp8e4b8": I8,
    "fp8e5b16": I8,
    "fp8e4b15": I8,
}


class UnsupportedType(Exception):
    """A type the CPU backend cannot lower."""


def register_type(t: Type) -> ir.Type:
    """The LLVM type of one value of element type ``t`` (``i1`` for bools)."""
    if t.is_pointer:
        return PTR
    try:
        return _REGISTER[t.name]
    except KeyError:
        raise UnsupportedType(f"the CPU backend does not support {t} values yet") from None


def memory_type(t: Type) -> ir.Type:
    """The LLVM type of one element in memory (``i8`` for bools)."""
    return I8 if (t.is_scalar and t.is_bool) else register_type(t)


def is_bf16(t: Type) -> bool:
    return isinstance(t, ScalarType) and t.name == "bf16"


def is_soft_float(t: Type) -> bool:
    """Floats held as raw bits and computed in f32: bf16 and the fp8 formats."""
    return isinstance(t, ScalarType) and t.is_narrow_float


def soft_to_f32(lw, x: ir.Value, t: Type) -> ir.Value:
    """Widen the bits of a bf16 / fp8 value to f32 (exact)."""
    if is_bf16(t):
        return bf16_to_f32(lw.b, x)
    from .fp8 import fp8_to_f32  # here: fp8.py builds on this module

    return fp8_to_f32(lw, x, t.name)


def f32_to_soft(lw, x: ir.Value, t: Type, rounding: str = "rtne") -> ir.Value:
    """Round an f32 to the bits of a bf16 / fp8 value (one instruction where the backend has it)."""
    native = getattr(lw, "native_narrow", None)
    fast = native(x, t, rounding) if native is not None else None
    if fast is not None:
        return fast
    if is_bf16(t):
        return f32_to_bf16(lw.b, x, rounding)
    from .fp8 import f32_to_fp8  # here: fp8.py builds on this module

    return f32_to_fp8(lw, x, t.name, rounding)


def bf16_to_f32(b: ir.IRBuilder, bits: ir.Value) -> ir.Value:
    """Widen bf16 bits to f32: the bits become the high half of the f32."""
    return b.bitcast(b.shl(b.zext(bits, I32), ir.Constant(I32, 16)), F32)


def f32_to_bf16(b: ir.IRBuilder, x: ir.Value, rounding: str = "rtne") -> ir.Value:
    """Round f32 to bf16 bits: to nearest even (``x + 0x7fff + lsb``), NaN stays a quiet NaN.

    ``rounding == "rtz"`` drops the low half instead.
    """
    bits = b.bitcast(x, I32)
    if rounding != "rtz":
        lsb = b.and_(b.lshr(bits, ir.Constant(I32, 16)), ir.Constant(I32, 1))
        bits = b.add(bits, b.add(lsb, ir.Constant(I32, 0x7FFF)))
    rounded = b.trunc(b.lshr(bits, ir.Constant(I32, 16)), I16)
    is_nan = b.fcmp_unordered("uno", x, x)
    return b.select(is_nan, ir.Constant(I16, 0x7FC0), rounded)


def arith_type(t: Type) -> ir.Type:
    """The LLVM type arithmetic on ``t`` runs in (f32 for bf16 and fp8)."""
    return F32 if is_soft_float(t) else register_type(t)
