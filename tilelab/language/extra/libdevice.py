"""``libdevice`` names (CUDA's math library) mapped to tilelab's math functions.

Only names with an IR op of the same meaning are provided:

    from tilelab.language.extra import libdevice
    y = libdevice.tanh(x)
"""

from ..math import (  # noqa: F401
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
from ..math import umulhi as mulhi  # noqa: F401

fabs = abs
