"""Memory semantics: loads, stores, atomics, block pointers, and the debugging side effects.

A load takes a tile of pointers (``x_ptr + offs``), an optional i1 ``mask`` and an
``other`` value for masked-off lanes; both are broadcast to the pointer tile's shape
and ``other`` is converted to the pointee type.

Block pointers (``tl.make_block_ptr``) are lowered here, in the frontend: a load
through one becomes an ordinary pointer tile ``base + sum_d off_d * stride_d + sum_d
arange(B_d) * stride_d`` (in i64, as Triton: the corner is a scalar, the tile inside the
block is the same at every offset, so a loop that advances the block pointer moves only
the corner and keeps the tile from before the loop) with a mask ``0 <= off_d + i < shape_d``
for each dimension listed in ``boundary_check`` (compared as ``low_d <= i < high_d``, two
scalar bounds per access: ``_inside``).
"""

from __future__ import annotations

from ..ir import ops
from ..ir import types as irt
from ..ir.ops.memory import Descriptor
from .errors import SemanticError
from .values import block_ptr, tensor, unwrap

_CACHE = ("", ".ca", ".cg", ".cs", ".cv", ".wb", ".wt", ".lu")
_EVICTION = ("", "evict_first", "evict_last", "evict_normal", "no_allocate")
_SEMS = ("relaxed", "acquire", "release", "acq_rel")
_SCOPES = ("gpu", "cta", "sys")
_FLOAT_ATOMICS = ("add", "max", "min", "xchg")


def _handle(v):
    return None if v is None else v.handle


