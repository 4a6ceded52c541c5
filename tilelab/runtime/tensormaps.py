"""Tensor maps: the 128-byte descriptors a Hopper kernel's TMA copies (``cp.async.bulk.tensor``) read.

A tensor map tells the copy engine everything about one array: its base address, its shape,
its byte strides, the box (block) one copy moves, the swizzle the box lands in shared memory
with, and what out-of-bounds elements read as. Only the driver knows the format
(``cuTensorMapEncodeTiled``), so the map is built on the host at launch time and handed to the
kernel as a by-value parameter (``.param .align 64 .b8 map[128]``): the copy instruction takes
the parameter's address, and no device memory has to be allocated, filled or freed per launch.

The compiler says which maps a kernel needs in its metadata, one *recipe* per map, in the
descriptor's order (outer dimension first); each dimension and stride is a kernel parameter
(``["arg", i]``) or a constant::

    recipe = {"base": 0, "shape": [["arg", 1], ["const", 64]], "strides": [["arg", 2], ["const", 1]],
              "box": [128, 64], "dtype": "f16", "swizzle": 128, "fill": "zero", "name": "a_desc"}
    encode(recipe, [address, 1000, 64])   # 128 bytes: dims (64, 1000), strides (128,) bytes, box (64, 128)

Encoding takes a few microseconds of driver time, so maps are cached by what goes into them:
launching again on the same arrays costs a dictionary lookup.
"""

from __future__ import annotations

import ctypes
import functools

from tilelab.compiler.interpreter.errors import KernelRuntimeError

from . import cuda_driver
from .cuda_driver import TENSORMAP_BYTES

#: The driver's data type and the element size of each IR scalar type a map can move.
#: TMA moves bits, so fp8 travels as bytes and i16 as u16.
DATA_TYPES = {
    "f16": ("FLOAT16", 2),
    "bf16": ("BFLOAT16", 2),
    "f32": ("FLOAT32", 4),
    "f64": ("FLOAT64", 8),
    "fp8e4nv": ("UINT8", 1),
    "fp8e5": ("UINT8", 1),
    "fp8e4b8": ("UINT8", 1),
    "fp8e5b16": ("UINT8", 1),
    "i8": ("UINT8", 1),
    "u8": ("UINT8", 1),
    "i16": ("UINT16", 2),
    "u16": ("UINT16", 2),
    "i32": ("INT32", 4),
    "u32": ("UINT32", 4),
    "i64": ("INT64", 8),
    "u64": ("UINT64", 8),
}
SWIZZLES = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}
FILLS = {"zero": "NONE", "nan": "NAN_REQUEST_ZERO_FMA"}


def encode(recipe: dict, values: list) -> bytes:
    """The tensor map of ``recipe`` for a launch whose parameters have the launch ``values``.

    ``values`` are in kernel-parameter order: addresses for pointers, scalars otherwise.
    """
    return encode_tiled(
        int(values[recipe["base"]]),
        _resolve(recipe["shape"], values),
        _resolve(recipe["strides"], values),
        tuple(recipe["box"]),
        recipe["dtype"],
        recipe["swizzle"],
        recipe["fill"],
        recipe["name"],
    )


def _resolve(dims: list, values: list) -> tuple[int, ...]:
    """``[["arg", 3], ["const", 1]]`` -> ``(values[3], 1)``."""
    return tuple(int(values[x]) if kind == "arg" else int(x) for kind, x in dims)


def encode_tiled(
    address: int, dims: tuple, strides: tuple, box: tuple, dtype: str, swizzle: int, fill: str, name: str
) -> bytes:
    """The tensor map of a ``dims`` array of ``dtype`` at ``address`` (element ``strides``), cached.

    Everything is outer dimension first, as in the recipe; ``name`` (the descriptor argument)
    only serves the error message::

        encode_tiled(address, (1000, 64), (64, 1), (128, 64), "f16", 128, "zero", "a_desc")
    """
    try:
        return _tiled(address, dims, strides, box, dtype, swizzle, fill)
    except (cuda_driver.CudaError, ValueError) as e:
        raise KernelRuntimeError(
            f"argument '{name}': {e} (tensor map of {dtype} at {address:#x}: dims {list(dims)}, "
            f"strides {list(strides)} elements, box {list(box)}, swizzle {swizzle})"
        ) from None


@functools.lru_cache(maxsize=512)
def _tiled(address: int, dims: tuple, strides: tuple, box: tuple, dtype: str, swizzle: int, fill: str) -> bytes:
    """``cuTensorMapEncodeTiled``, which takes every list innermost dimension first, strides in bytes."""
    if strides[-1] != 1:
        raise ValueError(f"the last dimension must be contiguous (stride 1), got stride {strides[-1]}")
    if min(dims) < 1:  # a descriptor made in the kernel over an empty array: TMA has no map for it
        raise ValueError(f"TMA copies need every dimension of a descriptor to be at least 1, got shape {list(dims)}")
    cuda_driver.context()  # the driver must be initialized, even before the first kernel is loaded
    drv = cuda_driver._driver()
    data_type, size = DATA_TYPES[dtype]
    rank = len(dims)
    result = drv.cuTensorMapEncodeTiled(
        getattr(drv.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{data_type}"),
        rank,
        address,
        [drv.cuuint64_t(d) for d in reversed(dims)],
        [drv.cuuint64_t(s * size) for s in reversed(strides[:-1])],
        [drv.cuuint32_t(b) for b in reversed(box)],
        [drv.cuuint32_t(1)] * rank,
        drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(drv.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{SWIZZLES[swizzle]}"),
        drv.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        getattr(drv.CUtensorMapFloatOOBfill, f"CU_TENSOR_MAP_FLOAT_OOB_FILL_{FILLS[fill]}"),
    )
    tensor_map = cuda_driver.check(result, "cuTensorMapEncodeTiled")
    return ctypes.string_at(tensor_map.getPtr(), TENSORMAP_BYTES)


__all__ = ["encode", "encode_tiled"]
