"""``tilelab.language`` (``tl``): the kernel language, source-compatible with ``triton.language``.

import tilelab.language as tl

def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
"""

from ..compiler.frontend.values import block_type, constexpr, dtype, pointer_type, tensor
from ..compiler.frontend.values import range_spec as range
from ..compiler.frontend.values import static_range_spec as static_range
from . import extra, math, random
from .compat import *  # noqa: F403
from .compat import __all__ as _compat_names
from .compat import register_tensor_members as _register_tensor_members
from .core import *  # noqa: F403
from .core import __all__ as _core_names
from .dtypes import *  # noqa: F403
from .dtypes import __all__ as _dtype_names
from .math import (
    abs,
    ceil,
    cos,
    erf,
    exp,
    exp2,
    floor,
    log,
    log2,
    rsqrt,
    sin,
    sqrt,
    sqrt_rn,
)
from .random import (
    pair_uniform_to_normal,
    philox,
    philox_impl,
    rand,
    rand4x,
    randint,
    randint4x,
    randn,
    randn4x,
    uint_to_uniform_float,
)
from .standard import cdiv, sigmoid, softmax, swizzle2d

__all__ = [
    "constexpr",
    "dtype",
    "pointer_type",
    "tensor",
    "range",
    "static_range",
    "block_type",
    "extra",
    "math",
    "random",
    "cdiv",
    "sigmoid",
    "softmax",
    "swizzle2d",
    "rand",
    "randint",
    "randint4x",
    "randn",
    "randn4x",
    "rand4x",
    "philox",
    "philox_impl",
    "uint_to_uniform_float",
    "pair_uniform_to_normal",
    "abs",
    "ceil",
    "cos",
    "erf",
    "exp",
    "exp2",
    "floor",
    "log",
    "log2",
    "rsqrt",
    "sin",
    "sqrt",
    "sqrt_rn",
    *_core_names,
    *_compat_names,
    *_dtype_names,
]

_register_tensor_members(globals())
