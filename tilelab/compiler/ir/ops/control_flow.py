"""Control-flow ops: loops, conditionals, calls and the terminators that end their bodies."""

from __future__ import annotations

from ..core import UNKNOWN_LOC, Block, Loc, Op, Region, Value
from ..traits import Loop, Terminator
from ..types import Type, i1


class YieldOp(Op):
    """Ends a for/if/while-after body, handing values to the parent op."""

    name = "scf.yield"
    traits = frozenset({Terminator})

    def __init__(self, values: list[Value] = (), loc: Loc = UNKNOWN_LOC):
        super().__init__(values, [], loc=loc)

    def _verify(self) -> None:
        self.expect_counts((0, None), 0)


class ConditionOp(Op):
    """Ends a while's ``before`` region: continue while ``cond``, forwarding ``values``."""

    name = "scf.condition"
    traits = frozenset({Terminator})

    def __init__(self, cond: Value, values: list[Value], loc: Loc = UNKNOWN_LOC):
        super().__init__([cond, *values], [], loc=loc)

    def _verify(self) -> None:
        self.expect_counts((1, None), 0)
        self.expect(self.operands[0].type == i1, "the condition must be an i1 scalar")


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

    def add_carried(self, init: Value, name: str | None = None) -> Value:
        """Append a carried value starting at ``init`` (and its result); the body's new argument.

        The body's ``scf.yield`` is the caller's to extend with the value's next one.
        """
        self.operands.append(init)
        self.results.append(Value(init.type, self, len(self.results)))
        return self.body.add_arg(init.type, name)

    def _verify(self) -> None:
        self.expect_counts((3, None), len(self.operands) - 3, regions=1)
        bounds = {v.type for v in self.operands[:3]}
        (t,) = bounds if len(bounds) == 1 else (None,)
        self.expect(t is not None and t.is_scalar and t.is_int, "lb, ub and step must be integers of one type")
        carried = [v.type for v in self.init_args]
        self.expect(
            [a.type for a in self.body.args] == [t, *carried], "body arguments must be the iv and the carried values"
        )
        self.expect([r.type for r in self.results] == carried, "results must have the carried values' types")
        self.expect_terminator(self.body, YieldOp, len(carried))


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

    def _verify(self) -> None:
        self.expect_counts(1, None, regions=2)
        self.expect(self.operands[0].type == i1, "the condition must be an i1 scalar")
        for block in (self.then_block, self.else_block):
            self.expect(not block.args, "then/else blocks take no arguments")
            if self.results or block.ops:
                self.expect_terminator(block, YieldOp, len(self.results))


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

    def _verify(self) -> None:
        self.expect_counts((0, None), None, regions=2)
        self.expect(
            [a.type for a in self.before.args] == [v.type for v in self.operands], "before takes the carried values"
        )
        cond = self.before.terminator
        if not isinstance(cond, ConditionOp):
            self.fail("before region must end with scf.condition")
        forwarded = [v.type for v in cond.operands[1:]]
        self.expect([a.type for a in self.after.args] == forwarded, "after takes the values the condition forwards")
        self.expect([r.type for r in self.results] == forwarded, "results are the values the condition forwards")
        if not isinstance(self.after.terminator, YieldOp):
            self.fail("after region must end with scf.yield")


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

    def _verify(self) -> None:
        self.expect_counts((0, None), None)
        self.expect(isinstance(self.attrs.get("callee"), str), "needs a callee name")


class ReturnOp(Op):
    """Ends a function, returning ``values``."""

    name = "tt.return"
    traits = frozenset({Terminator})

    def __init__(self, values: list[Value] = (), loc: Loc = UNKNOWN_LOC):
        super().__init__(values, [], loc=loc)

    def _verify(self) -> None:
        self.expect_counts((0, None), 0)
