"""Which values of a 1-D kernel lanes.py can compute lane-wise, and how: the *plan*, found before any code is emitted.

Over one chunk of lanes ``[i, i + width)`` a 1-D tile value has one of four *kinds*:

* ``uniform`` -- every lane holds the same scalar (splats, constants, scalars), computed
  once before the loop;
* ``affine`` -- integer lanes ``base + j`` (``make_range``, plus or minus uniforms, integer casts);
* ``vector`` -- an LLVM vector of the lanes (anything else lanes.py can compute);
* ``contiguous`` -- pointer lanes ``p + j`` elements (a uniform pointer plus an affine offset).

A value of no kind (a gather, a 2-D tile, an op lanes.py does not compute) makes the plan
``None``: its loops stay element by element. The plan also lists the affine values whose
lanes must not wrap (``exact``: lanes.py checks them with ``Bounds``) and the loads read
inside the loop.

    offs = pid * 1024 + arange(0, 1024)   # affine  (exact: must not wrap i32)
    x = load(x_ptr + offs, offs < n)       # x_ptr + offs contiguous, offs < n vector, x vector
    y = x * 2.0                            # 2.0 uniform, y vector
"""

from __future__ import annotations

from llvmlite import ir

from tilelab.compiler.ir.core import Value
from tilelab.compiler.ir.ops import (
    AddPtrOp,
    BinaryOp,
    BroadcastOp,
    CastOp,
    CmpOp,
    ConstantOp,
    ExpandDimsOp,
    FmaOp,
    HintOp,
    LoadOp,
    MakeRangeOp,
    ReshapeOp,
    SelectOp,
    SplatOp,
    UnaryOp,
)
from tilelab.compiler.ir.traits import Elementwise

from .context import Tile

#: bytes of one chunk of lanes: an AVX-512 register (LLVM splits it where vectors are narrower)
LANE_BYTES = 64
UNIFORM, AFFINE, VECTOR, CONTIGUOUS = "uniform", "affine", "vector", "contiguous"
#: ops whose lanes are those of their first operand (same 1-D shape)
SAME_LANES = (HintOp, ReshapeOp, ExpandDimsOp, BroadcastOp)
FLOATS = ("f16", "f32", "f64")
FLOAT_BINARY = ("add", "sub", "mul", "div", "fdiv", "min", "max")
INT_BINARY = ("add", "sub", "mul", "and", "or", "xor", "shl", "shr", "min", "max")
#: float unary kinds and their LLVM intrinsics (``neg`` is ``fneg``)
FLOAT_UNARY = {
    "neg": None,
    "abs": "fabs",
    "sqrt": "sqrt",
    "sqrt_rn": "sqrt",
    "floor": "floor",
    "ceil": "ceil",
    "trunc": "trunc",
    "rint": "rint",
}
PREDICATES = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


class Lane:
    """A value over one chunk: ``uniform`` / ``affine`` / ``contiguous`` hold lane 0's scalar."""

    __slots__ = ("kind", "value")

    def __init__(self, kind: str, value: ir.Value):
        self.kind, self.value = kind, value


