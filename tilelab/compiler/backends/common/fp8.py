"""The fp8 formats as bit arithmetic: decode to f32 exactly, encode from f32 rounding to nearest even.

| format | exponent bits, bias | mantissa bits | infinities | NaN | largest finite |
|---|---|---|---|---|---|
| fp8e4nv (``float8_e4m3fn``) | 4, 7 | 3 | none (overflow is NaN) | ``x1111111`` | 448 |
| fp8e5 (``float8_e5m2``) | 5, 15 | 2 | ``x1111100`` | ``x11111xx`` | 57344 |
| fp8e4b8 (``float8_e4m3fnuz``) | 4, 8 | 3 | none (overflow is NaN) | ``10000000`` | 240 |
| fp8e5b16 (``float8_e5m2fnuz``) | 5, 16 | 2 | none (overflow is NaN) | ``10000000`` | 57344 |

The formats' widths, biases and kinds of top codes are ``types.NARROW_FLOATS`` (the IR's table);
the codes below follow from them. Encoding follows ml_dtypes (and so the interpreter): a normal
value rounds its f32 mantissa to the format's width (``bits + half - 1 + lsb``, carries flow
into the exponent), a value below the smallest normal is scaled to a count of subnormal steps
and rounded with ``rint``; results past the largest finite become NaN or infinity, and the sign
is kept throughout -- but for the ``fnuz`` formats, whose negative zero is their NaN: a value that
rounds to zero is +0 there.
"""

from __future__ import annotations

from llvmlite import ir

from ...ir.types import NARROW_FLOATS, top_codes
from .types import F32, I8, I32

#: name: (exponent bits, mantissa bits, bias, largest finite code, overflow code, NaN code, style)
FORMATS = {
    name: (ebits, mbits, bias, *top_codes(ebits, mbits, style), style)
    for name, (ebits, mbits, bias, style) in NARROW_FLOATS.items()
    if name.startswith("fp8")
}


def _c(v: int) -> ir.Constant:
    return ir.Constant(I32, v)


def fp8_to_f32(lw, x: ir.Value, name: str) -> ir.Value:
    """Decode fp8 bits (an ``i8``) to the f32 of the same value."""
    b = lw.b
    ebits, mbits, bias, _, _, _, style = FORMATS[name]
    v = b.zext(x, I32)
    sign = b.shl(b.lshr(v, _c(7)), _c(31))
    e = b.and_(b.lshr(v, _c(mbits)), _c((1 << ebits) - 1))
    m = b.and_(v, _c((1 << mbits) - 1))
    normal = b.or_(b.shl(b.add(e, _c(127 - bias)), _c(23)), b.shl(m, _c(23 - mbits)))
    subnormal = b.bitcast(b.fmul(b.uitofp(m, F32), ir.Constant(F32, 2.0 ** (1 - bias - mbits))), I32)
    bits = b.select(b.icmp_unsigned("==", e, _c(0)), subnormal, normal)
    top = b.icmp_unsigned("==", e, _c((1 << ebits) - 1))
    if style == "fnuz":  # every code is a number but 0x80 ("-0"), the NaN
        bits = b.select(b.icmp_unsigned("==", v, _c(0x80)), _c(0x7FC00000), bits)
    elif style == "fn":  # only all-ones is special: NaN
        special = b.and_(top, b.icmp_unsigned("==", m, _c((1 << mbits) - 1)))
        bits = b.select(special, _c(0x7FC00000), bits)
    else:  # IEEE-like: infinity or NaN
        bits = b.select(top, b.select(b.icmp_unsigned("==", m, _c(0)), _c(0x7F800000), _c(0x7FC00000)), bits)
    return b.bitcast(b.or_(bits, sign), F32)


def f32_to_fp8(lw, x: ir.Value, name: str, rounding: str = "rtne") -> ir.Value:
    """Encode an f32 as fp8 bits, to nearest even (toward zero when ``rounding == "rtz"``)."""
    b = lw.b
    ebits, mbits, bias, max_code, over_code, nan_code, style = FORMATS[name]
    bits = b.bitcast(x, I32)
    sign = b.and_(b.lshr(bits, _c(24)), _c(0x80))
    mag = b.and_(bits, _c(0x7FFFFFFF))
    shift = 23 - mbits
    if rounding != "rtz":
        lsb = b.and_(b.lshr(mag, _c(shift)), _c(1))
        mag_r = b.add(mag, b.add(lsb, _c((1 << (shift - 1)) - 1)))
    else:
        mag_r = mag
    normal = b.sub(b.lshr(mag_r, _c(shift)), _c((127 - bias) << mbits))
    a = b.bitcast(mag, F32)
    scaled = b.fmul(a, ir.Constant(F32, 2.0 ** (bias - 1 + mbits)))
    step = lw.function("llvm.trunc.f32" if rounding == "rtz" else "llvm.rint.f32", F32, [F32])
    subnormal = b.fptoui(b.call(step, [scaled]), I32)
    small = b.fcmp_ordered("<", a, ir.Constant(F32, 2.0 ** (1 - bias)))
    code = b.select(small, subnormal, normal)
    code = b.select(b.icmp_signed(">", code, _c(max_code)), _c(over_code), code)
    code = b.select(b.fcmp_unordered("uno", x, x), _c(nan_code), code)
    if style == "fnuz":  # no negative zero (its code is the NaN); the NaN and overflow codes carry the sign bit
        sign = b.select(b.icmp_unsigned("==", code, _c(0)), _c(0), sign)
    return b.trunc(b.or_(code, sign), I8)
