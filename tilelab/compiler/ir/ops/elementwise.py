"""Elementwise ops: arithmetic, comparisons, math functions, selects and casts."""

from __future__ import annotations

from ..core import UNKNOWN_LOC, Loc, Op, Value
from ..traits import (
    Commutative,
    Elementwise,
    Pure,
    SameLayout,
    SameOperandsAndResultShape,
    SameOperandsAndResultType,
    ShapeOnly,
)
from ..types import Type, i1

#: Binary kinds. Integer ``div`` truncates toward zero and ``rem`` takes the sign of the
#: dividend (C semantics, as Triton); ``fdiv`` is true division of floats; ``shr`` is
#: arithmetic for signed and logical for unsigned types; ``min``/``max`` of floats
#: return the non-NaN operand; ``umulhi`` is the high half of the integer product.
#: what every elementwise op is: pure, element by element, one shape and one layout throughout
ELEMENTWISE_TRAITS = frozenset({Pure, Elementwise, SameLayout, SameOperandsAndResultShape})

BINARY_KINDS = (
    "add",
    "sub",
    "mul",
    "div",
    "fdiv",
    "rem",
    "and",
    "or",
    "xor",
    "shl",
    "shr",
    "min",
    "max",
    "umulhi",
    "pow",
    "atan2",
    "copysign",
    "hypot",
)


#: the binary kinds whose operands may be swapped
COMMUTATIVE_KINDS = frozenset({"add", "mul", "and", "or", "xor", "min", "max", "umulhi", "hypot"})


class BinaryOp(Op):
    """An elementwise binary op of ``kind`` on two operands of the same type."""

    name = "arith.binary"
    traits = ELEMENTWISE_TRAITS | {SameOperandsAndResultType, Commutative}

    def __init__(self, kind: str, lhs: Value, rhs: Value, loc: Loc = UNKNOWN_LOC):
        super().__init__([lhs, rhs], [lhs.type], {"kind": kind}, loc=loc)

    @property
    def kind(self) -> str:
        return self.attrs["kind"]

    def has_trait(self, trait) -> bool:
        if trait is Commutative:
            return self.kind in COMMUTATIVE_KINDS
        return trait in self.traits

    def _verify(self) -> None:
        self.expect_counts(2, 1)
        if self.kind not in BINARY_KINDS:
            self.fail(f"unknown binary kind {self.kind!r}")


CMP_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")


class CmpOp(Op):
    """Elementwise comparison (signedness from the operand type); gives i1."""

    name = "arith.cmp"
    traits = ELEMENTWISE_TRAITS | {Commutative}

    def __init__(self, predicate: str, lhs: Value, rhs: Value, loc: Loc = UNKNOWN_LOC):
        rtype = lhs.type.with_element(i1) if lhs.type.is_tensor else i1
        super().__init__([lhs, rhs], [rtype], {"predicate": predicate}, loc=loc)

    @property
    def predicate(self) -> str:
        return self.attrs["predicate"]

    def has_trait(self, trait) -> bool:
        if trait is Commutative:
            return self.predicate in ("eq", "ne")
        return trait in self.traits

    def _verify(self) -> None:
        self.expect_counts(2, 1)
        if self.predicate not in CMP_PREDICATES:
            self.fail(f"unknown predicate {self.predicate!r}")
        a, b = self.operands[0].type, self.operands[1].type
        if a.element != b.element:
            self.fail(f"operand types differ: {a} vs {b}")
        self.expect(self.result.type.element == i1, "gives i1")


#: Unary kinds: arithmetic (``neg``, ``not`` = bitwise invert, ``abs``) and math
#: functions (float only). ``*_approx`` kinds are the fast hardware approximations.
UNARY_KINDS = (
    "neg",
    "not",
    "abs",
    "exp",
    "exp2",
    "log",
    "log2",
    "log1p",
    "expm1",
    "sqrt",
    "sqrt_rn",
    "rsqrt",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sinh",
    "cosh",
    "asin",
    "acos",
    "atan",
    "erf",
    "floor",
    "ceil",
    "trunc",
    "round",
    "rint",
    "log10",
    "cbrt",
    "erfc",
    "asinh",
    "acosh",
    "atanh",
    "isnan",
    "isinf",
    "signbit",
    "popc",
    "clz",
)


class UnaryOp(Op):
    """An elementwise unary op or math function of ``kind``."""

    name = "arith.unary"
    traits = ELEMENTWISE_TRAITS

    def __init__(self, kind: str, x: Value, type: Type | None = None, loc: Loc = UNKNOWN_LOC):
        super().__init__([x], [type or x.type], {"kind": kind}, loc=loc)

    @property
    def kind(self) -> str:
        return self.attrs["kind"]

    def _verify(self) -> None:
        self.expect_counts(1, 1)
        if self.kind not in UNARY_KINDS:
            self.fail(f"unknown unary kind {self.kind!r}")


class FmaOp(Op):
    """``a * b + c`` with one rounding."""

    name = "math.fma"
    traits = ELEMENTWISE_TRAITS | {SameOperandsAndResultType}

    def __init__(self, a: Value, b: Value, c: Value, loc: Loc = UNKNOWN_LOC):
        super().__init__([a, b, c], [a.type], loc=loc)

    def _verify(self) -> None:
        self.expect_counts(3, 1)
        self.expect(self.result.type.element.is_float, "operands must be floats")


