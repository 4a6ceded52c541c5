"""Host tensor descriptors: ``TensorDescriptor(base, shape, strides, block_shape)`` as a launch argument.

As Triton's ``triton.tools.tensor_descriptor.TensorDescriptor``: the host says which array a
kernel reads and writes in blocks, and the kernel calls ``desc.load([i, j])`` and
``desc.store([i, j], tile)`` on the parameter::

    a_desc = TensorDescriptor.from_tensor(a, [128, 64])   # a: a (M, K) array, row-major
    matmul[grid](a_desc, b_desc, c_desc, M, N, K)

A launch replaces each descriptor by its parts (``descriptor_args.DescriptorArg`` says how),
checked as Triton checks them: base 16-byte aligned, last dimension contiguous, other strides
multiples of 16 bytes, power-of-two block dimensions. The block shape is read at each launch,
so an autotuner's ``pre_hook`` may set it per config. Triton's own ``TensorDescriptor`` objects
are accepted too (any object with ``base``, ``shape``, ``strides`` and ``block_shape``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tilelab.compiler.frontend.descriptor_args import DescriptorArg
from tilelab.compiler.ir.types import SCALARS

__all__ = [
    "DescriptorArg",
    "TensorDescriptor",
    "check",
    "descriptor_part",
    "descriptor_parts",
    "element_strides",
    "expand",
    "is_descriptor",
]

from .arrays import array_info, element_name
from .errors import LaunchError

_MAX_RANK = 5


@dataclass
class TensorDescriptor:
    """A ``shape`` array at ``base`` (an array) with element ``strides``, moved in ``block_shape`` blocks.

    ``padding`` is what out-of-bounds elements read as: ``"zero"`` or ``"nan"``.
    """

    base: Any
    shape: list
    strides: list
    block_shape: list
    padding: str = "zero"
    round_f32_to_tf32: bool = False

    def __post_init__(self):
        self.shape, self.strides, self.block_shape = list(self.shape), list(self.strides), list(self.block_shape)
        check(self, "TensorDescriptor", ValueError)

    @staticmethod
    def from_tensor(tensor, block_shape, padding="zero", round_f32_to_tf32=False) -> TensorDescriptor:
        """The descriptor of a whole array (torch tensor, numpy array or any array tilelab launches with)."""
        strides = element_strides(tensor)
        return TensorDescriptor(tensor, list(tensor.shape), strides, block_shape, padding, round_f32_to_tf32)


def element_strides(array) -> list[int]:
    """An array's strides in elements (torch's ``stride()``; numpy's byte strides divided by the item size)."""
    if callable(getattr(array, "stride", None)):
        return [int(s) for s in array.stride()]
    strides, itemsize = getattr(array, "strides", None), getattr(getattr(array, "dtype", None), "itemsize", None)
    if strides is None or not itemsize:
        raise TypeError(f"TensorDescriptor.from_tensor needs an array, got {type(array).__name__}")
    if any(s % itemsize for s in strides):
        raise ValueError(f"TensorDescriptor.from_tensor: strides {tuple(strides)} are not whole elements")
    return [s // itemsize for s in strides]


def is_descriptor(value) -> bool:
    """A host tensor descriptor: ours, Triton's, or one shaped like them."""
    return isinstance(value, TensorDescriptor) or (
        all(hasattr(value, a) for a in ("base", "shape", "strides", "block_shape")) and array_info(value) is None
    )


def check(desc, what: str, error=LaunchError) -> None:
    """Raise ``error`` naming ``what`` unless ``desc`` is a descriptor Triton would accept."""
    shape, strides, block = list(desc.shape), list(desc.strides), list(desc.block_shape)
    rank = len(shape)
    if not 0 < rank <= _MAX_RANK or len(strides) != rank or len(block) != rank:
        raise error(
            f"{what}: shape, strides and block_shape need one entry per dimension, 1 to {_MAX_RANK} "
            f"(got shape {shape}, strides {strides}, block_shape {block})"
        )
    info = array_info(desc.base)
    if info is None:
        raise error(f"{what}: base must be an array, got {type(desc.base).__name__}")
    for i, d in enumerate(block):
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool) or d < 1 or d & (d - 1):
            raise error(f"{what}: block_shape[{i}] must be a power of 2, got {d!r}")
    if any(not isinstance(v, (int, np.integer)) or isinstance(v, bool) for v in (*shape, *strides)):
        raise error(f"{what}: shape and strides must be ints, got shape {shape}, strides {strides}")
    if any(d <= 0 for d in shape):
        raise error(f"{what}: shape must be positive, got {shape}")
    if info.address % 16:
        raise error(f"{what}: base must be 16-byte aligned (address {info.address:#x})")
    if strides[-1] != 1:
        raise error(f"{what}: the last dimension must be contiguous (stride 1), got strides {strides}")
    elem = SCALARS.get(element_name(info))
    if elem is None:
        raise error(f"{what}: unsupported dtype {info.elem}")
    itemsize = elem.itemsize
    if any(s * itemsize % 16 for s in strides[:-1]):
        raise error(f"{what}: strides other than the last must be multiples of 16 bytes, got {strides} x {itemsize} B")
    if block[-1] * itemsize < 16:
        raise error(f"{what}: the block's last dimension must span at least 16 bytes, got {block[-1]} x {itemsize} B")
    padding = getattr(desc, "padding", "zero")
    if padding not in ("zero", "nan"):
        raise error(f"{what}: padding must be 'zero' or 'nan', got {padding!r}")
    if padding == "nan" and not elem.is_float:
        raise error(f"{what}: padding 'nan' needs a floating-point array, got {info.elem}")


def expand(name: str, desc, what: str) -> tuple[DescriptorArg, dict]:
    """``(compile-time spec, {part name: launch value})`` of descriptor ``desc`` passed as parameter ``name``."""
    check(desc, what)
    spec = DescriptorArg(tuple(int(d) for d in desc.block_shape), getattr(desc, "padding", "zero"))
    values = [desc.base, *(int(d) for d in desc.shape), *(int(s) for s in desc.strides)]
    return spec, dict(zip(spec.part_names(name), values))


def descriptor_parts(constants: dict) -> dict:
    """``{part name: (descriptor parameter, part index)}`` of a kernel compiled with these constants."""
    return {
        part: (name, i)
        for name, spec in constants.items()
        if type(spec) is DescriptorArg
        for i, part in enumerate(spec.part_names(name))
    }


def _part_field(desc, index: int) -> tuple[str, int | None]:
    """Where part ``index`` of a descriptor lives: ``("base", None)``, ``("shape", i)`` or ``("strides", i)``."""
    if index == 0:
        return "base", None
    rank = len(desc.block_shape)
    return ("shape", index - 1) if index <= rank else ("strides", index - 1 - rank)


def descriptor_part(desc, index: int):
    """Part ``index`` of a descriptor, in ``DescriptorArg.part_names`` order: base, shapes, strides."""
    field, i = _part_field(desc, index)
    return getattr(desc, field) if i is None else int(getattr(desc, field)[i])


def descriptor_part_source(expr: str, desc, index: int) -> str:
    """The Python expression of ``descriptor_part(desc, index)`` for the descriptor that ``expr`` names
    (a warm launch reads it straight from the call's arguments)::

        descriptor_part_source("given[0]", d, 2)   # 'int(given[0].shape[1])' for a 2-d ``d``
    """
    field, i = _part_field(desc, index)
    return f"{expr}.{field}" if i is None else f"int({expr}.{field}[{i}])"
