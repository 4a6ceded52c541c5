"""The operations of the tile IR.

Each op is a small class: its printed ``name``, its operands and attributes, and
whether it is ``pure``. Result types are decided by the frontend's semantic layer
(type promotion and broadcasting live there, in one place) and handed to the
constructor; ops do not re-derive them. The verifier (``verifier.py``) checks the
invariants each op states in its docstring.

| family | ops |
|---|---|
| indexing | ConstantOp, ProgramIdOp, NumProgramsOp, MakeRangeOp |
| shape | SplatOp, BroadcastOp, ExpandDimsOp, ReshapeOp, TransOp, JoinOp, SplitOp, CatOp, FlipOp, SortOp |
| memory | AddPtrOp, LoadOp, StoreOp, AtomicRMWOp, AtomicCASOp |
| elementwise | BinaryOp, CmpOp, UnaryOp, FmaOp, SelectOp, CastOp, BitcastOp, HintOp |
| reductions | ReduceOp, ScanOp, ReduceReturnOp, DotOp |
| control flow | ForOp, IfOp, WhileOp, YieldOp, ConditionOp, CallOp, ReturnOp |
| debugging | PrintOp, AssertOp, BarrierOp |
| GPU layouts | ConvertLayoutOp |
| shared memory | LocalAllocOp, LocalStoreOp, LocalLoadOp |
"""

from __future__ import annotations

from .core import UNKNOWN_LOC, Block, FuncOp, Loc, Op, Region, Value
from .types import Type, i1, i32

__all__ = [
    "FuncOp",
    "ConstantOp",
    "ProgramIdOp",
    "NumProgramsOp",
    "MakeRangeOp",
    "SplatOp",
    "BroadcastOp",
    "ExpandDimsOp",
    "ReshapeOp",
    "TransOp",
    "JoinOp",
    "SplitOp",
    "CatOp",
    "FlipOp",
    "SortOp",
    "AddPtrOp",
    "LoadOp",
    "StoreOp",
    "AtomicRMWOp",
    "AtomicCASOp",
    "BinaryOp",
    "CmpOp",
    "UnaryOp",
    "FmaOp",
    "SelectOp",
    "CastOp",
    "BitcastOp",
    "HintOp",
    "ReduceOp",
    "ScanOp",
    "ReduceReturnOp",
    "DotOp",
    "ForOp",
    "IfOp",
    "WhileOp",
    "YieldOp",
    "ConditionOp",
    "CallOp",
    "ReturnOp",
    "PrintOp",
    "AssertOp",
    "BarrierOp",
    "ConvertLayoutOp",
    "LocalAllocOp",
    "LocalStoreOp",
    "LocalLoadOp",
    "BINARY_KINDS",
    "UNARY_KINDS",
    "CMP_PREDICATES",
    "ATOMIC_KINDS",
]

# --------------------------------------------------------------------------- indexing


class ConstantOp(Op):
    """A compile-time constant: a scalar, or a tile with every element ``value``."""

    name = "arith.constant"

    def __init__(self, value, type: Type, loc: Loc = UNKNOWN_LOC):
        super().__init__([], [type], {"value": value}, loc=loc)

    @property
    def value(self):
        return self.attrs["value"]


class ProgramIdOp(Op):
    """The index of this program instance along grid ``axis`` (0, 1 or 2): an i32."""

    name = "tt.get_program_id"

    def __init__(self, axis: int, loc: Loc = UNKNOWN_LOC):
        super().__init__([], [i32], {"axis": axis}, loc=loc)


class NumProgramsOp(Op):
    """The number of program instances along grid ``axis``: an i32."""

    name = "tt.get_num_programs"

    def __init__(self, axis: int, loc: Loc = UNKNOWN_LOC):
        super().__init__([], [i32], {"axis": axis}, loc=loc)


class MakeRangeOp(Op):
    """``[start, start+1, ..., end-1]`` as a 1-d i32 tile (``end - start`` a power of 2)."""

    name = "tt.make_range"

    def __init__(self, start: int, end: int, type: Type, loc: Loc = UNKNOWN_LOC):
        super().__init__([], [type], {"start": start, "end": end}, loc=loc)


# --------------------------------------------------------------------------- shape


class _ShapeOp(Op):
    def __init__(self, x: Value, type: Type, loc: Loc = UNKNOWN_LOC, **attrs):
        super().__init__([x], [type], attrs, loc=loc)

    @property
    def src(self) -> Value:
        return self.operands[0]


class SplatOp(_ShapeOp):
    """A scalar copied to every element of a tile."""

    name = "tt.splat"


