"""The element types of the ``tl`` language, with Triton's names (``tl.float32``, ``tl.int8``...)."""

from ..compiler.frontend.values import dtype
from ..compiler.ir import types as _t

int1 = dtype(_t.i1)
int8 = dtype(_t.i8)
int16 = dtype(_t.i16)
int32 = dtype(_t.i32)
int64 = dtype(_t.i64)
uint8 = dtype(_t.u8)
uint16 = dtype(_t.u16)
uint32 = dtype(_t.u32)
uint64 = dtype(_t.u64)
float16 = dtype(_t.f16)
bfloat16 = dtype(_t.bf16)
float32 = dtype(_t.f32)
float64 = dtype(_t.f64)
float8e4nv = dtype(_t.fp8e4nv)
float8e5 = dtype(_t.fp8e5)
float8e4b8 = dtype(_t.fp8e4b8)  # float8_e4m3fnuz (AMD's fp8)
float8e5b16 = dtype(_t.fp8e5b16)  # float8_e5m2fnuz
float8e4b15 = dtype(_t.fp8e4b15)  # Triton's fp8 for GPUs before sm_89; numpy has no type for it
bool_ = int1
float8_e4m3fn = float8e4nv
float8_e5m2 = float8e5

__all__ = [
    "int1",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "float8e4nv",
    "float8e5",
    "float8e4b8",
    "float8e5b16",
    "float8e4b15",
    "bool_",
    "float8_e4m3fn",
    "float8_e5m2",
]
