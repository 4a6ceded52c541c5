"""``libdevice``: the names of CUDA's math library, as Triton kernels call them.

    from tilelab.language.extra import libdevice     # or triton.language.extra.libdevice
    y = libdevice.tanh(x)
    q = libdevice.llrint(x * scale)                  # round half to even, to int64

Every name runs on every target. Most are a math op of the IR (``tanh``, ``cbrt``, ``erfc``,
``rint``, ``hypot``... the GPU calls libdevice's ``__nv_*`` for them, the CPU the C library,
the interpreter numpy); the others are spelled here with those ops:

* conversions with a rounding in the name (``float2int_rn``: ``rint`` then the cast; ``_rz``
  truncates, ``_rd`` floors, ``_ru`` ceils; ``int2float_rn`` and the like are plain casts);
* bit views (``float_as_int``, ``longlong_as_double``...), ``brev``, ``ffs``, ``hadd`` /
  ``rhadd``, ``mulhi`` (signed, from the unsigned high product);
* ``fast_*`` functions: the accurate function (libdevice's fast versions trade accuracy for
  speed; these are at least as accurate), ``fast_dividef`` is ``/``;
* ``fmod`` (``%`` on floats: C's ``fmod``), ``fmax`` / ``fmin`` (the non-NaN operand),
  ``fdim``, ``saturatef``, ``exp10``, ``normcdf``, ``rcbrt``, ``finitef`` / ``isfinited``;
* ``ldexp`` / ``scalbn``, ``ilogb``, ``logb``, ``nextafter``, ``byte_perm``: on the bits, exact;
* ``erfinv``, ``erfcinv``, ``normcdfinv``: Giles' approximation (an asymptotic guess far in ``erfcinv``'s
  tail), then Newton steps in the working type (within about 1 ulp).

Arithmetic with a rounding mode other than to nearest (``add_rz``, ``double2float_rd``...) has no
spelling here: it is left out rather than rounded the wrong way; so are the Bessel and gamma functions,
``erfcx``, ``sinpi`` / ``cospi``, ``remainder``, ``rsqrt_rn`` and ``rcp64h``.
"""

from ...compiler.frontend.errors import SemanticError
from ...compiler.frontend.values import builtin
from ...compiler.ir import types as _t
from ..math import (  # noqa: F401
    _unary,
    abs,
    acos,
    asin,
    atan,
    atan2,
    ceil,
    cos,
    cosh,
    div_rn,
    erf,
    exp,
    exp2,
    expm1,
    floor,
    fma,
    isinf,
    isnan,
    log,
    log1p,
    log2,
    pow,
    rsqrt,
    signbit,
    sin,
    sinh,
    sqrt,
    sqrt_rn,
    tan,
    tanh,
    trunc,
)
from ..math import clz as clz  # noqa: F401
from ..math import popc as popc  # noqa: F401
from ..math import umulhi as umulhi  # noqa: F401

rint = _unary("rint", "``x`` rounded to the nearest integer, halves to even.")
round = _unary("round", "``x`` rounded to the nearest integer, halves away from zero.")
log10 = _unary("log10", "Base-10 logarithm.")
cbrt = _unary("cbrt", "Cube root.")
erfc = _unary("erfc", "``1 - erf(x)``, accurate where ``erf(x)`` is near 1.")
asinh = _unary("asinh", "Inverse hyperbolic sine.")
acosh = _unary("acosh", "Inverse hyperbolic cosine.")
atanh = _unary("atanh", "Inverse hyperbolic tangent.")

fabs = abs
nearbyint = rint
clzll = clz
popcll = popc
umul64hi = umulhi
fast_expf, fast_logf, fast_log2f, fast_log10f = exp, log, log2, log10
fast_sinf, fast_cosf, fast_tanf, fast_tanhf, fast_powf = sin, cos, tan, tanh, pow


def _binary(kind, doc):
    def fn(x, y, _semantic=None):
        return _semantic.math_binary(kind, x, y)

    fn.__name__, fn.__doc__ = kind, doc
    return builtin(fn)


copysign = _binary("copysign", "``x``'s magnitude with ``y``'s sign.")
hypot = _binary("hypot", "``sqrt(x * x + y * y)`` without overflow or underflow on the way.")


@builtin
def rhypot(x, y, _semantic=None):
    """``1 / hypot(x, y)``."""
    return _semantic.binary("/", 1.0, _semantic.math_binary("hypot", x, y))


