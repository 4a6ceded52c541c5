"""Triton's ``tl.dtype`` questions and class lists, answered from the IR type behind a ``tl`` dtype.

Code written for Triton builds dtypes by name and asks them about themselves::

    tl.dtype("int8").is_int_signed()          # True
    tl.float16.exponent_bias, tl.float16.itemsize   # 15, 2
    [tl.dtype(n) for n in tl.dtype.SINT_TYPES]

``DtypeFacts`` is a mixin of ``values.dtype`` (which holds ``self.ir``).
"""

from __future__ import annotations

from enum import Enum


class DtypeFacts:
    """Triton's dtype predicates and class attributes (names as Triton spells them)."""

    SINT_TYPES = ["int8", "int16", "int32", "int64"]
    UINT_TYPES = ["int1", "uint8", "uint16", "uint32", "uint64"]
    FP_TYPES = ["fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16", "fp16", "bf16", "fp32", "fp64"]
    STANDARD_FP_TYPES = ["fp16", "bf16", "fp32", "fp64"]
    OTHER_TYPES = ["void"]

    class SIGNEDNESS(Enum):
        SIGNED = 0
        UNSIGNED = 1

    class KIND(Enum):
        BOOLEAN = 0
        INTEGRAL = 1
        FLOATING = 2

    @property
    def itemsize(self) -> int:
        return max(1, self.primitive_bitwidth // 8)

    @property
    def exponent_bias(self) -> int:
        return self.ir.exponent_bias

    @property
    def int_signedness(self):
        return self.SIGNEDNESS.UNSIGNED if self.ir.is_unsigned or self.ir.is_bool else self.SIGNEDNESS.SIGNED

    def kind(self):
        if self.is_bool():
            return self.KIND.BOOLEAN
        return self.KIND.INTEGRAL if self.is_int() else self.KIND.FLOATING

    def is_standard_floating(self) -> bool:
        return self.name in self.STANDARD_FP_TYPES

    def is_void(self) -> bool:
        return False

    def is_const(self) -> bool:
        return False

    def is_fp8e4nv(self) -> bool:
        return self.ir.name == "fp8e4nv"

    def is_fp8e5(self) -> bool:
        return self.ir.name == "fp8e5"

    def is_fp8e4b15(self) -> bool:
        return False

    def is_fp8e4b8(self) -> bool:
        return self.ir.name == "fp8e4b8"

    def is_fp8e5b16(self) -> bool:
        return self.ir.name == "fp8e5b16"

    def to_ir(self, builder=None):
        return self.ir

    def __getattr__(self, name):
        # is_int1 ... is_uint64: one predicate per integer type, as in Triton
        if name.startswith("is_") and name[3:] in self.SINT_TYPES + self.UINT_TYPES:
            return lambda: self.name == name[3:]
        raise AttributeError(f"dtype has no attribute {name!r}")
