"""Values, operations, blocks, regions and modules: the skeleton of the tile IR.

The IR is SSA: every ``Value`` is defined once, either as the result of an ``Op`` or as
an argument of a ``Block``. An op holds operands (values), attributes (plain Python
data: ints, floats, strings, tuples, types), results, nested regions (for control
flow and combine functions) and a source location. Concrete ops live in ``ops/``;
each is a small subclass that names itself (``name = "tt.load"``), declares its
``traits`` and states its rules in ``_verify``.

Every value keeps its use-list (``value.users``): the op's operand list updates it on
every edit (``uses.py``). Inserting, replacing, erasing, cloning and moving ops go
through the ``Rewriter`` (``rewriter.py``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from .traits import Pure, SameOperandsAndResultShape, SameOperandsAndResultType, Terminator, Trait
from .types import Type
from .uses import OperandList, Use


@dataclass(frozen=True)
class Loc:
    """A source location: file, line and column (1-based line, 0-based column)."""

    file: str
    line: int
    col: int = 0

    def __str__(self) -> str:
        return f'loc("{self.file}":{self.line}:{self.col})'


UNKNOWN_LOC = Loc("<unknown>", 0, 0)


class VerificationError(Exception):
    """The IR breaks an invariant; the message names the op and its location."""


_value_ids = itertools.count()
_op_ids = itertools.count()


class Value:
    """An SSA value: a type, an optional name hint, and its definition."""

    __slots__ = ("type", "name_hint", "owner", "index", "uid", "_users")

    def __init__(self, type: Type, owner=None, index: int = 0, name_hint: str | None = None):
        self.type = type
        self.owner = owner  # an Op (result) or a Block (argument)
        self.index = index
        self.name_hint = name_hint
        self.uid = next(_value_ids)
        self._users: dict[Op, int] = {}  # each op using this value -> how many of its operand slots

    # ------------------------------------------------------------------ use-list
    @property
    def users(self) -> list[Op]:
        """The ops that use this value, each once, in the order they started using it."""
        return list(self._users)

    @property
    def uses(self) -> list[Use]:
        """Every operand slot holding this value: ``(op, index)`` pairs."""
        return [Use(op, i) for op in self._users for i, v in enumerate(op.operands) if v is self]

    @property
    def num_uses(self) -> int:
        """How many operand slots hold this value."""
        return sum(self._users.values())

    def has_uses(self) -> bool:
        return bool(self._users)

    def has_one_use(self) -> bool:
        """Exactly one operand slot holds this value."""
        return len(self._users) == 1 and next(iter(self._users.values())) == 1

    def replace_all_uses_with(self, new: Value) -> None:
        """Make every use of this value a use of ``new``."""
        self.replace_uses_if(new, None)

    def replace_uses_if(self, new: Value, keep) -> None:
        """Make the uses by ops for which ``keep(op)`` holds (all when ``keep`` is None) uses of ``new``."""
        if new is self:
            return
        for op in list(self._users):
            if keep is None or keep(op):
                ops = op.operands
                for i, v in enumerate(ops):
                    if v is self:
                        ops[i] = new

    @property
    def defining_op(self) -> Op | None:
        """The op that produced this value, or ``None`` for a block argument."""
        return self.owner if isinstance(self.owner, Op) else None

    def defined_by(self, trait: type[Trait]) -> bool:
        """Whether this value is the result of an op with ``trait`` (never for a block argument)."""
        return isinstance(self.owner, Op) and self.owner.has_trait(trait)

    def __repr__(self) -> str:
        return f"<Value #{self.uid}: {self.type}>"


class Block:
    """A list of ops with typed arguments (a loop body's induction variable, say)."""

    def __init__(self, arg_types: list[Type] = (), arg_names=None):
        names = list(arg_names or [None] * len(arg_types))
        self.args: list[Value] = [Value(t, self, i, n) for i, (t, n) in enumerate(zip(arg_types, names))]
        self.ops: list[Op] = []
        self.parent: Region | None = None

    def add_arg(self, type: Type, name: str | None = None) -> Value:
        v = Value(type, self, len(self.args), name)
        self.args.append(v)
        return v

    def append(self, op: Op) -> Op:
        op.parent = self
        self.ops.append(op)
        return op

    def insert(self, index: int, op: Op) -> Op:
        op.parent = self
        self.ops.insert(index, op)
        return op

    def remove(self, op: Op) -> None:
        """Detach ``op`` (it keeps its uses: it may be inserted elsewhere; erasing goes through the rewriter)."""
        self.ops.remove(op)
        op.parent = None

    @property
    def parent_op(self) -> Op | None:
        """The op whose region holds this block."""
        return self.parent.parent if self.parent is not None else None

    @property
    def terminator(self) -> Op | None:
        return self.ops[-1] if self.ops and self.ops[-1].is_terminator else None


class Region:
    """A list of blocks owned by an op (tile IR regions hold exactly one block)."""

    def __init__(self, blocks: list[Block] | None = None):
        self.blocks: list[Block] = []
        self.parent: Op | None = None
        for b in blocks or []:
            self.add_block(b)

    def add_block(self, block: Block) -> Block:
        block.parent = self
        self.blocks.append(block)
        return block

    @property
    def block(self) -> Block:
        """The region's single block."""
        return self.blocks[0]


class Op:
    """Base class of all operations.

    Subclasses set ``name`` (printed, e.g. ``"tt.load"``) and ``traits`` (what the op is:
    ``Pure``, ``Elementwise``, ``Terminator``... see ``traits.py``), queried with
    ``has_trait``. The flags ``pure`` and ``is_terminator`` follow from the traits.
    """

    name = "op"
    traits: frozenset[type[Trait]] = frozenset()
    _same = None
    pure = False
    is_terminator = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.traits = frozenset(cls.traits)
        cls.pure = Pure in cls.traits
        cls.is_terminator = Terminator in cls.traits
        # the verifier's trait rule, looked up once per class: one type, else one shape, else none
        same = (SameOperandsAndResultType, SameOperandsAndResultShape)
        cls._same = next((t for t in same if t in cls.traits), None)

    def has_trait(self, trait: type[Trait]) -> bool:
        """Whether this op has ``trait`` (ops may refine a class trait by their attributes)."""
        return trait in self.traits

    # ------------------------------------------------------------------ verification
    def verify(self) -> None:
        """Check this op's own invariants; raise ``VerificationError`` naming the op and its location.

        The traits' rules first (one shape, one type), then the class's ``_verify``: operand and
        result counts and types, attributes, regions. The verifier calls it on every op.
        """
        if self._same:
            self._verify_same(self._same is SameOperandsAndResultType)
        self._verify()

    def _verify_same(self, same_type: bool) -> None:
        values = (*self._operands, *self.results)
        first = values[0].type
        if any(v.type.shape != first.shape for v in values):
            self.fail(f"operand and result shapes differ: {sorted({v.type.shape for v in values})}")
        if same_type and any(v.type is not first and v.type != first for v in values):
            self.fail(f"operand and result types differ: {', '.join(sorted({str(v.type) for v in values}))}")

    def _verify(self) -> None:
        """The class's own rules (every op class states them)."""

    def fail(self, msg: str):
        raise VerificationError(f"{self.name} at {self.loc}: {msg}")

    def expect(self, cond: bool, msg: str) -> None:
        """Fail with ``msg`` unless ``cond``."""
        if not cond:
            self.fail(msg)

    def expect_counts(self, operands: int | tuple[int, int | None], results: int | None, regions: int = 0) -> None:
        """Check how many operands (a number, or ``(least, most)`` with None for no bound), results and regions."""
        n = len(self._operands)
        if operands.__class__ is int:
            if n != operands:
                self.fail(f"expects {operands} operands, has {n}")
        elif n < operands[0] or (operands[1] is not None and n > operands[1]):
            lo, hi = operands
            self.fail(f"expects {lo}..{'' if hi is None else hi} operands, has {n}")
        if results is not None and len(self.results) != results:
            self.fail(f"expects {results} results, has {len(self.results)}")
        if len(self.regions) != regions:
            self.fail(f"expects {regions} regions, has {len(self.regions)}")
        for region in self.regions:
            if len(region.blocks) != 1:
                self.fail(f"a region must hold one block, not {len(region.blocks)}")

    def expect_terminator(self, block: Block, cls: type[Op], count: int | None = None) -> Op:
        """Check that ``block`` ends with an op of ``cls`` (carrying ``count`` operands when given)."""
        term = block.ops[-1] if block.ops else None
        if not isinstance(term, cls):
            self.fail(f"region must end with {cls.name}")
        if count is not None and len(term.operands) != count:
            self.fail(f"{cls.name} gives {len(term.operands)} values, {count} expected")
        return term

    def __init__(
        self,
        operands: list[Value] = (),
        result_types: list[Type] = (),
        attrs: dict | None = None,
        regions: list[Region] | None = None,
        loc: Loc = UNKNOWN_LOC,
    ):
        self._operands = OperandList.of(self, operands)
        self.results: list[Value] = [Value(t, self, i) for i, t in enumerate(result_types)]
        self.attrs: dict = dict(attrs or {})
        self.regions: list[Region] = []
        for r in regions or []:
            self.add_region(r)
        self.loc = loc
        self.parent: Block | None = None
        # A stable identity: kept while the op lives (moved, operands replaced), new for a clone.
        # The pass viewer matches ops across snapshots by it, so renumbered names are no change.
        self.uid = next(_op_ids)

    @classmethod
    def create(cls, operands, result_types, attrs, regions=(), loc: Loc = UNKNOWN_LOC) -> Op:
        """Build an op of this class from its parts, bypassing ``__init__`` (parser, cloning)."""
        op = cls.__new__(cls)
        Op.__init__(op, operands, result_types, attrs, list(regions), loc)
        return op

    @property
    def operands(self) -> OperandList:
        """The operand values; assigning, setting or removing one keeps the use-lists right."""
        return self._operands

    @operands.setter
    def operands(self, values) -> None:
        values = list(values)
        self._operands.release()
        self._operands = OperandList.of(self, values)

    def drop_references(self) -> None:
        """Drop the uses held by this op and every op nested in it (the op is being erased).

        The operands stay readable (as a plain list) so that a dead op can still be printed.
        """
        for op in self.walk():
            if isinstance(op._operands, OperandList):
                op._operands = op._operands.release()

    def replace_uses_of(self, old: Value, new: Value) -> None:
        """Make this op's own uses of ``old`` uses of ``new``."""
        ops = self.operands
        for i, v in enumerate(ops):
            if v is old:
                ops[i] = new

    @property
    def parent_op(self) -> Op | None:
        """The op whose region holds this op (None at the top of a function)."""
        return self.parent.parent_op if self.parent is not None else None

    def ancestor(self, cls: type[Op]) -> Op | None:
        """The closest op of class ``cls`` that encloses this one (not this op itself)."""
        op = self.parent_op
        while op is not None and not isinstance(op, cls):
            op = op.parent_op
        return op

    def is_ancestor_of(self, other: Op) -> bool:
        """Whether ``other`` is nested, at any depth, inside this op's regions."""
        op = other.parent_op
        while op is not None and op is not self:
            op = op.parent_op
        return op is self

    def add_region(self, region: Region) -> Region:
        region.parent = self
        self.regions.append(region)
        return region

    @property
    def result(self) -> Value:
        """The single result (raises when the op has not exactly one)."""
        if len(self.results) != 1:
            raise ValueError(f"{self.name} has {len(self.results)} results")
        return self.results[0]

    def walk(self) -> Iterator[Op]:
        """This op and every op nested in its regions, in program order (pre-order)."""
        yield self
        for region in self.regions:
            for block in region.blocks:
                for op in list(block.ops):
                    yield from op.walk()

    def clone_attrs(self) -> dict:
        return dict(self.attrs)

    def __repr__(self) -> str:
        return f"<{self.name} at {self.loc}>"


class FuncOp(Op):
    """A function: ``kernel`` (launched) or a device helper (inlined before lowering).

    attrs: ``sym_name``, ``arg_names``, ``kernel`` (bool), ``source`` (the Python
    source text, for the viewers).
    """

    name = "tt.func"

    def __init__(
        self,
        sym_name: str,
        arg_types: list[Type],
        result_types: list[Type],
        arg_names=None,
        loc=UNKNOWN_LOC,
    ):
        super().__init__([], [], {"sym_name": sym_name, "result_types": tuple(result_types)}, loc=loc)
        self.add_region(Region([Block(arg_types, arg_names)]))
        self.attrs["arg_names"] = tuple(arg_names or [])

    def _verify(self) -> None:
        self.expect_counts(0, 0, regions=1)
        self.expect(isinstance(self.attrs.get("sym_name"), str), "needs a sym_name")
        term = self.body.terminator
        if not (term is not None and term.name == "tt.return"):
            self.fail(f"function @{self.sym_name} does not end with tt.return")

    @property
    def sym_name(self) -> str:
        return self.attrs["sym_name"]

    @property
    def body(self) -> Block:
        return self.regions[0].block

    @property
    def args(self) -> list[Value]:
        return self.body.args


class Module:
    """A list of functions; ``kernel`` names the one that is launched."""

    def __init__(self, funcs: list[FuncOp] | None = None, kernel: str | None = None):
        self.funcs: list[FuncOp] = list(funcs or [])
        self.kernel_name = kernel
        self.attrs: dict = {}

    @property
    def kernel(self) -> FuncOp:
        for f in self.funcs:
            if f.sym_name == self.kernel_name:
                return f
        return self.funcs[0]

    def get(self, name: str) -> FuncOp | None:
        for f in self.funcs:
            if f.sym_name == name:
                return f
        return None

    def walk(self) -> Iterator[Op]:
        for f in self.funcs:
            yield from f.walk()

    def __str__(self) -> str:
        from .printer import print_module  # here: the printer builds on this module

        return print_module(self)