@builtin
def norm3d(a, b, c, _semantic=None):
    """``sqrt(a * a + b * b + c * c)`` without overflow or underflow on the way."""
    return _semantic.math_binary("hypot", _semantic.math_binary("hypot", a, b), c)


@builtin
def norm4d(a, b, c, d, _semantic=None):
    """``sqrt(a * a + b * b + c * c + d * d)`` without overflow or underflow on the way."""
    s = _semantic
    return s.math_binary("hypot", s.math_binary("hypot", a, b), s.math_binary("hypot", c, d))


@builtin
def rnorm3d(a, b, c, _semantic=None):
    """``1 / norm3d(a, b, c)``."""
    return _semantic.binary("/", 1.0, norm3d(a, b, c, _semantic=_semantic))


@builtin
def rnorm4d(a, b, c, d, _semantic=None):
    """``1 / norm4d(a, b, c, d)``."""
    return _semantic.binary("/", 1.0, norm4d(a, b, c, d, _semantic=_semantic))


@builtin
def fmod(x, y, _semantic=None):
    """The remainder of ``x / y`` truncated (C's ``fmod``: the sign of ``x``)."""
    return _semantic.binary("%", x, y)


@builtin
def fmax(x, y, _semantic=None):
    """The larger operand; the other one where one is NaN."""
    return _semantic.minmax("max", x, y)


@builtin
def fmin(x, y, _semantic=None):
    """The smaller operand; the other one where one is NaN."""
    return _semantic.minmax("min", x, y)


@builtin
def fdim(x, y, _semantic=None):
    """``x - y`` where ``x > y``, else 0; NaN where either is NaN."""
    s = _semantic
    diff = s.binary("-", x, y)
    unordered = s.binary("!=", diff, diff)  # NaN in, NaN out (x - y is NaN then)
    return s.where(s.binary("|", s.binary(">", x, y), unordered), diff, 0.0)


@builtin
def saturatef(x, _semantic=None):
    """``x`` clamped to ``[0, 1]``; NaN gives 0."""
    s = _semantic
    return s.where(s.binary(">", x, 0.0), s.minmax("min", x, 1.0), 0.0)


@builtin
def exp10(x, _semantic=None):
    """10 to the power ``x``."""
    return _semantic.math_binary("pow", 10.0, x)


fast_exp10f = exp10


@builtin
def fast_dividef(x, y, _semantic=None):
    """``x / y`` (the fast division Triton's ``/`` already is on f32)."""
    return _semantic.binary("/", x, y)


@builtin
def rcbrt(x, _semantic=None):
    """``1 / cbrt(x)``."""
    return _semantic.binary("/", 1.0, _semantic.math_unary("cbrt", x))


@builtin
def normcdf(x, _semantic=None):
    """The standard normal distribution's CDF: ``erfc(-x / sqrt(2)) / 2``."""
    s = _semantic
    return s.binary("*", s.math_unary("erfc", s.binary("*", x, -0.7071067811865476)), 0.5)


#: Giles' approximation of erfinv ("Approximating the erfinv function", GPU Computing Gems, 2011):
#: ``erfinv(a) = a * P(w)``, ``w = -log((1 - a)(1 + a))``, one polynomial for ``w < 5`` (in ``w - 2.5``),
#: one beyond (in ``sqrt(w) - 3``), about 1e-7 relative; Newton steps take it to the type's precision.
_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                   -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)  # fmt: skip
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)  # fmt: skip
_TWO_OVER_SQRT_PI = 1.1283791670955126