class BroadcastOp(_ShapeOp):
    """A tile stretched along its size-1 dimensions (same rank)."""

    name = "tt.broadcast"


class ExpandDimsOp(_ShapeOp):
    """A new size-1 dimension at ``axis``."""

    name = "tt.expand_dims"


class ReshapeOp(_ShapeOp):
    """Same elements, new shape, row-major order (``can_reorder`` lets a backend permute)."""

    name = "tt.reshape"


class TransOp(_ShapeOp):
    """Dimensions permuted: result dim ``i`` is source dim ``order[i]``."""

    name = "tt.trans"


class FlipOp(_ShapeOp):
    """Elements reversed along ``dim``."""

    name = "tt.flip"


class SortOp(_ShapeOp):
    """Elements sorted along ``dim`` (ascending unless ``descending``)."""

    name = "tt.sort"


class JoinOp(Op):
    """Two tiles of one shape stacked along a new last dimension of size 2."""

    name = "tt.join"

    def __init__(self, a: Value, b: Value, type: Type, loc: Loc = UNKNOWN_LOC):
        super().__init__([a, b], [type], loc=loc)


class SplitOp(Op):
    """The inverse of join: a tile whose last dimension is 2 gives two tiles."""

    name = "tt.split"

    def __init__(self, x: Value, type: Type, loc: Loc = UNKNOWN_LOC):
        super().__init__([x], [type, type], loc=loc)


class CatOp(Op):
    """Two tiles concatenated along dimension 0."""

    name = "tt.cat"

    def __init__(self, a: Value, b: Value, type: Type, loc: Loc = UNKNOWN_LOC):
        super().__init__([a, b], [type], loc=loc)


# --------------------------------------------------------------------------- memory


class AddPtrOp(Op):
    """``ptr + offset`` in elements of the pointee (shapes already equal)."""

    name = "tt.addptr"

    def __init__(self, ptr: Value, offset: Value, loc: Loc = UNKNOWN_LOC):
        super().__init__([ptr, offset], [ptr.type], loc=loc)


class LoadOp(Op):
    """Read the elements ``ptr`` points to; masked-off lanes give ``other`` (or undefined).

    Operands: ptr, then mask and other when present (attrs ``has_mask``, ``has_other``).
    attrs also carry ``cache``, ``eviction`` and ``volatile`` hints.
    """

    name = "tt.load"
    pure = False

    def __init__(
        self,
        ptr,
        type,
        mask=None,
        other=None,
        cache="",
        eviction="",
        volatile=False,
        loc=UNKNOWN_LOC,
    ):
        operands = [ptr] + ([mask] if mask is not None else []) + ([other] if other is not None else [])
        attrs = {"has_mask": mask is not None, "has_other": other is not None}
        attrs.update(cache=cache, eviction=eviction, volatile=volatile)
        super().__init__(operands, [type], attrs, loc=loc)

    @property
    def ptr(self) -> Value:
        return self.operands[0]

    @property
    def mask(self) -> Value | None:
        return self.operands[1] if self.attrs["has_mask"] else None

    @property
    def other(self) -> Value | None:
        return self.operands[-1] if self.attrs["has_other"] else None


class StoreOp(Op):
    """Write ``value`` where ``ptr`` points, for the lanes where ``mask`` holds."""

    name = "tt.store"
    pure = False

    def __init__(self, ptr, value, mask=None, cache="", eviction="", loc=UNKNOWN_LOC):
        operands = [ptr, value] + ([mask] if mask is not None else [])
        super().__init__(
            operands,
            [],
            {"has_mask": mask is not None, "cache": cache, "eviction": eviction},
            loc=loc,
        )

    @property
    def ptr(self) -> Value:
        return self.operands[0]

    @property
    def value(self) -> Value:
        return self.operands[1]

    @property
    def mask(self) -> Value | None:
        return self.operands[2] if self.attrs["has_mask"] else None


ATOMIC_KINDS = ("add", "fadd", "max", "min", "umax", "umin", "and", "or", "xor", "xchg")


class AtomicRMWOp(Op):
    """Atomically ``*ptr = kind(*ptr, val)`` where ``mask`` holds; gives the old values."""

    name = "tt.atomic_rmw"
    pure = False

    def __init__(self, kind, ptr, val, mask=None, sem="acq_rel", scope="gpu", loc=UNKNOWN_LOC):
        operands = [ptr, val] + ([mask] if mask is not None else [])
        attrs = {"kind": kind, "has_mask": mask is not None, "sem": sem, "scope": scope}
        super().__init__(operands, [val.type], attrs, loc=loc)

    @property
    def mask(self) -> Value | None:
        return self.operands[2] if self.attrs["has_mask"] else None


