"""Lowering of ``tt.cast``: value conversions between element types.

Rules (the interpreter's, which follow numpy ``astype``):

* to ``i1``: ``x != 0`` (NaN is true);
* int -> int: truncate, or widen with sign extension for signed sources;
* float -> int: truncate toward zero; out-of-range values saturate (never undefined);
* float -> float: widen exactly; narrow to nearest even (``fptrunc``), or toward zero
  when ``rounding == "rtz"``; bf16 and fp8 narrow with bit arithmetic (types.py, fp8.py);
* pointer <-> i64: the address.
"""

from __future__ import annotations

from tilelab.compiler.ir.ops import CastOp

from ..common.convert import convert
from ..common.types import I1
from .context import lower
from .lower_elementwise import map_elements


@lower(CastOp)
def lower_cast(lw, op):
    src = op.operands[0].type.element
    dst = op.result.type.element
    rounding = op.attrs.get("rounding", "rtne")
    map_elements(lw, op, lambda x: convert(lw, x, src, dst, rounding))


__all__ = ["convert", "I1"]