def _erfinv_abs(s, a, one_minus_a):
    """``erfinv(a)`` for ``0 <= a <= 1`` given ``a`` and ``1 - a`` (exact where the caller has it).

    A first guess from Giles' polynomials (``w < 16``, the range they were fitted on) or, further out
    (``erfcinv`` of tiny values), from ``erfc(t) ~ exp(-t*t) / (t sqrt(pi))``; then Newton steps: on
    ``erf(t) - a`` below ``a = 0.5``, on ``log(erfc(t)) - log(1 - a)`` above (no cancellation, and
    steps of the right size in the far tail).
    """

    def horner(coefficients, v):
        p = s.binary("+", s.binary("*", v, 0.0), coefficients[0])
        for c in coefficients[1:]:
            p = s.binary("+", s.binary("*", p, v), c)
        return p

    log_one_minus_a = s.math_unary("log", one_minus_a)
    w = s.unary("-", s.binary("+", log_one_minus_a, s.math_unary("log", s.binary("+", a, 1.0))))
    central = horner(_ERFINV_CENTRAL, s.binary("-", w, 2.5))
    tail = horner(_ERFINV_TAIL, s.binary("-", s.math_unary("sqrt", w), 3.0))
    big = s.binary("+", w, 0.6931471805599453)  # -log(1 - a) there (1 + a is 2)
    far = s.math_unary(
        "sqrt", s.binary("-", big, s.binary("*", s.math_unary("log", s.binary("*", big, 3.14159265)), 0.5))
    )
    guess = s.where(s.binary("<", w, 5.0), central, s.binary("*", tail, a))
    t = s.where(s.binary("<", w, 5.0), s.binary("*", central, a), s.where(s.binary("<", w, 16.0), guess, far))
    steps = 3 if t.type.element.bits == 64 else 2
    for _ in range(steps):
        slope = s.binary("*", s.math_unary("exp", s.unary("-", s.binary("*", t, t))), _TWO_OVER_SQRT_PI)
        near = s.binary("/", s.binary("-", s.math_unary("erf", t), a), slope)
        erfc = s.math_unary("erfc", t)
        log_ratio = s.binary("-", s.math_unary("log", erfc), log_one_minus_a)
        far_step = s.unary("-", s.binary("/", s.binary("*", log_ratio, erfc), slope))
        t = s.binary("-", t, s.where(s.binary("<", a, 0.5), near, far_step))
    return s.where(s.binary("==", one_minus_a, 0.0), float("inf"), t)  # a = 1 (past it: NaN, from the log)


def _float_arg(s, x):
    """``x`` as a tensor of f32 or f64 (narrower floats and ints computed in f32), and the type to return."""
    x = s.to_tensor(x)
    elem = x.type.element
    wide = elem if elem.is_float and elem.bits >= 32 else _t.f32
    return s.cast(x, wide), (elem if elem.is_float else _t.f32)


@builtin
def erfinv(x, _semantic=None):
    """The inverse of ``erf``: ``erf(erfinv(x)) == x`` for ``-1 <= x <= 1`` (infinite at the ends)."""
    s = _semantic
    x, out = _float_arg(s, x)
    a = s.math_unary("abs", x)
    t = _erfinv_abs(s, a, s.binary("-", 1.0, a))
    return s.cast(s.math_binary("copysign", t, x), out)


@builtin
def erfcinv(x, _semantic=None):
    """The inverse of ``erfc`` on ``0 <= x <= 2``; accurate near 0, where ``erfinv(1 - x)`` is not."""
    s = _semantic
    x, out = _float_arg(s, x)
    low = s.binary("<=", x, 1.0)
    one_minus_a = s.where(low, x, s.binary("-", 2.0, x))  # erfcinv(x) = -erfcinv(2 - x)
    t = _erfinv_abs(s, s.binary("-", 1.0, one_minus_a), one_minus_a)
    return s.cast(s.where(low, t, s.unary("-", t)), out)


@builtin
def normcdfinv(x, _semantic=None):
    """The standard normal distribution's quantile: ``-sqrt(2) * erfcinv(2 x)``."""
    s = _semantic
    return s.binary("*", erfcinv(s.binary("*", x, 2.0), _semantic=s), -1.4142135623730951)


@builtin
def finitef(x, _semantic=None):
    """1 (int32) where ``x`` is neither infinite nor NaN, else 0."""
    s = _semantic
    bad = s.binary("|", s.math_unary("isnan", x), s.math_unary("isinf", x))
    return s.cast(s.unary("not", bad), _t.i32)


isfinited = finitef


@builtin
def mulhi(x, y, _semantic=None):
    """The high half of the signed (or, for unsigned operands, unsigned) product of two integers."""
    s = _semantic
    high = s.math_binary("umulhi", x, y)
    if high.type.element.is_unsigned:
        return high
    # the unsigned high half, less y where x < 0 and x where y < 0 (two's complement)
    high = s.binary("-", high, s.where(s.binary("<", x, 0), y, 0))
    return s.binary("-", high, s.where(s.binary("<", y, 0), x, 0))


mul64hi = mulhi


@builtin
def hadd(x, y, _semantic=None):
    """``(x + y) >> 1`` without overflow (rounded down)."""
    s = _semantic
    return s.binary("+", s.binary("&", x, y), s.binary(">>", s.binary("^", x, y), 1))


@builtin
def rhadd(x, y, _semantic=None):
    """``(x + y + 1) >> 1`` without overflow (rounded up)."""
    s = _semantic
    return s.binary("-", s.binary("|", x, y), s.binary(">>", s.binary("^", x, y), 1))


