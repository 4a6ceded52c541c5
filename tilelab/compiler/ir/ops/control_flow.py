"""Control-flow ops: loops, conditionals, calls and the terminators that end their bodies."""

from __future__ import annotations

from ..core import UNKNOWN_LOC, Block, Loc, Op, Region, Value
from ..traits import Loop, Terminator
from ..types import Type


class YieldOp(Op):
    """Ends a for/if/while-after body, handing values to the parent op."""

    name = "scf.yield"
    traits = frozenset({Terminator})

    def __init__(self, values: list[Value] = (), loc: Loc = UNKNOWN_LOC):
        super().__init__(values, [], loc=loc)


class ConditionOp(Op):
    """Ends a while's ``before`` region: continue while ``cond``, forwarding ``values``."""

    name = "scf.condition"
    traits = frozenset({Terminator})

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
    traits = frozenset({Loop})

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
    traits = frozenset()

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
    traits = frozenset({Loop})

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
    traits = frozenset()

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
    traits = frozenset({Terminator})

    def __init__(self, values: list[Value] = (), loc: Loc = UNKNOWN_LOC):
        super().__init__(values, [], loc=loc)
