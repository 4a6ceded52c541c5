"""Host tensor descriptors as kernel arguments: one parameter, several IR arguments.

A ``TensorDescriptor`` launch argument (Triton's host-side ``triton.tools.tensor_descriptor``)
reaches the compiler as a ``DescriptorArg`` constant, what is fixed per compile (rank, block
shape, padding), plus its runtime parts as ordinary arguments named after the parameter::

    a_desc (rank 2) -> a_desc_base: *f16, a_desc_shape0, a_desc_shape1, a_desc_stride0, a_desc_stride1

The parts are specialized like any argument: the last stride, 1, becomes the constant 1 (the
block's rows are contiguous), and a shape divisible by 16 is known to be. In the kernel the
parameter is a ``tensor_descriptor`` over those parts, as if ``tl.make_tensor_descriptor``
had built it from them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DescriptorArg:
    """What a compile fixes of a descriptor argument: its block shape and out-of-bounds padding."""

    block_shape: tuple[int, ...]
    padding: str = "zero"

    @property
    def rank(self) -> int:
        return len(self.block_shape)

    def part_names(self, name: str) -> list[str]:
        """The runtime arguments that carry parameter ``name``: base, shapes, strides."""
        dims = range(self.rank)
        return [f"{name}_base", *(f"{name}_shape{d}" for d in dims), *(f"{name}_stride{d}" for d in dims)]