uhadd, urhadd = hadd, rhadd


@builtin
def sad(x, y, z, _semantic=None):
    """``|x - y| + z``, the difference taken the larger minus the smaller (so exact modulo 2**32)."""
    s = _semantic
    return s.binary("+", s.where(s.binary("<", x, y), s.binary("-", y, x), s.binary("-", x, y)), z)


usad = sad


@builtin
def mul24(x, y, _semantic=None):
    """The low 32 bits of the product of ``x``'s and ``y``'s low 24 bits (sign-extended)."""
    s = _semantic

    def low24(v):
        return s.binary(">>", s.binary("<<", s.cast(v, _t.i32), 8), 8)

    return s.binary("*", low24(x), low24(y))


@builtin
def umul24(x, y, _semantic=None):
    """The low 32 bits of the product of ``x``'s and ``y``'s low 24 bits."""
    s = _semantic
    return s.binary("*", s.binary("&", s.cast(x, _t.u32), 0xFFFFFF), s.binary("&", s.cast(y, _t.u32), 0xFFFFFF))


@builtin
def brev(x, _semantic=None):
    """``x``'s bits in reverse order (32- or 64-bit integers)."""
    s = _semantic
    x = s.to_tensor(x)
    width = x.type.element.bits
    if not x.type.element.is_int or width not in (32, 64):
        raise SemanticError(f"brev expects a 32- or 64-bit integer, got {x.type.element}")
    u = s.cast(x, _t.u32 if width == 32 else _t.u64, bitcast=True)
    shift, mask = width // 2, (1 << width) - 1
    while shift:
        low = mask // ((1 << shift) + 1)  # shift-wide groups of ones, every other one (0x0000FFFF, 0x00FF00FF...)
        u = s.binary("|", s.binary("&", s.binary(">>", u, shift), low), s.binary("<<", s.binary("&", u, low), shift))
        shift //= 2
    return s.cast(u, x.type.element, bitcast=True)


@builtin
def ffs(x, _semantic=None):
    """The 1-based position of ``x``'s lowest set bit; 0 where ``x`` is 0."""
    s = _semantic
    x = s.to_tensor(x)
    width = x.type.element.bits
    lowest = s.binary("&", x, s.unary("-", x))
    pos = s.cast(s.binary("-", width, s.math_unary("clz", lowest, False)), _t.i32)
    return s.where(s.binary("==", x, 0), 0, pos)


ffsll = ffs


def _bits(name, src, dst, doc):
    def fn(x, _semantic=None):
        return _semantic.cast(_semantic.cast(x, src), dst, bitcast=True)

    fn.__name__, fn.__doc__ = name, doc
    return builtin(fn)


float_as_int = _bits("float_as_int", _t.f32, _t.i32, "The bits of an f32 as an int32.")
float_as_uint = _bits("float_as_uint", _t.f32, _t.u32, "The bits of an f32 as a uint32.")
int_as_float = _bits("int_as_float", _t.i32, _t.f32, "An int32's bits as an f32.")
uint_as_float = _bits("uint_as_float", _t.u32, _t.f32, "A uint32's bits as an f32.")
double_as_longlong = _bits("double_as_longlong", _t.f64, _t.i64, "The bits of an f64 as an int64.")
longlong_as_double = _bits("longlong_as_double", _t.i64, _t.f64, "An int64's bits as an f64.")


@builtin
def double2hiint(x, _semantic=None):
    """The high 32 bits of an f64, as an int32."""
    s = _semantic
    bits = s.cast(s.cast(x, _t.f64), _t.i64, bitcast=True)
    return s.cast(s.binary(">>", bits, 32), _t.i32)


@builtin
def double2loint(x, _semantic=None):
    """The low 32 bits of an f64, as an int32."""
    s = _semantic
    return s.cast(s.cast(s.cast(x, _t.f64), _t.i64, bitcast=True), _t.i32)


@builtin
def hiloint2double(hi, lo, _semantic=None):
    """The f64 whose high 32 bits are ``hi`` and low 32 bits ``lo``."""
    s = _semantic
    high = s.binary("<<", s.cast(s.cast(hi, _t.i32), _t.i64), 32)
    low = s.cast(s.cast(s.cast(lo, _t.i32), _t.u32, bitcast=True), _t.i64)
    return s.cast(s.binary("|", high, low), _t.f64, bitcast=True)