class SelectOp(Op):
    """``cond ? a : b`` elementwise."""

    name = "arith.select"
    traits = ELEMENTWISE_TRAITS

    def __init__(self, cond: Value, a: Value, b: Value, loc: Loc = UNKNOWN_LOC):
        super().__init__([cond, a, b], [a.type], loc=loc)

    def _verify(self) -> None:
        self.expect_counts(3, 1)
        cond, a, b = (v.type for v in self.operands)
        if cond.element != i1:
            self.fail(f"condition {cond} is not i1")
        self.expect(a == b == self.result.type, "select arms differ in type")


class CastOp(Op):
    """A value conversion to ``type``'s element type (int<->float, widths, pointers<->i64).

    Floats to ints truncate toward zero; float narrowing rounds to nearest even unless
    ``rounding`` is ``"rtz"``. Integer widening sign-extends signed sources.
    """

    name = "tt.cast"
    traits = ELEMENTWISE_TRAITS

    def __init__(self, x: Value, type: Type, rounding: str = "rtne", loc: Loc = UNKNOWN_LOC):
        super().__init__([x], [type], {"rounding": rounding}, loc=loc)

    def _verify(self) -> None:
        self.expect_counts(1, 1)
        rounding = self.attrs.get("rounding", "rtne")
        if rounding not in ("rtne", "rtz"):
            self.fail(f"unknown rounding {rounding!r}")


class BitcastOp(Op):
    """Reinterpret the bits of each element as another type of the same width."""

    name = "tt.bitcast"
    traits = ELEMENTWISE_TRAITS

    def __init__(self, x: Value, type: Type, loc: Loc = UNKNOWN_LOC):
        super().__init__([x], [type], loc=loc)

    def _verify(self) -> None:
        self.expect_counts(1, 1)
        src, dst = self.operands[0].type.element, self.result.type.element
        if src.itemsize != dst.itemsize:
            self.fail(f"{src} and {dst} differ in width")


class HintOp(Op):
    """Passes ``x`` through, carrying a fact for axis analysis.

    ``kind`` is ``multiple_of`` or ``max_contiguous`` with ``values`` per dimension.
    """

    name = "tt.hint"
    traits = ELEMENTWISE_TRAITS | {ShapeOnly, SameOperandsAndResultType}

    def __init__(self, x: Value, kind: str, values: tuple, loc: Loc = UNKNOWN_LOC):
        super().__init__([x], [x.type], {"kind": kind, "values": tuple(values)}, loc=loc)

    def _verify(self) -> None:
        self.expect_counts(1, 1)
        if self.attrs.get("kind") not in ("multiple_of", "max_contiguous"):
            self.fail(f"unknown hint {self.attrs.get('kind')!r}")


class InlineAsmOp(Op):
    """``tl.inline_asm_elementwise``: the target's assembly ``asm`` run over the operands' elements.

    One instance of ``asm`` takes ``pack`` elements of each operand and gives ``pack`` of each
    result; elements narrower than 32 bits go packed into 32-bit registers (two f16, four i8),
    as Triton passes them. ``constraints`` are LLVM's (``"=r,r"``): the results' registers first.
    Not ``Elementwise`` (those are pure by definition): this op is pure only when its ``pure`` attr
    (the user's ``is_pure``) says so, and otherwise keeps its place and count.
    """

    name = "tt.elementwise_inline_asm"
    traits = frozenset({SameLayout, SameOperandsAndResultShape})

    def __init__(
        self,
        asm: str,
        constraints: str,
        operands: list[Value],
        result_types: list[Type],
        pure: bool,
        pack: int,
        loc: Loc = UNKNOWN_LOC,
    ):
        attrs = {"asm": asm, "constraints": constraints, "pure": pure, "pack": pack}
        super().__init__(operands, result_types, attrs, loc=loc)
        self.pure = pure

    @classmethod
    def create(cls, operands, result_types, attrs, regions=(), loc: Loc = UNKNOWN_LOC) -> Op:
        op = super().create(operands, result_types, attrs, regions, loc)
        op.pure = bool(attrs.get("pure"))
        return op

    def has_trait(self, trait) -> bool:
        if trait is Pure:
            return self.pure
        return trait in self.traits

    @staticmethod
    def packing(elem: Type, pack: int) -> tuple[int, int]:
        """(elements of ``elem`` one register takes, bits of one): narrower than 32 bits go packed, up to ``pack``."""
        bits = 64 if elem.is_pointer else elem.bits
        return max(1, min(32 // bits, pack)), bits

    def _verify(self) -> None:
        self.expect_counts((0, None), None)
        self.expect(len(self.results) >= 1, "inline assembly must give at least one result")
        self.expect(isinstance(self.attrs.get("asm"), str), "the assembly must be a string")
        self.expect(isinstance(self.attrs.get("constraints"), str), "the constraints must be a string")
        pack = self.attrs.get("pack")
        self.expect(isinstance(pack, int) and pack >= 1, f"pack must be a positive integer, got {pack!r}")