class MemoryMixin:
    """Loads, stores, atomics, block pointers and debug ops for ``Semantic``."""

    def _pointer(self, ptr, what: str) -> tensor:
        ptr = self.to_tensor(ptr)
        if not ptr.type.element.is_pointer:
            raise SemanticError(f"{what} expects a pointer, got {ptr.type.element}")
        return ptr

    def _mask(self, mask, what: str) -> tensor | None:
        if unwrap(mask) is None:
            return None
        mask = self.to_tensor(mask)
        if not mask.type.element.is_bool:
            raise SemanticError(f"{what}'s mask must be a boolean (i1) tensor, got {mask.type.element}")
        return mask

    def _hint(self, value, allowed, what: str) -> str:
        value = unwrap(value) or ""
        if value not in allowed:
            raise SemanticError(f"{what} must be one of {', '.join(repr(a) for a in allowed if a)}, got {value!r}")
        return value

    # ------------------------------------------------------------------ load / store
    def load(
        self,
        ptr,
        mask=None,
        other=None,
        boundary_check=(),
        padding_option="",
        cache_modifier="",
        eviction_policy="",
        volatile=False,
        descriptor=None,
    ) -> tensor:
        """``tl.load``: read through a pointer tile (or a block pointer).

        ``descriptor`` (a ``tensor_descriptor``'s load: the descriptor and the block offsets)
        is recorded on the op (``LoadOp.descriptor``) for backends that copy boxes whole.
        """
        cache = self._hint(cache_modifier, _CACHE, "cache_modifier")
        evict = self._hint(eviction_policy, _EVICTION, "eviction_policy")
        if isinstance(ptr, block_ptr):
            ptr, mask, other = self._block_access(ptr, boundary_check, padding_option, "load")
        ptr = self._pointer(ptr, "load")
        mask = self._mask(mask, "load")
        if unwrap(other) is not None and mask is None:
            raise SemanticError("load's `other` needs a `mask`")
        if mask is not None:
            ptr, mask = self.broadcast(ptr, mask, what="load's pointer and mask")
        elem = ptr.type.element.pointee
        if unwrap(other) is not None:
            other = self.broadcast_to_shape(self.cast_scalar_to(other, elem), ptr.type.shape, "broadcast load's other")
        rtype = irt.tensor(ptr.type.shape, elem)
        op = ops.LoadOp(
            ptr.handle,
            rtype,
            _handle(mask),
            other.handle if isinstance(other, tensor) else None,
            cache,
            evict,
            bool(unwrap(volatile)),
            descriptor=self._descriptor_operands(*descriptor) if descriptor is not None else None,
        )
        return self.emit(op)

    def _descriptor_operands(self, desc, offsets) -> Descriptor:
        """The scalar values of descriptor ``desc`` (Python ints as i64 constants) and i32 ``offsets``."""
        sizes = [self.cast_scalar_to(v, irt.i64).handle if not isinstance(v, tensor) else v.handle
                 for v in (*desc.shape, *desc.strides)]  # fmt: skip
        rank = len(desc.shape)
        corner = tuple(self.cast_scalar_to(o, irt.i32).handle for o in offsets)
        return Descriptor(desc.base.handle, tuple(sizes[:rank]), tuple(sizes[rank:]), corner, desc.host)

    def store(
        self, ptr, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy="", descriptor=None
    ) -> None:
        """``tl.store``: write ``value`` (converted to the pointee type) where ``mask`` holds.

        ``descriptor`` as for ``load``: a ``tensor_descriptor``'s store records it on the op.
        """
        cache = self._hint(cache_modifier, _CACHE, "cache_modifier")
        evict = self._hint(eviction_policy, _EVICTION, "eviction_policy")
        if isinstance(ptr, block_ptr):
            ptr, mask, _ = self._block_access(ptr, boundary_check, "", "store")
        ptr = self._pointer(ptr, "store")
        mask = self._mask(mask, "store")
        if mask is not None:
            ptr, mask = self.broadcast(ptr, mask, what="store's pointer and mask")
        elem = ptr.type.element.pointee
        value = self.cast_scalar_to(value, elem)
        value = self.broadcast_to_shape(value, ptr.type.shape, "store a value of")
        described = self._descriptor_operands(*descriptor) if descriptor is not None else None
        self.builder.insert(ops.StoreOp(ptr.handle, value.handle, _handle(mask), cache, evict, descriptor=described))

    # ------------------------------------------------------------------ atomics
    def atomic(self, kind: str, ptr, val, mask=None, sem=None, scope=None) -> tensor:
        """``tl.atomic_<kind>``: read-modify-write; gives the old values."""
        ptr = self._pointer(ptr, f"atomic_{kind}")
        mask = self._mask(mask, f"atomic_{kind}")
        elem = ptr.type.element.pointee
        val = self.cast_scalar_to(val, elem)
        shape = self.broadcast_shapes(ptr.type.shape, val.type.shape, *([mask.type.shape] if mask is not None else []))
        ptr, val = self.broadcast_to_shape(ptr, shape), self.broadcast_to_shape(val, shape)
        if mask is not None:
            mask = self.broadcast_to_shape(mask, shape)
        if kind in ("and", "or", "xor") and not elem.is_int:
            raise SemanticError(f"atomic_{kind} needs an integer pointee, got {elem}")
        narrow = (
            elem.bits < 16 or (elem.is_int and elem.bits < 32) or (elem.is_float and elem.bits < 32 and kind != "add")
        )
        if narrow or (elem.is_float and kind not in _FLOAT_ATOMICS):
            raise SemanticError(f"atomic_{kind} does not support {elem}")  # as in Triton: of 16-bit floats, adds only
        if kind == "add" and elem.is_float:
            kind = "fadd"
        elif kind in ("max", "min") and elem.is_unsigned:
            kind = "u" + kind
        sem = self._hint(sem or "acq_rel", _SEMS, "sem")
        scope = self._hint(scope or "gpu", _SCOPES, "scope")
        return self.emit(ops.AtomicRMWOp(kind, ptr.handle, val.handle, _handle(mask), sem, scope))

    def atomic_cas(self, ptr, cmp, val, sem=None, scope=None) -> tensor:
        ptr = self._pointer(ptr, "atomic_cas")
        elem = ptr.type.element.pointee
        cmp, val = self.cast_scalar_to(cmp, elem), self.cast_scalar_to(val, elem)
        ptr, cmp, val = self.broadcast(ptr, cmp, val, what="atomic_cas")
        sem = self._hint(sem or "acq_rel", _SEMS, "sem")
        scope = self._hint(scope or "gpu", _SCOPES, "scope")
        return self.emit(ops.AtomicCASOp(ptr.handle, cmp.handle, val.handle, sem, scope))

    # ------------------------------------------------------------------ block pointers
    def make_block_ptr(self, base, shape, strides, offsets, block_shape, order) -> block_ptr:
        """A block pointer over a ``shape`` array with ``strides``, at ``offsets``, reading ``block_shape`` tiles."""
        base = self._pointer(base, "make_block_ptr")
        if base.type.is_tensor:
            raise SemanticError("make_block_ptr's base must be a scalar pointer")
        block_shape = self.constexpr_shape(block_shape, "make_block_ptr's block_shape")
        order = tuple(self.constexpr_int(o, "make_block_ptr's order") for o in unwrap(order))
        lists = [list(unwrap(v)) for v in (shape, strides, offsets)]
        if any(len(v) != len(block_shape) for v in (*lists, order)):
            raise SemanticError(
                f"make_block_ptr: shape, strides, offsets and order need {len(block_shape)} entries "
                f"(one per block_shape dimension)"
            )
        shape = [self.cast_scalar_to(v, irt.i64) for v in lists[0]]
        strides = [self.cast_scalar_to(v, irt.i64) for v in lists[1]]
        offsets = [self.cast_scalar_to(v, irt.i32) for v in lists[2]]
        return block_ptr(base, shape, strides, offsets, block_shape, order)

    def advance(self, bp, offsets) -> block_ptr:
        """The block pointer moved by ``offsets`` (one per dimension)."""
        if not isinstance(bp, block_ptr):
            raise SemanticError(f"advance expects a block pointer, got {bp!r}")
        offsets = list(unwrap(offsets))
        if len(offsets) != len(bp.offsets):
            raise SemanticError(f"advance needs {len(bp.offsets)} offsets, got {len(offsets)}")
        moved = [self.binary("+", old, self.cast_scalar_to(d, irt.i32)) for old, d in zip(bp.offsets, offsets)]
        return block_ptr(bp.base, bp.shape, bp.strides, moved, bp.block_shape, bp.order)

    def _block_access(self, bp: block_ptr, boundary_check, padding, what):
        """Pointer tile, mask and padding value for an access through a block pointer."""
        checks = unwrap(boundary_check) or ()
        checks = {self.constexpr_int(c, "boundary_check entries") for c in checks}
        rank = len(bp.block_shape)
        base = bp.base
        for off, stride in zip(bp.offsets, bp.strides):  # the block's corner: scalars, once per access
            base = self.binary("+", base, self.binary("*", self.cast_scalar_to(off, irt.i64), stride))
        ptr, mask = self.broadcast_to_shape(base, bp.block_shape), None
        for d, size in enumerate(bp.block_shape):
            idx = self.arange(0, size)  # inside the block: the same tile at every offset
            for _ in range(d):
                idx = self.expand_dims(idx, 0)
            for _ in range(d + 1, rank):
                idx = self.expand_dims(idx, -1)
            ptr = self.binary("+", ptr, self.binary("*", self.cast(idx, irt.i64), bp.strides[d]))
            if d in checks:
                inside = self._inside(idx, bp.offsets[d], bp.shape[d], size)
                inside = self.broadcast_to_shape(inside, bp.block_shape)
                mask = inside if mask is None else self.logical("and", mask, inside)
        padding = unwrap(padding) or ""
        if padding not in ("", "zero", "nan"):
            raise SemanticError(f"padding_option must be 'zero' or 'nan', got {padding!r}")
        other = None
        if mask is not None and padding:
            other = 0 if padding == "zero" else float("nan")
        return ptr, mask, other

    def _inside(self, idx, off, shape, size: int):
        """``0 <= off + idx < shape`` for ``idx`` in ``[0, size)``, compared in i32.

        As ``low <= idx < high`` with the bounds ``-off`` and ``shape - off`` worked out once,
        in i64 (no wrap-around, as Triton's i64 offsets), and clamped to ``[0, size]``: a
        scalar pair per access, then one i32 compare per element and bound.
        """
        off = self.cast_scalar_to(off, irt.i64)

        def bound(v):
            v = self.minmax("min", self.minmax("max", v, 0), size)
            return self.cast_scalar_to(v, irt.i32)

        low, high = bound(self.binary("-", 0, off)), bound(self.binary("-", shape, off))
        return self.logical("and", self.compare(">=", idx, low), self.compare("<", idx, high))

    # ------------------------------------------------------------------ debugging and hints
    def device_print(self, prefix, args, hex=False) -> None:
        values = [self.to_tensor(a).handle for a in args]
        self.builder.insert(ops.PrintOp(str(unwrap(prefix)), values, bool(unwrap(hex))))

    def device_assert(self, cond, msg="") -> None:
        cond = self.cast(self.to_tensor(cond), irt.i1)
        self.builder.insert(ops.AssertOp(cond.handle, str(unwrap(msg))))

    def debug_barrier(self) -> None:
        self.builder.insert(ops.BarrierOp())

    def hint(self, x, kind: str, values) -> tensor:
        x = self.to_tensor(x)
        values = unwrap(values)
        values = tuple(values) if isinstance(values, (tuple, list)) else (values,)
        values = tuple(self.constexpr_int(v, f"{kind}'s values") for v in values)
        rank = max(1, len(x.type.shape))
        if len(values) == 1 and rank > 1:
            values = values * rank
        if len(values) != rank:
            raise SemanticError(f"{kind} needs {rank} values (one per dimension), got {len(values)}")
        return self.emit(ops.HintOp(x.handle, kind, values))