#: per float type: (integer type of its bits, mantissa bits, exponent bias, exponent mask)
_FIELDS = {"f32": (_t.i32, 23, 127, 0xFF), "f64": (_t.i64, 52, 1023, 0x7FF)}


def _fields(s, x):
    """``(x as f32 or f64, x normalized, its bits, their exponent field, the shift that took)``: a subnormal
    is scaled by ``2**64``, so that its exponent field is that of a normal number (the shift is then 64)."""
    x, _ = _float_arg(s, x)
    it, mbits, _, emask = _FIELDS[x.type.element.name]
    tiny = s.binary("==", s.binary("&", s.binary(">>", s.cast(x, it, bitcast=True), mbits), emask), 0)
    scaled = s.where(tiny, s.binary("*", x, float(2**64)), x)
    bits = s.cast(scaled, it, bitcast=True)
    field = s.binary("&", s.binary(">>", bits, mbits), emask)
    return x, scaled, bits, field, s.where(tiny, 64, 0)


@builtin
def ldexp(x, n, _semantic=None):
    """``x * 2**n``, exact (rounded once where the result is subnormal)."""
    s = _semantic
    x, scaled, bits, field, shift = _fields(s, x)
    it, mbits, bias, emask = _FIELDS[x.type.element.name]
    limit = 4 * bias  # past it the result is 0 or infinite for every finite x
    target = s.binary("-", s.binary("+", field, s.cast(s.minmax("min", s.minmax("max", n, -limit), limit), it)), shift)
    normal = s.cast(
        s.binary("|", s.binary("&", bits, ~(emask << mbits)), s.binary("<<", target, mbits)),
        x.type.element,
        bitcast=True,
    )
    # a subnormal result: the mantissa at the smallest normal exponent, times 2**(target - 1), one rounding
    low = s.cast(s.binary("|", s.binary("&", bits, ~(emask << mbits)), 1 << mbits), x.type.element, bitcast=True)
    factor_field = s.binary("+", s.minmax("max", s.binary("-", target, 1), -60), bias)
    factor = s.cast(s.binary("<<", s.cast(factor_field, it), mbits), x.type.element, bitcast=True)
    sub = s.binary("*", low, factor)
    result = s.where(
        s.binary(">=", target, emask),
        s.binary("*", scaled, float("inf")),
        s.where(s.binary(">=", target, 1), normal, sub),
    )
    special = s.binary("|", s.binary("==", x, 0.0), s.binary("!=", s.binary("-", x, x), 0.0))  # 0, inf, NaN
    return s.where(special, x, result)


scalbn = ldexp


@builtin
def ilogb(x, _semantic=None):
    """The unbiased exponent of ``x`` as an int32; ``INT_MIN`` for 0 and NaN, ``INT_MAX`` for infinities."""
    s = _semantic
    x, _, _, field, shift = _fields(s, x)
    _, _, bias, emask = _FIELDS[x.type.element.name]
    e = s.cast(s.binary("-", s.binary("-", field, bias), shift), _t.i32)
    e = s.where(s.binary("==", field, emask), 2**31 - 1, e)
    bad = s.binary("|", s.binary("==", x, 0.0), s.math_unary("isnan", x))
    return s.where(bad, -(2**31), e)


@builtin
def logb(x, _semantic=None):
    """The unbiased exponent of ``x`` as a float; -inf for 0, +inf for infinities, NaN for NaN."""
    s = _semantic
    x, _, _, field, shift = _fields(s, x)
    _, _, bias, emask = _FIELDS[x.type.element.name]
    e = s.cast(s.binary("-", s.binary("-", field, bias), shift), x.type.element)
    e = s.where(s.binary("==", field, emask), s.binary("*", x, x), e)  # inf * inf, NaN * NaN
    return s.where(s.binary("==", x, 0.0), float("-inf"), e)


@builtin
def nextafter(x, y, _semantic=None):
    """The float after ``x`` in the direction of ``y`` (``y`` where they are equal; NaN where either is)."""
    s = _semantic
    x, y = s.promote(x, y, "nextafter")
    if x.type.element not in (_t.f32, _t.f64):
        x, y = s.cast(x, _t.f32), s.cast(y, _t.f32)
    it = _FIELDS[x.type.element.name][0]
    bits = s.cast(x, it, bitcast=True)
    away = s.binary("==", s.binary(">", y, x), s.binary(">", x, 0.0))  # away from zero: the bits grow
    moved = s.cast(s.where(away, s.binary("+", bits, 1), s.binary("-", bits, 1)), x.type.element, bitcast=True)
    tiniest = s.cast(s.binary("+", s.binary("*", bits, 0), 1), x.type.element, bitcast=True)  # the smallest subnormal
    from_zero = s.math_binary("copysign", tiniest, y)
    r = s.where(s.binary("==", x, 0.0), from_zero, moved)
    r = s.where(s.binary("==", x, y), y, r)
    unordered = s.binary("|", s.math_unary("isnan", x), s.math_unary("isnan", y))
    return s.where(unordered, s.binary("+", x, y), r)


