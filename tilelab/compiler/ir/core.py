"""Values, operations, blocks, regions and modules: the skeleton of the tile IR.

The IR is SSA: every ``Value`` is defined once, either as the result of an ``Op`` or as
an argument of a ``Block``. An op holds operands (values), attributes (plain Python
data: ints, floats, strings, tuples, types), results, nested regions (for control
flow and combine functions) and a source location. Concrete ops live in ``ops/``;
each is a small subclass that names itself (``name = "tt.load"``) and says how its
results are typed.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from .types import Type


@dataclass(frozen=True)
class Loc:
    """A source location: file, line and column (1-based line, 0-based column)."""

    file: str
    line: int
    col: int = 0

    def __str__(self) -> str:
        return f'loc("{self.file}":{self.line}:{self.col})'


UNKNOWN_LOC = Loc("<unknown>", 0, 0)

_value_ids = itertools.count()
_op_ids = itertools.count()


class Value:
    """An SSA value: a type, an optional name hint, and its definition."""

    __slots__ = ("type", "name_hint", "owner", "index", "uid")

    def __init__(self, type: Type, owner=None, index: int = 0, name_hint: str | None = None):
        self.type = type
        self.owner = owner  # an Op (result) or a Block (argument)
        self.index = index
        self.name_hint = name_hint
        self.uid = next(_value_ids)

    @property
    def defining_op(self) -> Op | None:
        """The op that produced this value, or ``None`` for a block argument."""
        return self.owner if isinstance(self.owner, Op) else None

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
        self.ops.remove(op)
        op.parent = None

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

    Subclasses set ``name`` (printed, e.g. ``"tt.load"``) and, where they have one,
    ``operand_names`` (how the printer and passes refer to operands). Flags:
    ``pure`` (no side effects: removable when unused, hoistable, CSE-able),
    ``is_terminator``.
    """

    name = "op"
    pure = True
    is_terminator = False

    def __init__(
        self,
        operands: list[Value] = (),
        result_types: list[Type] = (),
        attrs: dict | None = None,
        regions: list[Region] | None = None,
        loc: Loc = UNKNOWN_LOC,
    ):
        self.operands: list[Value] = list(operands)
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

    def replace_all_uses(self, old: Value, new: Value) -> None:
        """Within this op's regions, make every use of ``old`` a use of ``new``."""
        for op in self.walk():
            op.operands = [new if v is old else v for v in op.operands]

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
    pure = False

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


def users(root: Op | Module) -> dict[Value, list[Op]]:
    """Map every value to the ops that use it, within ``root``."""
    uses: dict[Value, list[Op]] = {}
    for op in root.walk():
        for v in op.operands:
            uses.setdefault(v, []).append(op)
    return uses


def replace_uses(root: Op | Module, mapping: dict[Value, Value]) -> None:
    """Replace operands throughout ``root`` following ``mapping`` (old -> new)."""
    if not mapping:
        return
    for op in root.walk():
        op.operands = [mapping.get(v, v) for v in op.operands]
