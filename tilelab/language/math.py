"""``tl.math``: elementwise math functions (floats), each one IR ``UnaryOp`` kind.

y = tl.exp(x)            # math.exp on x's float type
y = tl.math.rsqrt(x)     # the same functions live in tl.math
"""

from __future__ import annotations

from ..compiler.frontend.values import builtin
from .core import div_rn, fdiv, fma, umulhi  # noqa: F401  (also part of tl.math)


def _unary(kind, doc, float_only=True):
    def fn(x, _semantic=None):
        return _semantic.math_unary(kind, x, float_only)

    fn.__name__ = kind
    fn.__doc__ = doc
    return builtin(fn)


exp = _unary("exp", "e to the power ``x``.")
exp2 = _unary("exp2", "2 to the power ``x``.")
log = _unary("log", "Natural logarithm.")
log2 = _unary("log2", "Base-2 logarithm.")
log1p = _unary("log1p", "``log(1 + x)``.")
expm1 = _unary("expm1", "``exp(x) - 1``.")
sqrt = _unary("sqrt", "Square root (fast).")
sqrt_rn = _unary("sqrt_rn", "Square root rounded to nearest.")
rsqrt = _unary("rsqrt", "``1 / sqrt(x)``.")
sin = _unary("sin", "Sine.")
cos = _unary("cos", "Cosine.")
tan = _unary("tan", "Tangent.")
tanh = _unary("tanh", "Hyperbolic tangent.")
sinh = _unary("sinh", "Hyperbolic sine.")
cosh = _unary("cosh", "Hyperbolic cosine.")
asin = _unary("asin", "Arc sine.")
acos = _unary("acos", "Arc cosine.")
atan = _unary("atan", "Arc tangent.")
erf = _unary("erf", "The error function.")
floor = _unary("floor", "Largest integer not above ``x``.")
ceil = _unary("ceil", "Smallest integer not below ``x``.")
trunc = _unary("trunc", "``x`` rounded toward zero.")
abs = _unary("abs", "Absolute value (ints and floats).", float_only=False)
isnan = _unary("isnan", "True where ``x`` is NaN.")
isinf = _unary("isinf", "True where ``x`` is infinite.")
signbit = _unary("signbit", "True where ``x``'s sign bit is set.")
popc = _unary("popc", "Number of set bits.", float_only=False)
clz = _unary("clz", "Number of leading zero bits.", float_only=False)


@builtin
def pow(x, y, _semantic=None):
    """``x`` to the power ``y``."""
    return _semantic.math_binary("pow", x, y)


@builtin
def atan2(y, x, _semantic=None):
    """The angle of the point ``(x, y)``."""
    return _semantic.math_binary("atan2", y, x)


@builtin
def max(x, y, propagate_nan=0, _semantic=None):
    """Elementwise maximum."""
    return _semantic.minmax("max", x, y, bool(propagate_nan))


@builtin
def min(x, y, propagate_nan=0, _semantic=None):
    """Elementwise minimum."""
    return _semantic.minmax("min", x, y, bool(propagate_nan))