@builtin
def byte_perm(x, y, selector, _semantic=None):
    """Four bytes picked from the eight of ``y:x`` (``x`` bytes 0-3): byte ``i`` of the result is byte
    ``(selector >> 4 i) & 7``."""
    s = _semantic
    both = s.binary("|", s.binary("<<", s.cast(s.cast(y, _t.u32, bitcast=True), _t.u64), 32),
                    s.cast(s.cast(x, _t.u32, bitcast=True), _t.u64))  # fmt: skip
    sel = s.cast(s.cast(selector, _t.i32), _t.u32, bitcast=True)
    out = None
    for i in range(4):
        pick = s.cast(s.binary("&", s.binary(">>", sel, 4 * i), 7), _t.u64)
        byte = s.binary("&", s.binary(">>", both, s.binary("*", pick, 8)), 0xFF)
        part = s.binary("<<", byte, 8 * i)
        out = part if out is None else s.binary("|", out, part)
    return s.cast(s.cast(out, _t.u32), _t.i32, bitcast=True)


_ROUNDINGS = {"rn": "rint", "rz": "trunc", "rd": "floor", "ru": "ceil"}


_HOW = {"rn": "to nearest, halves to even", "rz": "toward zero", "rd": "down", "ru": "up"}


def _to_int(name, src, dst, mode):
    """``x`` (as ``src``; ``None``: its own float type) rounded as ``mode`` says, converted to ``dst``."""

    def fn(x, _semantic=None):
        s = _semantic
        x = s.to_tensor(x)
        x = s.cast(x, src or (x.type.element if x.type.element.is_float else _t.f32))
        return s.cast(s.math_unary(_ROUNDINGS[mode], x), dst)

    fn.__name__, fn.__doc__ = name, f"``x`` rounded {_HOW[mode]}, as {dst}."
    return builtin(fn)


_INTS = {"int": _t.i32, "uint": _t.u32, "ll": _t.i64, "ull": _t.u64}
for _src_name, _src in (("float", _t.f32), ("double", _t.f64)):
    for _dst_name, _dst in _INTS.items():
        for _mode in _ROUNDINGS:
            _name = f"{_src_name}2{_dst_name}_{_mode}"
            globals()[_name] = _to_int(_name, _src, _dst, _mode)

llrint = _to_int("llrint", None, _t.i64, "rn")


@builtin
def llround(x, _semantic=None):
    """``x`` rounded to the nearest integer, halves away from zero, as int64."""
    return _semantic.cast(_semantic.math_unary("round", x), _t.i64)


def _cast(name, dst, doc):
    def fn(x, _semantic=None):
        return _semantic.cast(x, dst)

    fn.__name__, fn.__doc__ = name, doc
    return builtin(fn)


for _src_name in _INTS:
    globals()[f"{_src_name}2float_rn"] = _cast(f"{_src_name}2float_rn", _t.f32, "To f32, rounded to nearest.")
    globals()[f"{_src_name}2double_rn"] = _cast(f"{_src_name}2double_rn", _t.f64, "To f64, rounded to nearest.")
double2float_rn = _cast("double2float_rn", _t.f32, "To f32, rounded to nearest.")


def _rounded(name, symbol, doc):
    def fn(x, y, _semantic=None):
        return _semantic.binary(symbol, x, y)

    fn.__name__, fn.__doc__ = name, doc
    return builtin(fn)


add_rn = _rounded("add_rn", "+", "``x + y``, rounded to nearest.")
sub_rn = _rounded("sub_rn", "-", "``x - y``, rounded to nearest.")
mul_rn = _rounded("mul_rn", "*", "``x * y``, rounded to nearest.")
dadd_rn, dsub_rn, dmul_rn, ddiv_rn = add_rn, sub_rn, mul_rn, div_rn
fmaf_rn = fma_rn = fma


@builtin
def rcp_rn(x, _semantic=None):
    """``1 / x``, rounded to nearest."""
    return _semantic.math_binary("fdiv", 1.0, x, rounding="rn")


drcp_rn = rcp_rn
