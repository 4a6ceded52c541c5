"""Control flow for the code generator: ``if``, ``for`` and ``while``.

A compile-time condition (a constexpr, a Python value) visits only the taken
branch; ``tl.static_range`` unrolls. A run-time condition or loop builds a region op:

* ``if c:`` -> ``scf.if`` that yields every variable assigned in a branch and used
  after it (both branches must give it one type);
* ``for i in range(lo, hi):`` -> ``scf.for`` whose block arguments are the
  *loop-carried* variables: names assigned in the body that already lived before;
* ``while c:`` -> ``scf.while`` (condition region, body region) with the same rule.

A Python number carried by a loop (``acc = 0``) becomes a tensor of the type the
body gives it.
"""

from __future__ import annotations

import ast

from ..ir import ops
from ..ir import types as irt
from ..ir.core import Block, Value
from .errors import SemanticError
from .promotion import python_scalar_type
from .structure import flatten, is_python_number, rebuild
from .values import range_spec, tensor, unwrap

_MAX_TYPE_ROUNDS = 4
RETURN_VALUE = "$return"  # scope keys of a region that returned (names no user variable can have)
RETURNED = "$returned"


def _contains_return(stmt) -> bool:
    return any(isinstance(n, ast.Return) for n in ast.walk(stmt))


def fold_early_return(stmt, rest: list):
    """``if c: ...; return`` followed by ``rest`` becomes ``if c: ...; return  else: <orelse>; rest``.

    A run-time ``if`` is one structured region op, so a ``return`` inside it cannot jump past
    the code that follows; Triton accepts the pattern (loss kernels begin with
    ``if label == ignore_index: ...; return``), so the code that follows is moved into both
    branches (after a ``return`` it is never reached). Other statements come back unchanged.
    """
    if not isinstance(stmt, ast.If) or not rest or not _contains_return(stmt):
        return stmt, rest
    folded = ast.If(test=stmt.test, body=[*stmt.body, *rest], orelse=[*stmt.orelse, *rest])
    return ast.copy_location(folded, stmt), []


def assigned_names(stmts) -> list[str]:
    """Names assigned anywhere in ``stmts`` (in first-assignment order)."""
    names: dict[str, None] = {}
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.setdefault(node.id, None)
    return list(names)


def _type_of(value):
    """The IR scalar type a value is carried as (Python numbers by Triton's literal rules)."""
    if is_python_number(value):
        return python_scalar_type(unwrap(value))
    return None


