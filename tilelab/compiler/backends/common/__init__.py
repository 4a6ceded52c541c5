"""Scalar emitters shared by the CPU and CUDA backends: one element in, one element out.

Both backends lower a tile op by mapping a *scalar emitter* over the elements a tile
holds (the CPU over a buffer, the GPU over each thread's registers). The emitters
here only need ``lw.b`` (an ``llvmlite`` ``IRBuilder``) and ``lw.function(name, ret,
args)`` (declare an LLVM function once), so one definition serves both::

    from tilelab.compiler.backends.common import convert, int_binary
    y = int_binary(lw, "div", t, a, c)      # C division that never traps
    z = convert(lw, y, t, f32)              # numpy ``astype`` rules

Files: ``scalars.py`` (integer and float emitters, constants, arithmetic types),
``convert.py`` (``tt.cast`` value conversions), ``dead_values.py`` (unused values dropped from a
lowered function before it is printed).
"""

from .convert import convert
from .scalars import arith_constant, float_predicate, from_arith, int_binary, int_unary, intrinsic, to_arith

__all__ = [
    "arith_constant",
    "convert",
    "float_predicate",
    "from_arith",
    "int_binary",
    "int_unary",
    "intrinsic",
    "to_arith",
]