class AtomicCASOp(Op):
    """Atomically ``old = *ptr; if old == cmp: *ptr = val``; gives ``old``."""

    name = "tt.atomic_cas"
    pure = False

    def __init__(self, ptr, cmp, val, sem="acq_rel", scope="gpu", loc=UNKNOWN_LOC):
        super().__init__([ptr, cmp, val], [val.type], {"sem": sem, "scope": scope}, loc=loc)


# --------------------------------------------------------------------------- elementwise

#: Binary kinds. Integer ``div`` truncates toward zero and ``rem`` takes the sign of the
#: dividend (C semantics, as Triton); ``fdiv`` is true division of floats; ``shr`` is
#: arithmetic for signed and logical for unsigned types; ``min``/``max`` of floats
#: return the non-NaN operand; ``umulhi`` is the high half of the integer product.
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
)


class BinaryOp(Op):
    """An elementwise binary op of ``kind`` on two operands of the same type."""

    name = "arith.binary"

    def __init__(self, kind: str, lhs: Value, rhs: Value, loc: Loc = UNKNOWN_LOC):
        super().__init__([lhs, rhs], [lhs.type], {"kind": kind}, loc=loc)

    @property
    def kind(self) -> str:
        return self.attrs["kind"]


CMP_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")


class CmpOp(Op):
    """Elementwise comparison (signedness from the operand type); gives i1."""

    name = "arith.cmp"

    def __init__(self, predicate: str, lhs: Value, rhs: Value, loc: Loc = UNKNOWN_LOC):
        rtype = lhs.type.with_element(i1) if lhs.type.is_tensor else i1
        super().__init__([lhs, rhs], [rtype], {"predicate": predicate}, loc=loc)

    @property
    def predicate(self) -> str:
        return self.attrs["predicate"]


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
    "isnan",
    "isinf",
    "signbit",
    "popc",
    "clz",
)


class UnaryOp(Op):
    """An elementwise unary op or math function of ``kind``."""

    name = "arith.unary"

    def __init__(self, kind: str, x: Value, type: Type | None = None, loc: Loc = UNKNOWN_LOC):
        super().__init__([x], [type or x.type], {"kind": kind}, loc=loc)

    @property
    def kind(self) -> str:
        return self.attrs["kind"]


class FmaOp(Op):
    """``a * b + c`` with one rounding."""

    name = "math.fma"

    def __init__(self, a: Value, b: Value, c: Value, loc: Loc = UNKNOWN_LOC):
        super().__init__([a, b, c], [a.type], loc=loc)


class SelectOp(Op):
    """``cond ? a : b`` elementwise."""

    name = "arith.select"

    def __init__(self, cond: Value, a: Value, b: Value, loc: Loc = UNKNOWN_LOC):
        super().__init__([cond, a, b], [a.type], loc=loc)


class CastOp(Op):
    """A value conversion to ``type``'s element type (int<->float, widths, pointers<->i64).

    Floats to ints truncate toward zero; float narrowing rounds to nearest even unless
    ``rounding`` is ``"rtz"``. Integer widening sign-extends signed sources.
    """

    name = "tt.cast"

    def __init__(self, x: Value, type: Type, rounding: str = "rtne", loc: Loc = UNKNOWN_LOC):
        super().__init__([x], [type], {"rounding": rounding}, loc=loc)


class BitcastOp(Op):
    """Reinterpret the bits of each element as another type of the same width."""

    name = "tt.bitcast"

    def __init__(self, x: Value, type: Type, loc: Loc = UNKNOWN_LOC):
        super().__init__([x], [type], loc=loc)


class HintOp(Op):
    """Passes ``x`` through, carrying a fact for axis analysis.

    ``kind`` is ``multiple_of`` or ``max_contiguous`` with ``values`` per dimension.
    """

    name = "tt.hint"

    def __init__(self, x: Value, kind: str, values: tuple, loc: Loc = UNKNOWN_LOC):
        super().__init__([x], [x.type], {"kind": kind, "values": tuple(values)}, loc=loc)


# --------------------------------------------------------------------------- reductions