class ControlFlowMixin:
    """``visit_If``, ``visit_For``, ``visit_While`` for ``CodeGenerator``."""

    # ------------------------------------------------------------------ helpers
    def _as_carried(self, value, elem_type=None):
        """A value that can cross a region boundary: Python numbers become tensors."""
        if is_python_number(value):
            return self.sem.constant(unwrap(value), elem_type or python_scalar_type(unwrap(value)))
        return value

    def _carryable(self, value) -> bool:
        return is_python_number(value) or bool(flatten(value)[1])

    def _run_region(self, block: Block, stmts, scope: dict, loop: bool = False) -> dict:
        """Visit ``stmts`` into ``block`` with ``scope``; give back the scope after them.

        A ``return`` met in an ``if`` region leaves its value in the scope (``RETURN_VALUE``) and
        marks it (``RETURNED``); ``visit_If`` then merges the branches' values like variables.
        """
        saved, saved_returned = self.scope, self.returned
        self.scope = dict(scope)
        self.runtime_depth += 1
        self.loop_depth += loop
        self.returned = False
        try:
            with self.builder.at_end(block):
                self.visit_body(stmts)
            if self.returned:
                self.scope[RETURNED] = True
            return self.scope
        finally:
            self.runtime_depth -= 1
            self.loop_depth -= loop
            self.scope, self.returned = saved, saved_returned

    def _coerce(self, block: Block, value, like):
        """``value`` made to match ``like``'s flattened types, with casts emitted at the end of ``block``."""
        with self.builder.at_end(block):
            tpl_like, parts_like = flatten(like)
            if is_python_number(value):
                value = self.sem.constant(unwrap(value), parts_like[0].type)
            tpl, parts = flatten(value)
            if len(parts) != len(parts_like):
                raise SemanticError(f"{value!r} and {like!r} do not have the same structure")
            fixed = []
            for p, q in zip(parts, parts_like):
                if p.type != q.type:
                    raise SemanticError(f"type {p.type} does not match {q.type}")
                fixed.append(p)
            return rebuild(tpl, iter(fixed))

    # ------------------------------------------------------------------ if
    def visit_If(self, node):
        cond = self.visit(node.test)
        if not isinstance(unwrap(cond), tensor):
            self.visit_body(node.body if unwrap(cond) else node.orelse)
            return
        cond = self.sem.cast(unwrap(cond), irt.i1)
        if cond.type.is_tensor and cond.type.numel == 1:
            cond = self.sem.item(cond)  # a one-element tile is unsplatted, as in Triton
        if cond.type.is_tensor:
            raise SemanticError(f"an if condition must be a scalar, got a tensor of shape {list(cond.type.shape)}")
        op = ops.IfOp(cond.handle, [])
        then_scope = self._run_region(op.then_block, node.body, self.scope)
        else_scope = self._run_region(op.else_block, node.orelse, self.scope)
        returned = [scope.pop(RETURNED, False) for scope in (then_scope, else_scope)]
        merged = self._merge_branches(op, then_scope, else_scope)
        self.builder.insert(op)
        self._bind_results(op, merged)
        if any(returned):  # what followed the if was folded into both branches (fold_early_return)
            self.returned = True
            self.ret_value = self.scope.pop(RETURN_VALUE, None)

    def _merge_branches(self, op, then_scope, else_scope) -> list[tuple[str, object]]:
        """Yield, from both branches, each variable they change; returns (name, template) pairs."""
        merged, then_vals, else_vals = [], [], []
        for name in dict.fromkeys([*then_scope, *else_scope]):
            if name not in then_scope or name not in else_scope:
                continue  # defined in one branch only: not visible after the if
            a, b = then_scope[name], else_scope[name]
            before = self.scope.get(name, _MISSING)
            if a is before and b is before:
                continue
            if not (self._carryable(a) and self._carryable(b)):
                if a is b or a == b:
                    self.scope[name] = a
                    continue
                raise SemanticError(f"variable '{name}' is set to different compile-time values in the two branches")
            a, b = self._unify_branch_values(f"variable '{name}'", op, a, b)
            tpl, parts = flatten(a)
            then_vals += parts
            else_vals += flatten(b)[1]
            merged.append((name, tpl))
        with self.builder.at_end(op.then_block):
            self.builder.insert(ops.YieldOp([p.handle for p in then_vals]))
        with self.builder.at_end(op.else_block):
            self.builder.insert(ops.YieldOp([p.handle for p in else_vals]))
        op.results = [Value(p.type, op, i) for i, p in enumerate(then_vals)]
        return merged

    def _unify_branch_values(self, what, op, a, b):
        if is_python_number(a) and is_python_number(b):
            t = _type_of(a) if _type_of(a) == _type_of(b) else irt.f32 if isinstance(unwrap(a), float) else _type_of(b)
            with self.builder.at_end(op.then_block):
                a = self.sem.cast_scalar_to(a, t)
            with self.builder.at_end(op.else_block):
                b = self.sem.cast_scalar_to(b, t)
            return a, b
        try:
            if is_python_number(a):
                return self._coerce(op.then_block, a, b), b
            return a, self._coerce(op.else_block, b, a)
        except SemanticError:
            ta, tb = ", ".join(str(p.type) for p in flatten(a)[1]), ", ".join(str(p.type) for p in flatten(b)[1])
            raise SemanticError(f"{what} has type {ta} in the then branch but {tb} in the else branch") from None

    def if_expression(self, cond, node):
        """``a if c else b`` with a run-time ``c``.

        A scalar ``c`` (or a one-element tile) gives an ``scf.if`` whose branches compute ``a`` and
        ``b``: as in Triton, only the taken branch runs, so its loads, stores and atomics happen only
        when it is taken. Both branches give a value of one type (numbers are cast as for an ``if``
        statement's variables) or both give nothing (``tl.store(...) if c else tl.store(...)``). A
        tile ``c`` picks per element: ``tl.where(c, a, b)``, both computed.
        """
        scalar = self.sem.cast(unwrap(cond), irt.i1)
        if scalar.type.is_tensor and scalar.type.numel == 1:
            scalar = self.sem.item(scalar)
        if scalar.type.is_tensor:
            return self.sem.where(cond, self.visit(node.body), self.visit(node.orelse))
        op = ops.IfOp(scalar.handle, [])
        values = []
        self.runtime_depth += 1
        try:
            for block, expr in ((op.then_block, node.body), (op.else_block, node.orelse)):
                with self.builder.at_end(block):
                    values.append(self.visit(expr))
        finally:
            self.runtime_depth -= 1
        a, b = values
        if (unwrap(a) is None) != (unwrap(b) is None):
            raise SemanticError(
                "a conditional expression with a run-time condition needs a value from both branches, or from neither"
            )
        if unwrap(a) is None:
            a = b = ()
        elif not (self._carryable(a) and self._carryable(b)):
            raise SemanticError("a conditional expression with a run-time condition needs tensor or number values")
        else:
            a, b = self._unify_branch_values("the conditional expression", op, a, b)
        tpl, then_parts = flatten(a)
        for block, parts in ((op.then_block, then_parts), (op.else_block, flatten(b)[1])):
            with self.builder.at_end(block):
                self.builder.insert(ops.YieldOp([p.handle for p in parts]))
        op.results = [Value(p.type, op, i) for i, p in enumerate(then_parts)]
        self.builder.insert(op)
        if unwrap(values[0]) is None:
            return None
        return rebuild(tpl, iter(tensor(r, self.sem) for r in op.results))

    def _bind_results(self, op, merged) -> None:
        results = iter(tensor(r, self.sem) for r in op.results)
        for name, tpl in merged:
            self.scope[name] = rebuild(tpl, results)

    # ------------------------------------------------------------------ for
    def visit_For(self, node):
        if node.orelse:
            raise SemanticError("for ... else is not supported in a kernel")
        spec = self.visit(node.iter)
        spec = unwrap(spec)
        if isinstance(spec, (tuple, list)) and not isinstance(spec, tensor):
            for item in spec:
                self.assign(node.target, item)
                self.visit_body(node.body)
            return
        if not isinstance(spec, range_spec):
            raise SemanticError("a for loop must iterate over range, tl.range, tl.static_range or a tuple")
        if spec.static:
            return self._static_for(node, spec)
        self._runtime_for(node, spec)

    def _static_for(self, node, spec):
        bounds = [unwrap(v) for v in (spec.start, spec.end, spec.step)]
        if not all(isinstance(v, int) for v in bounds):
            raise SemanticError("tl.static_range bounds must be compile-time integers (tl.constexpr)")
        for i in range(*bounds):
            self.assign(node.target, i)
            self.visit_body(node.body)

    def _loop_bounds(self, spec):
        bounds = [self.sem.to_tensor(v) for v in (spec.start, spec.end, spec.step)]
        for b in bounds:
            if not b.type.is_scalar or not b.type.is_int:
                raise SemanticError(f"range bounds must be integer scalars, got {b.type}")
        wide = irt.i64 if any(b.type.bits == 64 for b in bounds) else irt.i32
        return [self.sem.cast(b, wide) for b in bounds]

    def _carried_names(self, body) -> list[str]:
        names = []
        for name in assigned_names(body):
            if name in self.scope and self._carryable(self.scope[name]):
                names.append(name)
        return names

    def _runtime_for(self, node, spec):
        lb, ub, step = self._loop_bounds(spec)
        names = self._carried_names(node.body)

        def build(inits):
            op = ops.ForOp(lb.handle, ub.handle, step.handle, [], num_stages=spec.num_stages)
            if spec.loop_unroll_factor is not None:
                op.attrs["loop_unroll_factor"] = spec.loop_unroll_factor
            body_scope, templates = self._loop_block(op.body, inits, node.target, node.body, iv=True)
            return op, op.body, body_scope, templates

        self._build_loop(names, build, [lb.handle, ub.handle, step.handle])

    def _build_loop(self, names, build, bound_operands):
        """Build a loop until its carried types hold steady, then close it and bind its results.

        ``build(inits)`` makes the loop op and visits its body once, returning the op,
        the block that yields, the body's scope and the carried values' templates. A
        body that widens a carried value (``acc = acc + 1.0`` on an int) is built again
        with the wider type, a few rounds at most.
        """
        types = {n: _type_of(self.scope[n]) for n in names}
        for _ in range(_MAX_TYPE_ROUNDS):
            inits = {n: self._as_carried(self.scope[n], types[n]) for n in names}
            op, block, body_scope, templates = build(inits)
            new_types = self._retype(names, inits, body_scope, types)
            if new_types is None:
                break
            op.drop_references()  # built again with the wider types: this try's ops must not stay users
            types = new_types
        else:
            raise SemanticError("could not settle the types of the loop-carried variables")
        self._finish_loop(op, block, inits, body_scope, templates, names)
        op.operands = bound_operands + [p.handle for n in names for p in flatten(inits[n])[1]]
        self.builder.insert(op)
        self._bind_loop_results(op, names, templates)

    def _loop_block(self, block, inits, target, body, iv=False):
        """Give ``block`` one argument per carried tensor, bind the names, visit the body."""
        scope, templates = dict(self.scope), {}
        for name, value in inits.items():
            tpl, parts = flatten(value)
            args = [block.add_arg(p.type, name) for p in parts]
            templates[name] = tpl
            scope[name] = rebuild(tpl, iter(tensor(a, self.sem) for a in args))
        if iv:
            block.args[0].name_hint = target.id if isinstance(target, ast.Name) else None
            saved = self.scope
            self.scope = scope
            self.assign(target, tensor(block.args[0], self.sem))
            scope, self.scope = self.scope, saved
        return self._run_region(block, body, scope, loop=True), templates

    def _retype(self, names, inits, body_scope, types):
        """None when every carried value keeps its type; else the types to retry with."""
        new = dict(types)
        for name in names:
            out, init = body_scope[name], inits[name]
            if is_python_number(out):
                continue
            p_out, p_in = flatten(out)[1], flatten(init)[1]
            if [p.type for p in p_out] == [p.type for p in p_in]:
                continue
            if types[name] is not None and len(p_out) == 1:
                new[name] = p_out[0].type
                continue
            got = ", ".join(str(p.type) for p in p_out)
            was = ", ".join(str(p.type) for p in p_in)
            raise SemanticError(
                f"loop-carried variable '{name}' has type {was} before the loop but {got} after an iteration"
            )
        return None if new == types else new

    def _finish_loop(self, op, block, inits, body_scope, templates, names):
        values = [self._coerce(block, body_scope[n], inits[n]) for n in names]
        with self.builder.at_end(block):
            self.builder.insert(ops.YieldOp([p.handle for v in values for p in flatten(v)[1]]))
        result_types = [p.type for n in names for p in flatten(inits[n])[1]]
        op.results = [Value(t, op, i) for i, t in enumerate(result_types)]

    def _bind_loop_results(self, op, names, templates):
        results = iter(tensor(r, self.sem) for r in op.results)
        for name in names:
            self.scope[name] = rebuild(templates[name], results)

    # ------------------------------------------------------------------ while
    def visit_While(self, node):
        if node.orelse:
            raise SemanticError("while ... else is not supported in a kernel")
        names = self._carried_names(node.body)

        def build(inits):
            op = ops.WhileOp([])
            cond_scope, templates = self._loop_block(op.before, inits, None, [], iv=False)
            self._while_condition(node, op, cond_scope, names)
            body_scope, _ = self._loop_block(op.after, inits, None, node.body, iv=False)
            return op, op.after, body_scope, templates

        self._build_loop(names, build, [])

    def _while_condition(self, node, op, scope, names):
        saved = self.scope
        self.scope = scope
        try:
            with self.builder.at_end(op.before):
                cond = self.visit(node.test)
                if not isinstance(unwrap(cond), tensor):
                    raise SemanticError("a while condition must be a run-time value (use tl.static_range to unroll)")
                cond = self.sem.cast(unwrap(cond), irt.i1)
                if cond.type.is_tensor:
                    raise SemanticError(f"a while condition must be a scalar, got shape {list(cond.type.shape)}")
                self.builder.insert(ops.ConditionOp(cond.handle, list(op.before.args)))
        finally:
            self.scope = saved


class _Missing:
    pass


_MISSING = _Missing()
