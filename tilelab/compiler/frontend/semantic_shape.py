"""Shape semantics: expand_dims, reshape, permute, join/split, cat, interleave, flip, indexing.

A mixin of ``Semantic``: every method takes tensors, checks the shapes, and emits
one shape op (or a few) through ``self.emit``.

    x[:, None]            -> tt.expand_dims {axis = 1}
    tl.reshape(x, (4, 32)) -> tt.reshape (same number of elements)
"""

from __future__ import annotations

from ..ir import ops
from ..ir import types as irt
from .errors import SemanticError
from .values import tensor, unwrap


class ShapeMixin:
    """Shape manipulation for ``Semantic``."""

    def shape_args(self, shape) -> tuple[int, ...]:
        """``f(x, (2, 3))`` and ``f(x, 2, 3)`` both give ``(2, 3)``; every entry a compile-time int."""
        shape = tuple(shape)
        if len(shape) == 1 and isinstance(unwrap(shape[0]), (tuple, list)):
            shape = tuple(unwrap(shape[0]))
        return tuple(self.constexpr_int(d, "shape entries") for d in shape)

    def _axis(self, axis, rank: int, what: str, extra: int = 0) -> int:
        axis = self.constexpr_int(axis, f"{what}'s axis")
        if not -(rank + extra) <= axis < rank + extra:
            n = rank + extra
            raise SemanticError(f"{what}: invalid axis {axis}. Expected {-n} <= axis < {n} (a tensor of rank {rank})")
        return axis % (rank + extra)

    def expand_dims(self, x, axis) -> tensor:
        """A new size-1 dimension at ``axis`` (or at each of a list of axes)."""
        x = self.to_tensor(x)
        axis = unwrap(axis)
        if isinstance(axis, (tuple, list)):
            # as in Triton: every axis counts in the result's rank, normalized before sorting
            rank = len(x.type.shape) + len(axis)
            axes = [self._axis(a, rank, "expand_dims") for a in axis]
            if len(set(axes)) != len(axes):
                raise SemanticError(f"expand_dims: duplicate axes, normalized axes = {axes}")
            for a in sorted(axes):
                x = self.expand_dims(x, a)
            return x
        shape = list(x.type.shape)
        axis = self._axis(axis, len(shape), "expand_dims", extra=1)
        shape.insert(axis, 1)
        return self.emit(ops.ExpandDimsOp(x.handle, irt.tensor(shape, x.type.element), axis=axis))

    def subscript(self, x: tensor, index) -> tensor:
        """``x[None, :]``: ``None`` inserts a size-1 dimension, ``:`` keeps one."""
        index = unwrap(index)
        index = index if isinstance(index, tuple) else (index,)
        dim = 0
        for item in index:
            item = unwrap(item)
            if item is None:
                x = self.expand_dims(x, dim)
                dim += 1
            elif isinstance(item, slice) and item == slice(None):
                dim += 1
            else:
                raise SemanticError(
                    f"unsupported tensor index: {item!r} (tensors can only be indexed with None and ':')"
                )
        return x

    def reshape(self, x, shape, can_reorder=False) -> tensor:
        """Same elements, new shape (row-major); the element count must stay the same."""
        x = self.to_tensor(x)
        shape = self.shape_args(shape)
        n = 1
        for d in shape:
            n *= d
        if n != x.type.numel:
            raise SemanticError(f"cannot reshape {list(x.type.shape)} ({x.type.numel} elements) to {list(shape)}")
        if tuple(shape) == tuple(x.type.shape):
            return x
        rtype = irt.tensor(shape, x.type.element)
        if not shape:
            raise SemanticError("cannot reshape to a scalar")
        return self.emit(ops.ReshapeOp(x.handle, rtype, can_reorder=bool(unwrap(can_reorder))))

    def permute(self, x, dims) -> tensor:
        """Dimensions reordered: result dim ``i`` is source dim ``dims[i]``; no dims swaps a 2-d tile."""
        x = self.to_tensor(x)
        rank = len(x.type.shape)
        dims = tuple(unwrap(dims) or ())
        if len(dims) == 1 and isinstance(unwrap(dims[0]), (tuple, list)):
            dims = tuple(unwrap(dims[0]))
        if not dims:
            if rank != 2:
                raise SemanticError(f"trans without dims needs a 2-d tensor, got shape {list(x.type.shape)}")
            dims = (1, 0)
        dims = tuple(self.constexpr_int(d, "permute's dims") for d in dims)
        if sorted(dims) != list(range(rank)):
            raise SemanticError(f"permute's dims {list(dims)} are not a permutation of {list(range(rank))}")
        shape = [x.type.shape[d] for d in dims]
        return self.emit(ops.TransOp(x.handle, irt.tensor(shape, x.type.element), order=dims))

    def join(self, a, b) -> tensor:
        """Two tiles of one shape stacked along a new last dimension of size 2."""
        a, b = self.promote(a, b, "join")
        shape = (*a.type.shape, 2)
        return self.emit(ops.JoinOp(a.handle, b.handle, irt.tensor(shape, a.type.element)))

    def split(self, x) -> tuple[tensor, tensor]:
        """The inverse of join: a tile whose last dimension is 2 gives two tiles."""
        x = self.to_tensor(x)
        shape = x.type.shape
        if not shape or shape[-1] != 2:
            raise SemanticError(f"split needs a last dimension of size 2, got shape {list(shape)}")
        if len(shape) == 1:  # two scalars: the pair's first and second element (an ordered 2-element reduce)
            first = self.reduce([x], 0, lambda lhs, rhs: lhs)[0]
            return first, self.reduce([x], 0, lambda lhs, rhs: rhs)[0]
        op = ops.SplitOp(x.handle, irt.tensor(shape[:-1], x.type.element))
        self.builder.insert(op)
        return tensor(op.results[0], self), tensor(op.results[1], self)

    def interleave(self, a, b) -> tensor:
        """Elements of ``a`` and ``b`` alternating along the last dimension."""
        joined = self.join(a, b)
        if len(joined.type.shape) == 1:  # two scalars: the pair itself
            return joined
        shape = list(joined.type.shape[:-2]) + [joined.type.shape[-2] * 2]
        return self.reshape(joined, shape)

    def cat(self, a, b, can_reorder=False) -> tensor:
        """``a`` and ``b`` concatenated along dimension 0 (same shapes and dtypes)."""
        a, b = self.to_tensor(a), self.to_tensor(b)
        if a.type != b.type:
            raise SemanticError(f"cat needs tensors of one type, got {a.type} and {b.type}")
        shape = (a.type.shape[0] * 2, *a.type.shape[1:])
        return self.emit(ops.CatOp(a.handle, b.handle, irt.tensor(shape, a.type.element)))

    def flip(self, x, dim=None) -> tensor:
        """Elements reversed along ``dim`` (the last one by default)."""
        x = self.to_tensor(x)
        rank = len(x.type.shape)
        dim = rank - 1 if unwrap(dim) is None else self._axis(dim, rank, "flip")
        return self.emit(ops.FlipOp(x.handle, x.type, dim=dim))

    def sort(self, x, dim=None, descending=False) -> tensor:
        """Elements sorted along ``dim`` (the last one by default)."""
        x = self.to_tensor(x)
        rank = len(x.type.shape)
        dim = rank - 1 if unwrap(dim) is None else self._axis(dim, rank, "sort")
        return self.emit(ops.SortOp(x.handle, x.type, dim=dim, descending=bool(unwrap(descending))))

    def _along_last(self, x, dim, what: str) -> tuple[tensor, list]:
        """``x`` as a tensor and its shape, when ``dim`` is None or names its last dimension (as Triton's)."""
        x = self.to_tensor(x)
        shape = list(x.type.shape)
        if not shape or (unwrap(dim) is not None and self._axis(dim, len(shape), what) != len(shape) - 1):
            raise SemanticError(f"{what} works along the last dimension only (as Triton's)")
        return x, shape

    def topk(self, x, k, dim=None) -> tensor:
        """The ``k`` largest elements along the last dimension, largest first (Triton's ``tl.topk``).

        Sorted descending, then the row of ``[..., n // k, k]`` that holds the first ``k``:
        a reduction that keeps its first operand takes it exactly (NaN and -0.0 included).
        """
        x, shape = self._along_last(x, dim, "topk")
        rank = len(shape)
        n, k = shape[-1], self.constexpr_int(k, "topk's k")
        if k < 1 or k > n or k & (k - 1) or n & (n - 1):
            raise SemanticError(f"topk needs k and the dimension's size to be powers of two, k <= {n}; got k={k}")
        top = self.sort(x, rank - 1, descending=True)
        if k == n:
            return top
        groups = self.reshape(top, shape[:-1] + [n // k, k])
        return self.reduce([groups], rank - 1, lambda lhs, rhs: lhs)[0]

    def bitonic_merge(self, x, dim=None, descending=False) -> tensor:
        """The last merge phase of a bitonic sort along the last dimension (Triton's ``tl.bitonic_merge``).

        For each distance ``d = n/2, n/4, ..., 1``, the pairs ``(j, j + d)`` of each block of ``2 * d``
        compare and swap: the left one takes the right one's value where ``left > right`` (``<=`` when
        ``descending``), the right one takes the left one's where ``right <= left`` (``>``), as
        Triton's network does, NaNs included. A bitonic row comes out sorted::

            [1, 4, 6, 7, 8, 5, 3, 2]  ->  [1, 2, 3, 4, 5, 6, 7, 8]
        """
        x, shape = self._along_last(x, dim, "bitonic_merge")
        rank = len(shape)
        n = shape[-1]
        if n & (n - 1):
            raise SemanticError(f"bitonic_merge needs a power-of-two last dimension, got {n}")
        down = bool(unwrap(descending))
        d = n // 2
        while d >= 1:
            pairs = self.reshape(x, [*shape[:-1], n // (2 * d), 2, d])
            block = [*range(rank), rank + 1, rank]  # the pair's axis last: [..., n / 2d, d, 2]
            left, right = self.split(self.permute(pairs, block))
            take_right = self.compare(">", left, right)
            take_left = self.compare(">", right, left)
            if down:
                take_right = self.unary("not", take_right)
            else:
                take_left = self.unary("not", take_left)
            joined = self.join(self.where(take_right, right, left), self.where(take_left, left, right))
            x = self.reshape(self.permute(joined, block), shape)
            d //= 2
        return x

    def squeeze(self, x, dim) -> tensor:
        """``x`` without its size-1 dimension ``dim``."""
        x = self.to_tensor(x)
        shape = list(x.type.shape)
        dim = self._axis(dim, len(shape), "squeeze")
        if shape[dim] != 1:
            raise SemanticError(f"squeeze: dimension {dim} of {shape} has size {shape[dim]}, not 1")
        return self.reshape(x, shape[:dim] + shape[dim + 1 :])

    def unsqueeze(self, x, dim) -> tensor:
        """``x`` with a size-1 dimension inserted before ``dim`` (Python's slicing of the shape, as Triton's)."""
        x = self.to_tensor(x)
        shape, dim = list(x.type.shape), self.constexpr_int(dim, "unsqueeze's dim")
        return self.reshape(x, shape[:dim] + [1] + shape[dim:])

    def broadcast_pair(self, a, b) -> tuple[tensor, tensor]:
        """``tl.broadcast(a, b)``: both stretched to their common shape."""
        return tuple(self.broadcast(self.to_tensor(a), self.to_tensor(b), what="broadcast"))