class ReduceOp(Op):
    """Reduce ``operands`` along ``axis`` with the combine region.

    The region's block takes ``2n`` scalars (n accumulated, n new) and ends with a
    ``ReduceReturnOp`` of ``n`` scalars. Results: one per operand, ``axis`` removed.
    """

    name = "tt.reduce"

    def __init__(
        self,
        operands: list[Value],
        axis: int,
        result_types: list[Type],
        loc: Loc = UNKNOWN_LOC,
    ):
        super().__init__(operands, result_types, {"axis": axis}, loc=loc)
        elems = [v.type.element for v in operands]
        self.add_region(Region([Block(elems + elems)]))

    @property
    def combine(self) -> Block:
        return self.regions[0].block


class ScanOp(Op):
    """Inclusive scan of ``operands`` along ``axis`` with the combine region (as ReduceOp)."""

    name = "tt.scan"

    def __init__(
        self,
        operands: list[Value],
        axis: int,
        reverse: bool = False,
        loc: Loc = UNKNOWN_LOC,
    ):
        super().__init__(
            operands,
            [v.type for v in operands],
            {"axis": axis, "reverse": reverse},
            loc=loc,
        )
        elems = [v.type.element for v in operands]
        self.add_region(Region([Block(elems + elems)]))

    @property
    def combine(self) -> Block:
        return self.regions[0].block


class ReduceReturnOp(Op):
    """Ends a combine region with the combined scalars."""

    name = "tt.reduce.return"
    is_terminator = True

    def __init__(self, values: list[Value], loc: Loc = UNKNOWN_LOC):
        super().__init__(values, [], loc=loc)


class DotOp(Op):
    """``acc + a @ b`` for tiles ``[M, K] x [K, N] -> [M, N]`` (batched with a leading dim).

    ``input_precision`` is ``ieee``, ``tf32`` or ``tf32x3`` for f32 inputs.
    """

    name = "tt.dot"

    def __init__(
        self,
        a,
        b,
        acc,
        input_precision="ieee",
        max_num_imprecise_acc=0,
        loc=UNKNOWN_LOC,
    ):
        attrs = {
            "input_precision": input_precision,
            "max_num_imprecise_acc": max_num_imprecise_acc,
        }
        super().__init__([a, b, acc], [acc.type], attrs, loc=loc)


# --------------------------------------------------------------------------- control flow


class YieldOp(Op):
    """Ends a for/if/while-after body, handing values to the parent op."""

    name = "scf.yield"
    pure = False
    is_terminator = True

    def __init__(self, values: list[Value] = (), loc: Loc = UNKNOWN_LOC):
        super().__init__(values, [], loc=loc)


class ConditionOp(Op):
    """Ends a while's ``before`` region: continue while ``cond``, forwarding ``values``."""

    name = "scf.condition"
    pure = False
    is_terminator = True

    def __init__(self, cond: Value, values: list[Value], loc: Loc = UNKNOWN_LOC):
        super().__init__([cond, *values], [], loc=loc)


class ForOp(Op):
    """``for iv in range(lb, ub, step)`` with loop-carried values.

    Operands: lb, ub, step, then the initial values. The body block's arguments are
    the induction variable then the carried values; it ends with a ``YieldOp`` of the
    next carried values. Results: the carried values after the last iteration.
    attrs: ``num_stages`` (GPU pipelining hint), ``static`` (unrolled at compile time).
    """

    name = "scf.for"
    pure = False

    def __init__(self, lb, ub, step, init_args: list[Value], num_stages=None, loc=UNKNOWN_LOC):
        types = [v.type for v in init_args]
        super().__init__([lb, ub, step, *init_args], types, {"num_stages": num_stages}, loc=loc)
        self.add_region(Region([Block([lb.type, *types])]))

    @property
    def body(self) -> Block:
        return self.regions[0].block

    @property
    def induction_var(self) -> Value:
        return self.body.args[0]

    @property
    def init_args(self) -> list[Value]:
        return self.operands[3:]


class IfOp(Op):
    """``if cond`` with then/else regions, each ending with a ``YieldOp`` of the results."""

    name = "scf.if"
    pure = False

    def __init__(self, cond: Value, result_types: list[Type], loc: Loc = UNKNOWN_LOC):
        super().__init__([cond], result_types, loc=loc)
        self.add_region(Region([Block()]))
        self.add_region(Region([Block()]))

    @property
    def then_block(self) -> Block:
        return self.regions[0].block

    @property
    def else_block(self) -> Block:
        return self.regions[1].block


