"""``tilelab.reinterpret(tensor, tl.uint32)``: hand a kernel an array's memory as another element type.

Triton code passes unsigned and fp8 data this way (``triton.reinterpret(x, tl.float8e5)``): the
bytes are the array's, the pointer the kernel gets is typed ``dtype``. Nothing is copied; the
kernel's writes land in the original array::

    bits = torch.zeros(1024, dtype=torch.int8)
    kernel[grid](tilelab.reinterpret(bits, tl.float8e5), ...)   # the kernel sees *fp8e5
"""

from __future__ import annotations

import numpy as np


class TensorWrapper:
    """``base`` viewed as ``dtype`` (a ``tl`` dtype) when passed to a kernel; same size per element."""

    def __init__(self, base, dtype):
        self.base = base
        self.dtype = dtype
        self.shape = tuple(base.shape)
        self.data = base

    @property
    def device(self):
        return self.base.device

    def data_ptr(self) -> int:
        return self.base.data_ptr()

    def stride(self, *dim):
        return self.base.stride(*dim)

    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def element_size(self) -> int:
        return self.dtype.itemsize

    def __tilelab_array__(self):
        """The array the runtime describes instead of this wrapper: ``base`` viewed as ``dtype``.

        A type numpy has no type for (``tl.float8e4b15``) is viewed as its raw bits; the runtime takes the
        element type from ``dtype`` then (``arrays.array_info``).
        """
        np_dtype = np.dtype(self.dtype.ir.host_dtype)
        if isinstance(self.base, np.ndarray):
            return self.base.view(np_dtype)
        import torch

        name = {"bool": "bool"}.get(np_dtype.name, np_dtype.name)
        return self.base.view(getattr(torch, name))

    def __repr__(self) -> str:
        return f"TensorWrapper[{self.dtype}]({self.base!r})"


def reinterpret(tensor, dtype):
    """``tensor``'s memory as elements of ``dtype`` for a kernel launch (``TensorWrapper``).

    A wrapper whose dtype is ``tensor``'s own gives back the bare tensor, as in Triton.
    """
    if isinstance(tensor, TensorWrapper):
        tensor = tensor.base
    if dtype is None:
        return tensor
    return TensorWrapper(tensor, dtype)


__all__ = ["TensorWrapper", "reinterpret"]
