"""Math functions written in LLVM IR, so that loops calling them vectorize.

LLVM lowers ``llvm.exp.f32`` to one call of the C library's ``expf`` per element,
which no loop vectorizer can widen. Softmax-like kernels spend their time there, so
f32 ``exp`` and ``exp2`` are emitted inline instead (Cephes' ``expf``, about 1 ulp):

    n = round(x * log2(e))                 # x = n ln2 + r, |r| <= ln2 / 2
    r = x - n * C1 - n * C2                # ln2 split in two for an exact product
    e^r ~ 1 + r + r^2 p(r)                 # degree-5 minimax polynomial p
    e^x = e^r * 2^(n - n/2) * 2^(n/2)      # two scalings reach the subnormal range

Inputs past the float range give ``inf`` or 0, and NaN stays NaN, as ``expf``.
"""

from __future__ import annotations

from llvmlite import ir

from ..common.types import F32, I32

LOG2E = 1.44269504088896341
C1, C2 = 0.693359375, -2.12194440e-4
POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1)
MAX_X, MIN_X = 88.72283905206835, -103.97208


def _f(v: float) -> ir.Constant:
    return ir.Constant(F32, v)


def exp_f32(lw, x: ir.Value, base2: bool = False) -> ir.Value:
    """``e**x`` (``2**x`` when ``base2``) of an f32, branch-free."""
    b = lw.b
    rint = lw.function("llvm.rint.f32", F32, [F32])
    if base2:
        n = b.call(rint, [x])
        r = b.fmul(b.fsub(x, n), _f(0.6931471805599453))
        limit_hi, limit_lo = MAX_X * LOG2E, MIN_X * LOG2E
    else:
        n = b.call(rint, [b.fmul(x, _f(LOG2E))])
        r = b.fsub(b.fsub(x, b.fmul(n, _f(C1))), b.fmul(n, _f(C2)))
        limit_hi, limit_lo = MAX_X, MIN_X
    p = _f(POLY[0])
    for c in POLY[1:]:
        p = b.fadd(b.fmul(p, r), _f(c))
    er = b.fadd(b.fadd(b.fmul(b.fmul(p, r), r), r), _f(1.0))
    ni = b.fptosi(b.call(lw.function("llvm.maxnum.f32", F32, [F32, F32]), [n, _f(-160.0)]), I32)
    half = b.ashr(ni, ir.Constant(I32, 1))
    y = b.fmul(b.fmul(er, _pow2(b, b.sub(ni, half))), _pow2(b, half))
    y = b.select(b.fcmp_ordered(">", x, _f(limit_hi)), _f(float("inf")), y)
    y = b.select(b.fcmp_ordered("<", x, _f(limit_lo)), _f(0.0), y)
    return b.select(b.fcmp_unordered("uno", x, x), x, y)


def _pow2(b: ir.IRBuilder, k: ir.Value) -> ir.Value:
    """``2.0 ** k`` for ``-126 <= k <= 127`` by building the exponent bits."""
    k = b.select(b.icmp_signed("<", k, ir.Constant(I32, -126)), ir.Constant(I32, -126), k)
    return b.bitcast(b.shl(b.add(k, ir.Constant(I32, 127)), ir.Constant(I32, 23)), F32)