class WhileOp(Op):
    """``while`` loop: the ``before`` region computes the condition, ``after`` the body.

    ``before`` takes the carried values and ends with ``ConditionOp(cond, values)``;
    ``after`` takes those values and ends with ``YieldOp`` of the next carried values.
    Results: the values forwarded by the final (false) condition.
    """

    name = "scf.while"
    pure = False

    def __init__(self, init_args: list[Value], loc: Loc = UNKNOWN_LOC):
        types = [v.type for v in init_args]
        super().__init__(init_args, types, loc=loc)
        self.add_region(Region([Block(types)]))
        self.add_region(Region([Block(types)]))

    @property
    def before(self) -> Block:
        return self.regions[0].block

    @property
    def after(self) -> Block:
        return self.regions[1].block


class CallOp(Op):
    """A call of another function of the module (inlined by the ``inline`` pass)."""

    name = "tt.call"
    pure = False

    def __init__(
        self,
        callee: str,
        args: list[Value],
        result_types: list[Type],
        loc: Loc = UNKNOWN_LOC,
    ):
        super().__init__(args, result_types, {"callee": callee}, loc=loc)

    @property
    def callee(self) -> str:
        return self.attrs["callee"]


class ReturnOp(Op):
    """Ends a function, returning ``values``."""

    name = "tt.return"
    pure = False
    is_terminator = True

    def __init__(self, values: list[Value] = (), loc: Loc = UNKNOWN_LOC):
        super().__init__(values, [], loc=loc)


# --------------------------------------------------------------------------- debugging


class PrintOp(Op):
    """``device_print``: prints ``prefix`` and the values, per program."""

    name = "tt.print"
    pure = False

    def __init__(
        self,
        prefix: str,
        values: list[Value],
        hex: bool = False,
        loc: Loc = UNKNOWN_LOC,
    ):
        super().__init__(values, [], {"prefix": prefix, "hex": hex}, loc=loc)


class AssertOp(Op):
    """``device_assert``: fails the launch where ``cond`` is false, with ``message``."""

    name = "tt.assert"
    pure = False

    def __init__(self, cond: Value, message: str, loc: Loc = UNKNOWN_LOC):
        super().__init__([cond], [], {"message": message}, loc=loc)


class BarrierOp(Op):
    """``debug_barrier``: every thread of the program waits here."""

    name = "gpu.barrier"
    pure = False

    def __init__(self, loc: Loc = UNKNOWN_LOC):
        super().__init__([], [], loc=loc)


# --------------------------------------------------------------------------- GPU layouts


class ConvertLayoutOp(Op):
    """The same tile in another layout: only which thread holds which element changes.

    Inserted by the GPU layout passes where a value's layout differs from what a user
    needs; the backend moves the elements (registers, shuffles or shared memory).
    Without layouts it is the identity.
    """

    name = "ttg.convert_layout"

    def __init__(self, x: Value, type: Type, loc: Loc = UNKNOWN_LOC):
        super().__init__([x], [type], loc=loc)

    @property
    def src(self) -> Value:
        return self.operands[0]


# --------------------------------------------------------------------------- shared memory


class LocalAllocOp(Op):
    """A shared-memory buffer holding one tile: its type is the tile's with a *shared* layout.

    The shared layout (``#swizzled_shared<...>``) says at which offset each element sits.
    attrs: ``offset``, the buffer's first byte in the program's shared memory, filled in by
    the ``allocate-shared-memory`` pass (absent before). Not pure: two allocations are two buffers.

        %buf = ttg.local_alloc {offset = 0} : tensor<64x64xf32, #swizzled_shared<...>>
    """

    name = "ttg.local_alloc"
    pure = False

    def __init__(self, type: Type, offset: int | None = None, loc: Loc = UNKNOWN_LOC):
        super().__init__([], [type], {"offset": offset}, loc=loc)

    @property
    def nbytes(self) -> int:
        """Bytes the buffer takes (bools take one byte each)."""
        t = self.result.type
        return t.numel * max(1, t.element.itemsize)


class LocalStoreOp(Op):
    """Write the tile ``value`` into the shared buffer ``buf`` (same shape and element type)."""

    name = "ttg.local_store"
    pure = False

    def __init__(self, buf: Value, value: Value, loc: Loc = UNKNOWN_LOC):
        super().__init__([buf, value], [], loc=loc)

    @property
    def buf(self) -> Value:
        return self.operands[0]

    @property
    def value(self) -> Value:
        return self.operands[1]


class LocalLoadOp(Op):
    """Read the shared buffer ``buf`` into a tile of ``type`` (a register layout, same shape)."""

    name = "ttg.local_load"
    pure = False

    def __init__(self, buf: Value, type: Type, loc: Loc = UNKNOWN_LOC):
        super().__init__([buf], [type], loc=loc)

    @property
    def buf(self) -> Value:
        return self.operands[0]
