"""Value conversions between element types (``tt.cast``), for every LLVM backend.

Rules (the interpreter's, which follow numpy ``astype``):

* to ``i1``: ``x != 0`` (NaN is true);
* int -> int: truncate, or widen with sign extension for signed sources;
* float -> int: truncate toward zero; out-of-range values saturate (never undefined);
* float -> float: widen exactly; narrow to nearest even (``fptrunc``), or toward zero
  when ``rounding == "rtz"``; bf16 and fp8 narrow with bit arithmetic;
* pointer <-> i64: the address.

    y = convert(lw, x, f32, i32)     # fptosi.sat: 3.7 -> 3, 1e10 -> 2147483647
"""

from __future__ import annotations

from llvmlite import ir

from ..common.types import F32, F64, I64, f32_to_soft, is_soft_float, register_type, soft_to_f32
from .scalars import intrinsic


def _float_bits(t: ir.Type) -> int:
    return {"half": 16, "float": 32, "double": 64}[str(t)]


def _to_bool(b, x, src):
    if src.is_float:
        return b.fcmp_unordered("!=", x, ir.Constant(x.type, 0.0))
    return b.icmp_unsigned("!=", x, ir.Constant(x.type, 0))


def _int_to_int(b, x, src, dst_t):
    if x.type.width > dst_t.width:
        return b.trunc(x, dst_t)
    if x.type.width < dst_t.width:
        return b.sext(x, dst_t) if src.is_signed else b.zext(x, dst_t)
    return x


def _float_to_int(lw, x, dst):
    dst_t = register_type(dst)
    native = getattr(lw, "native_float_to_int", None)  # a GPU's one saturating conversion, where it has one
    y = native(x, dst_t, dst.is_signed) if native is not None else None
    if y is not None:
        return y
    sat = "fptosi.sat" if dst.is_signed else "fptoui.sat"
    src_name = {"half": "f16", "float": "f32", "double": "f64"}[str(x.type)]
    name = f"llvm.{sat}.{dst_t}.{src_name}"
    y = lw.b.call(lw.function(name, dst_t, [x.type]), [x])
    if getattr(lw, "nan_to_int_is_zero", False):
        return y
    # NaN -> 0, as ``fptosi.sat`` defines (GPU targets' lowerings keep it: ``nan_to_int_is_zero``); said again
    # with a select because an AVX-512 FP16 CPU's lowering of the f16 -> i16 case gave -32768 (fuzzer seed 604515)
    return lw.b.select(lw.b.fcmp_unordered("uno", x, x), ir.Constant(dst_t, 0), y)


def _narrow_rtz(lw, x, dst_t):
    """``fptrunc`` toward zero: round to nearest, then step back one ulp if that grew |x|."""
    b = lw.b
    y = b.fptrunc(x, dst_t)
    grew = b.fcmp_ordered(">", intrinsic(lw, "fabs", b.fpext(y, x.type)), intrinsic(lw, "fabs", x))
    finite = b.fcmp_ordered("<", intrinsic(lw, "fabs", x), ir.Constant(x.type, float("inf")))
    it = ir.IntType(_float_bits(dst_t))
    stepped = b.bitcast(b.sub(b.bitcast(y, it), ir.Constant(it, 1)), dst_t)
    return b.select(b.and_(grew, finite), stepped, y)


def _round_to_odd_f32(lw, x):
    """f64 -> f32 rounded to odd: toward zero, then the last bit set when that was inexact.

    Why: LLVM lowers ``fptrunc double to half`` to a call of a runtime helper
    (``__truncdfhf2``) that the JIT does not link (a call through a null pointer). Going
    through f32 rounded to odd and then rounding f32 -> f16 gives the correctly rounded
    result (f32 keeps more than f16's 11 + 2 bits), with no double rounding.
    """
    b = lw.b
    y = _narrow_rtz(lw, x, F32)
    inexact = b.zext(b.fcmp_unordered("!=", b.fpext(y, x.type), x), ir.IntType(32))
    return b.bitcast(b.or_(b.bitcast(y, ir.IntType(32)), inexact), F32)


def _float_to_float(lw, x, src, dst, rounding):
    b = lw.b
    if is_soft_float(src):
        x = soft_to_f32(lw, x, src)
    if is_soft_float(dst):
        x = b.fpext(x, F32) if _float_bits(x.type) < 32 else x
        if _float_bits(x.type) > 32:  # f64: one rounding in all (to odd, then to the soft type)
            x = _narrow_rtz(lw, x, F32) if rounding == "rtz" else _to_odd_f32(lw, x)
        return f32_to_soft(lw, x, dst, rounding)
    dst_t = register_type(dst)
    src_bits, dst_bits = _float_bits(x.type), _float_bits(dst_t)
    if src_bits < dst_bits:
        return b.fpext(x, dst_t)
    if src_bits == 64 and dst_bits == 16:
        x = _narrow_rtz(lw, x, F32) if rounding == "rtz" else _round_to_odd_f32(lw, x)
    if src_bits > dst_bits:
        if src_bits == 64 and dst_bits == 16:  # no instruction: LLVM calls __truncdfhf2, absent from the process
            x = _narrow_rtz(lw, x, F32) if rounding == "rtz" else _to_odd_f32(lw, x)
        return _narrow_rtz(lw, x, dst_t) if rounding == "rtz" else b.fptrunc(x, dst_t)
    return x