class Plan:
    """What computing ``roots`` lane-wise needs: found by ``Plan.of`` before any code is emitted."""

    def __init__(self, lw):
        self.lw = lw
        self.kinds: dict[Value, str | None] = {}
        self.exact: list[Value] = []  # affine values whose lanes must not wrap
        self.loads: list = []  # lazy loads read inside the loop
        self.widest = 0  # bytes of the widest element read or written

    def touches(self, elem) -> None:
        """Note an element type the loop reads or writes (the widest sets the number of lanes)."""
        self.widest = max(self.widest, elem.itemsize)

    @classmethod
    def of(cls, lw, roots) -> Plan | None:
        plan = cls(lw)
        return plan if all(plan.kind(v) is not None for v in roots) else None

    def width(self, numel: int) -> int:
        """Lanes per iteration: ``LANE_BYTES`` of the widest element in memory, at most the tile.

        As LLVM's vectorizer, which sizes vectors by the loads and stores: wider arithmetic
        (``i64`` index compares) takes two registers per operation.
        """
        return max(1, min(numel, LANE_BYTES // (self.widest or 4)))

    # ----------------------------------------------------------------- kinds
    def kind(self, v: Value | None) -> str | None:
        if v is None:
            return UNIFORM
        if v not in self.kinds:
            self.kinds[v] = self._kind(v)
        return self.kinds[v]

    def _kind(self, v: Value) -> str | None:
        t = v.type
        if not t.is_tensor:
            return UNIFORM
        if len(t.shape) != 1 or not (t.element.is_pointer or t.element.name in _ELEMENTS):
            return None
        x = self.lw.values.get(v)
        if not isinstance(x, Tile):
            return None
        if self.lw.substitutes.get(id(x), x).buf is not None:
            self.touches(t.element)
            return VECTOR
        op = v.defining_op
        if isinstance(op, (SplatOp, ConstantOp)):
            return UNIFORM
        if isinstance(op, MakeRangeOp):
            return AFFINE
        if isinstance(op, SAME_LANES):
            same = op.operands[0].type.is_tensor and op.operands[0].type.shape == t.shape
            return self.kind(op.operands[0]) if same else None
        kinds = [self.kind(x) for x in op.operands]
        if None in kinds:
            return None
        if isinstance(op, AddPtrOp):
            return self._addptr(op, *kinds)
        if isinstance(op, LoadOp):
            return self._load(op, kinds)
        if all(k == UNIFORM for k in kinds):
            return UNIFORM if op.has_trait(Elementwise) else None
        if _keeps_affine(op, kinds):
            return AFFINE
        if isinstance(op, CastOp) and kinds[0] == AFFINE and _int_to_int(op):  # exact where the source does not wrap
            self.exact.append(op.operands[0])
            return AFFINE
        return VECTOR if _vectorizable(op) and CONTIGUOUS not in kinds else None

    def _addptr(self, op, ptr: str, offset: str) -> str | None:
        if ptr == UNIFORM and offset == UNIFORM:
            return UNIFORM
        if (ptr, offset) == (UNIFORM, AFFINE):
            self.exact.append(op.operands[1])
            return CONTIGUOUS
        return CONTIGUOUS if (ptr, offset) == (CONTIGUOUS, UNIFORM) else None

    def _load(self, op, kinds) -> str | None:
        if kinds[0] != CONTIGUOUS or CONTIGUOUS in kinds[1:] or op.attrs.get("volatile"):
            return None
        self.touches(op.result.type.element)
        self.loads.append(op)
        return VECTOR


_ELEMENTS = FLOATS + ("i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")


def _keeps_affine(op, kinds) -> bool:
    """``affine + uniform``, ``uniform + affine``, ``affine - uniform``: still ``base + j``."""
    if not isinstance(op, BinaryOp) or AFFINE not in kinds or UNIFORM not in kinds:
        return False
    return op.kind == "add" or (op.kind == "sub" and kinds[0] == AFFINE)


def _int_to_int(op) -> bool:
    src, dst = op.operands[0].type.element, op.result.type.element
    return src.is_int and dst.is_int and not src.is_bool and not dst.is_bool


def _vectorizable(op) -> bool:
    """Whether ``Lanes`` computes ``op`` on vectors (the rest goes element by element)."""
    t = op.result.type.element
    src = op.operands[-1].type.element if isinstance(op, SelectOp) else op.operands[0].type.element
    if t.is_pointer or src.is_pointer:
        return False
    if isinstance(op, BinaryOp):
        if t.is_float:
            return t.name in FLOATS and op.kind in FLOAT_BINARY
        return op.kind in INT_BINARY and not t.is_bool
    if isinstance(op, CmpOp):
        return src.name in _ELEMENTS
    if isinstance(op, SelectOp):
        return True
    if isinstance(op, FmaOp):
        return t.name in FLOATS
    if isinstance(op, UnaryOp):
        if t.is_float:
            return t.name in FLOATS and src.name == t.name and op.kind in FLOAT_UNARY
        return op.kind in ("neg", "not") and not t.is_bool
    if isinstance(op, CastOp):
        how = conversion(src, t)
        return how is not None and (how != "fptrunc" or op.attrs.get("rounding", "rtne") == "rtne")
    return False


def conversion(src, dst) -> str | None:
    """The one LLVM conversion ``tt.cast`` from ``src`` to ``dst`` takes (as convert.py), if simple."""
    if src.is_pointer or dst.is_pointer or src.name not in _ELEMENTS or dst.name not in _ELEMENTS:
        return None
    if dst.is_bool:
        return "nonzero"
    if src.is_int and dst.is_int:
        widths = (src.bits, dst.bits)
        return "trunc" if widths[0] > widths[1] else ("same" if widths[0] == widths[1] else "ext")
    if src.is_int:
        return "itofp"
    if src.name == "f64" and dst.name == "f16":
        return None  # LLVM would call a runtime helper (__truncdfhf2) the JIT does not link; convert.py rounds
    if dst.is_float and src.itemsize != dst.itemsize:
        return "fpext" if src.itemsize < dst.itemsize else "fptrunc"
    return None
