"""``tl.dot_scaled``: the matrix product of microscaled (MX) tiles, as Triton emulates it without MX hardware.

An MX operand is a tile of narrow codes plus one ``e8m0`` scale (a byte ``s``: ``2 ** (s - 127)``)
per group of K elements (32 in the OCP MX formats). Each operand is decoded to its values and
multiplied by its group's scale, then both go through ``tl.dot`` in fp16 when either format is
fp16, else in bf16, accumulating in f32::

    lhs [M, K // 2] u8 (e2m1, two codes a byte, the first in the low bits), lhs_scale [M, K // 32] u8
    rhs [K, N] fp16 (no scale)
    tl.dot_scaled(lhs, lhs_scale, "e2m1", rhs, None, "fp16")   # [M, N] f32

Decoded values and power-of-two scales are exact in bf16 (its exponent range is f32's), so the
products are the exact ones an f32 product gives; in fp16 a large scale can overflow, as in
Triton's emulation. All of it is built from existing ops (integer bit operations, bitcasts,
``join`` / ``permute`` / ``reshape``, ``dot``), so every target runs it as it runs those.
"""

from __future__ import annotations

from ..ir import types as irt
from .errors import SemanticError
from .values import tensor, to_ir_type, unwrap

FORMATS = ("e2m1", "e4m3", "e5m2", "bf16", "fp16")
_FP8 = {"e4m3": irt.fp8e4nv, "e5m2": irt.fp8e5}
_WIDE = {"bf16": irt.bf16, "fp16": irt.f16}


