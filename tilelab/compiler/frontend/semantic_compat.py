"""Triton builtins composed from other ops (item, xor_sum, reduce_or, tensor descriptors), histogram and gather.

A mixin of ``Semantic``. All but ``histogram`` and ``gather`` are built in the frontend from ops every
backend already lowers; those two check their operands and emit an op of their own::

    tl.histogram(x, 4)        -> tt.histogram x : tensor<4xi32>   (values outside 0..3 count nowhere)
    desc.load([i, j])         -> a block-pointer load with every dimension bounds-checked, zero padding
    tl.gather(src, idx, 0)    -> tt.gather src, idx {axis = 0}
"""

from __future__ import annotations

from ..ir import ops
from ..ir import types as irt
from .errors import SemanticError
from .values import tensor, tensor_descriptor, unwrap


class CompatMixin:
    """Builtins composed from other ops, for ``Semantic``."""

    def item(self, x) -> tensor:
        """The one element of a one-element tensor, as a scalar."""
        x = self.to_tensor(x)
        if not x.type.is_tensor:
            return x
        if x.type.numel != 1:
            raise SemanticError(f"item() needs a tensor of one element, got shape {list(x.type.shape)}")
        return self.reduce([x], None, lambda lhs, rhs: lhs)[0]

    def histogram(self, x, num_bins, mask=None) -> tensor:
        """Counts of each value ``0..num_bins-1`` among ``x``'s elements (where ``mask`` holds), as int32."""
        x = self.to_tensor(x)
        if len(x.type.shape) != 1 or not x.type.element.is_int:
            raise SemanticError(f"histogram needs a 1-d integer tensor, got {x.type}")
        bins = self.constexpr_int(num_bins, "histogram's num_bins")
        if bins < 1 or bins & (bins - 1):
            raise SemanticError(f"histogram's num_bins must be a power of two, got {bins}")
        keep = None
        if unwrap(mask) is not None:
            keep = self.broadcast_to_shape(self.to_tensor(mask), x.type.shape, "histogram's mask")
            if not keep.type.element.is_bool:
                raise SemanticError(f"histogram's mask must be a boolean (i1) tensor, got {keep.type.element}")
        return self.emit(ops.HistogramOp(x.handle, irt.tensor((bins,), irt.i32), None if keep is None else keep.handle))

    def gather(self, src, index, axis) -> tensor:
        """``out[..i..] = src[..index[..i..]..]`` along ``axis`` (other dimensions equal; an index taken modulo
        ``src``'s extent there, so -1 is the last)."""
        src, index = self.to_tensor(src), self.to_tensor(index)
        rank = len(src.type.shape)
        if rank == 0 or len(index.type.shape) != rank or not index.type.element.is_int:
            raise SemanticError(f"gather needs src and an integer index of one rank, got {src.type} and {index.type}")
        axis = self._axis(axis, rank, "gather")
        for d in range(rank):
            if d != axis and src.type.shape[d] != index.type.shape[d]:
                shapes = f"src {list(src.type.shape)} and index {list(index.type.shape)}"
                raise SemanticError(f"gather: {shapes} differ in dim {d}")
        return self.emit(ops.GatherOp(src.handle, index.handle, irt.tensor(index.type.shape, src.type.element), axis))

    def bitwise_reduce(self, x, axis, kind, keep_dims=False) -> tensor:
        """``xor_sum`` / ``reduce_or``: an integer reduction with ``xor`` / ``or``."""
        x = self.to_tensor(x)
        if not x.type.element.is_int:
            raise SemanticError(f"{'xor_sum' if kind == 'xor' else 'reduce_or'} only supported for integers")
        return self._binary_reduce(x, axis, kind, keep_dims)

    def make_tensor_descriptor(
        self, base, shape, strides, block_shape, padding="zero", host=False
    ) -> tensor_descriptor:
        """A descriptor of a ``shape`` array at ``base``; out-of-bounds reads give ``padding`` (zero or nan).

        ``host``: a launch argument, whose alignment and strides the launch checked (TMA may copy its blocks).
        """
        base = self._pointer(base, "make_tensor_descriptor")
        block_shape = list(self.constexpr_shape(block_shape, "make_tensor_descriptor's block_shape"))
        shape, strides = list(unwrap(shape)), list(unwrap(strides))
        if not len(shape) == len(strides) == len(block_shape):
            raise SemanticError("make_tensor_descriptor: shape, strides and block_shape need one entry per dimension")
        if block_shape[-1] * base.type.element.pointee.bits // 8 < 16:
            raise SemanticError("Descriptor block shape must have at least 16 bytes in the last dimension")
        padding = unwrap(padding)
        if padding not in ("zero", "nan"):
            raise SemanticError(f"make_tensor_descriptor: padding_option must be 'zero' or 'nan', got {padding!r}")
        if padding == "nan" and not base.type.element.pointee.is_float:
            raise SemanticError("make_tensor_descriptor: padding 'nan' needs a floating-point tensor")
        return tensor_descriptor(base, shape, strides, block_shape, padding, host)