def _to_odd_f32(lw, x):
    """``x`` (f64) to f32 rounded to odd: toward zero, with the lowest bit set when inexact.

    Why: f64 -> f16 has no instruction, and f64 -> f32 -> f16 rounding to nearest twice can
    round wrongly; rounding to odd first keeps the final rounding to nearest correct (f32
    carries 13 more bits than f16). Toward zero composes with itself, so rtz needs no trick.
    """
    b = lw.b
    y = _narrow_rtz(lw, x, F32)
    inexact = b.fcmp_unordered("!=", b.fpext(y, x.type), x)
    bits = b.bitcast(y, ir.IntType(32))
    return b.bitcast(b.or_(bits, b.zext(inexact, ir.IntType(32))), F32)


def _int_to_float(lw, x, src, dst):
    """An integer to a float, rounded once to nearest even.

    To bf16 / fp8 the integer goes through f64, exact up to 53 bits, then down as an f64 does
    (``_float_to_float``: to odd, then to the narrow type). Through f32 it would round twice: the
    int32 1094713352 is the f32 1094713344, exactly between two bf16 values, which then ties to
    even the wrong way. A 64-bit integer rounds to f64 to odd first (``_int64_to_odd_f64``).
    """
    b = lw.b
    if is_soft_float(dst):
        if x.type.width > 53:
            y = _int64_to_odd_f64(lw, x, src.is_signed)
        else:
            y = b.sitofp(x, F64) if src.is_signed else b.uitofp(x, F64)
        return _float_to_float(lw, y, src, dst, "rtne")
    wide = register_type(dst)
    return b.sitofp(x, wide) if src.is_signed else b.uitofp(x, wide)


def _int64_to_odd_f64(lw, x, signed: bool):
    """A 64-bit integer to f64 rounded to odd: the nearest f64 toward zero, its lowest bit set when inexact.

    The two 32-bit halves are exact in f64; their sum rounds once, and TwoSum gives that
    rounding's error exactly. An inexact even sum moves one ulp toward the error (which
    makes it the odd neighbour on the integer's side).
    """
    b = lw.b
    i32 = ir.IntType(32)
    hi = b.ashr(x, ir.Constant(I64, 32)) if signed else b.lshr(x, ir.Constant(I64, 32))
    hi = b.fmul(b.sitofp(hi, F64) if signed else b.uitofp(hi, F64), ir.Constant(F64, 2.0**32))
    lo = b.uitofp(b.zext(b.trunc(x, i32), I64), F64)
    s = b.fadd(hi, lo)
    bb = b.fsub(s, hi)
    err = b.fadd(b.fsub(hi, b.fsub(s, bb)), b.fsub(lo, bb))  # TwoSum: hi + lo == s + err exactly
    bits = b.bitcast(s, I64)
    even = b.icmp_unsigned("==", b.and_(bits, ir.Constant(I64, 1)), ir.Constant(I64, 0))
    inexact = b.fcmp_ordered("!=", err, ir.Constant(F64, 0.0))
    negative = b.icmp_signed("<", bits, ir.Constant(I64, 0))
    away = b.icmp_unsigned("==", negative, b.fcmp_ordered("<", err, ir.Constant(F64, 0.0)))
    step = b.select(away, ir.Constant(I64, 1), ir.Constant(I64, -1))  # magnitude up when err has s's sign
    odd = b.bitcast(b.add(bits, step), F64)
    return b.select(b.and_(even, inexact), odd, s)


def convert(lw, x: ir.Value, src, dst, rounding: str = "rtne") -> ir.Value:
    """Convert one value ``x`` of IR element type ``src`` to ``dst`` (rules above)."""
    b = lw.b
    if src == dst:
        return x
    if src.is_pointer or dst.is_pointer:
        if src.is_pointer and dst.is_pointer:
            return x
        if src.is_pointer:
            return b.ptrtoint(x, register_type(dst))
        return b.inttoptr(b.zext(x, I64) if x.type.width < 64 else x, register_type(dst))
    if dst.is_bool:
        return _to_bool(b, soft_to_f32(lw, x, src) if is_soft_float(src) else x, src)
    if src.is_float and dst.is_float:
        return _float_to_float(lw, x, src, dst, rounding)
    if src.is_float:
        return _float_to_int(lw, soft_to_f32(lw, x, src) if is_soft_float(src) else x, dst)
    if dst.is_float:
        return _int_to_float(lw, x, src, dst)
    return _int_to_int(b, x, src, register_type(dst))


__all__ = ["convert"]