class ScaledDotMixin:
    """``dot_scaled`` for ``Semantic``."""

    def dot_scaled(self, lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, fast_math=False,
                   lhs_k_pack=True, rhs_k_pack=True, out_dtype=None) -> tensor:  # fmt: skip
        """``acc + decode(lhs) @ decode(rhs)`` in f32 (see the module docstring)."""
        lhs_format, rhs_format = unwrap(lhs_format), unwrap(rhs_format)
        for side, fmt in (("lhs", lhs_format), ("rhs", rhs_format)):
            if fmt not in FORMATS:
                raise SemanticError(f"dot_scaled: {side}_format must be one of {', '.join(FORMATS)}, got {fmt!r}")
        if unwrap(out_dtype) is not None and to_ir_type(unwrap(out_dtype)) != irt.f32:
            raise SemanticError(f"dot_scaled: out_dtype must be float32 (as Triton's), got {unwrap(out_dtype)}")
        lhs, rhs = self.to_tensor(lhs), self.to_tensor(rhs)
        if len(lhs.type.shape) not in (2, 3) or len(lhs.type.shape) != len(rhs.type.shape):
            raise SemanticError(
                f"dot_scaled needs two 2-d (or two 3-d) tiles, "
                f"got shapes {list(lhs.type.shape)} and {list(rhs.type.shape)}"
            )
        fast = bool(unwrap(fast_math))
        a = self._mx_values(lhs, lhs_format, bool(unwrap(lhs_k_pack)), k_axis=-1, side="lhs")
        b = self._mx_values(rhs, rhs_format, bool(unwrap(rhs_k_pack)), k_axis=-2, side="rhs")
        k = a.type.shape[-1]
        if b.type.shape[-2] != k:
            raise SemanticError(
                f"dot_scaled: the operands hold {k} and {b.type.shape[-2]} elements along K "
                f"(lhs {list(lhs.type.shape)} {lhs_format}, rhs {list(rhs.type.shape)} {rhs_format})"
            )
        if unwrap(lhs_scale) is not None:
            a = self.binary("*", a, self._mx_scales(lhs_scale, a.type.shape, k, fast, "lhs"))
        if unwrap(rhs_scale) is not None:
            n_first = [*b.type.shape[:-2], b.type.shape[-1], k]  # rhs_scale is [N, K // group], not transposed
            scales = self._mx_scales(rhs_scale, n_first, k, fast, "rhs")
            rank = len(n_first)
            b = self.binary("*", b, self.permute(scales, [*range(rank - 2), rank - 1, rank - 2]))
        comp = irt.f16 if "fp16" in (lhs_format, rhs_format) else irt.bf16
        return self.dot(self.cast(a, comp), self.cast(b, comp), acc)

    def _mx_values(self, x: tensor, fmt: str, k_pack: bool, k_axis: int, side: str) -> tensor:
        """The operand's values as an f32 tile: e2m1 codes unpacked (along K, else along M / N), fp8 and
        16-bit formats converted (from their bytes or 16-bit words, or from tiles of that type)."""
        elem = x.type.element
        if fmt == "e2m1":
            if elem.name not in ("u8", "i8"):
                raise SemanticError(f"dot_scaled: {side} in e2m1 holds two codes a byte (u8 or i8), got {elem}")
            rank = len(x.type.shape)
            across = rank - 2 if k_axis == -1 else rank - 1  # M for lhs, N for rhs
            return self._unpack_e2m1(x, rank + k_axis if k_pack else across)
        if not k_pack:
            raise SemanticError(f"dot_scaled: only e2m1 {side} may be packed along a dimension other than K")
        wanted = _FP8.get(fmt) or _WIDE[fmt]
        if elem != wanted:
            if elem.is_float or elem.bits != wanted.bits:
                raise SemanticError(f"dot_scaled: {side} in {fmt} needs {wanted} values or their bits, got {elem}")
            x = self.cast(x, wanted, bitcast=True)
        return self.cast(x, irt.f32)

    def _unpack_e2m1(self, x: tensor, axis: int) -> tensor:
        """f32 values of the e2m1 codes of ``x``'s bytes (low nibble first), doubling dimension ``axis``.

        A code is sign, 2 exponent bits, 1 mantissa bit: exponent 0 gives 0 or 0.5, else
        ``2 ** (e - 1) * (1 + m / 2)``; its f32 bits are built directly: ``(e + 126) << 23 | m << 22``.
        """
        codes = self.cast(self.cast(x, irt.u8, bitcast=True), irt.u32)
        halves = []
        for nibble in (self.binary("&", codes, 0xF), self.binary("&", self.binary(">>", codes, 4), 0xF)):
            sign = self.binary("<<", self.binary("&", nibble, 0x8), 28)
            e = self.binary("&", self.binary(">>", nibble, 1), 0x3)
            m = self.binary("&", nibble, 0x1)
            normal = self.binary("|", self.binary("<<", self.binary("+", e, 126), 23), self.binary("<<", m, 22))
            small = self.binary("*", m, 126 << 23)  # 0.5 or 0
            bits = self.binary("|", self.where(self.compare("!=", e, 0), normal, small), sign)
            halves.append(self.cast(bits, irt.f32, bitcast=True))
        joined = self.join(*halves)  # [..., 2]: the low nibble's value first
        shape = list(x.type.shape)
        rank = len(shape)
        if axis != rank - 1:  # the pair goes right after ``axis``
            joined = self.permute(joined, [*range(axis + 1), rank, *range(axis + 1, rank)])
        shape[axis] *= 2
        return self.reshape(joined, shape)

    def _mx_scales(self, scale, shape: list, k: int, fast: bool, side: str) -> tensor:
        """``2 ** (s - 127)`` of each e8m0 byte (255: NaN unless ``fast``), repeated over its K group, as ``shape``."""
        scale = self.to_tensor(scale)
        groups = scale.type.shape[-1] if scale.type.shape else 0
        if (
            scale.type.element.name not in ("u8", "i8")
            or list(scale.type.shape[:-1]) != list(shape[:-1])
            or not groups
            or k % groups
        ):
            raise SemanticError(
                f"dot_scaled: {side}_scale must be e8m0 bytes (u8) of shape {list(shape[:-1])} + [K // group], "
                f"K = {k}; got {scale.type.element} {list(scale.type.shape)}"
            )
        wide = self.cast(self.cast(scale, irt.u8, bitcast=True), irt.u32)
        value = self.cast(self.binary("<<", wide, 23), irt.f32, bitcast=True)
        if not fast:
            value = self.where(self.compare("==", wide, 255), float("nan"), value)
        group = k // groups
        spread = self.broadcast_to_shape(self.expand_dims(value, len(shape)), [*shape[:-1], groups, group])
        return self.reshape(spread, shape)
