"""The AST visitor: Python statements and expressions of a kernel -> tile IR.

It builds *structure*: scopes, SSA names, regions for ``if``/``for``/``while``
(in ``control_flow.py``), calls of other ``@jit`` functions. Everything typed --
promotion, broadcasting, pointer arithmetic -- is asked of the ``Semantic`` object.
Values are either Python values (numbers, dtypes, constexprs: folded at compile
time) or ``tensor``s (IR values).

Every node is visited under its source location, so ops carry the user's line and
any error names it (``CompilationError``).
"""

from __future__ import annotations

import ast
import builtins
import operator

from ..ir.core import Loc
from .control_flow import RETURN_VALUE, ControlFlowMixin, fold_early_return
from .errors import CompilationError, SemanticError
from .promotion import python_scalar_type
from .structure import is_python_number
from .values import block_ptr, constexpr, dtype, is_builtin, range_spec, tensor, unwrap

_BINOPS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
}
_PYOPS = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
    "<<": operator.lshift,
    ">>": operator.rshift,
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "is": operator.is_,
    "is not": operator.is_not,
    "in": lambda a, b: a in b,
    "not in": lambda a, b: a not in b,
}
_CMPOPS = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}
_UNSUPPORTED = {
    ast.Try: "try",
    ast.With: "with",
    ast.Lambda: "lambda",
    ast.ClassDef: "class definitions",
    ast.FunctionDef: "nested function definitions",
    ast.Break: "break",
    ast.Continue: "continue",
    ast.Global: "global",
    ast.Nonlocal: "nonlocal",
    ast.Delete: "del",
    ast.Raise: "raise",
    ast.Import: "import",
    ast.ImportFrom: "import",
    ast.ListComp: "list comprehensions",
    ast.DictComp: "dict comprehensions",
    ast.SetComp: "set comprehensions",
    ast.GeneratorExp: "generator expressions",
    ast.Yield: "yield",
    ast.Await: "await",
    ast.Starred: "starred expressions",
    ast.Dict: "dicts",
    ast.Set: "sets",
    ast.NamedExpr: ":=",
    ast.Match: "match",
}


def _is_tensorish(v) -> bool:
    return isinstance(unwrap(v), (tensor, block_ptr))


class CodeGenerator(ControlFlowMixin, ast.NodeVisitor):
    """Generates IR for one Python function's body into ``sem.builder``'s current block.

    ``info`` is the parsed function (``FunctionInfo``), ``ctx`` the module being built
    (compiled callees, the call stack), ``scope`` the initial local names.
    """

    def __init__(self, ctx, info, sem, scope: dict):
        self.ctx = ctx
        self.info = info
        self.sem = sem
        self.builder = sem.builder
        self.scope = dict(scope)
        self.returned = False
        self.ret_value = None
        self.runtime_depth = 0  # > 0 inside a run-time if/for/while
        self.loop_depth = 0  # > 0 inside a run-time for/while

    # ------------------------------------------------------------------ locations and errors
    def loc_of(self, node) -> Loc:
        return Loc(self.info.filename, self.info.first_line + node.lineno - 1, node.col_offset + self.info.indent)

    def error(self, node, message: str) -> CompilationError:
        line = self.info.first_line + getattr(node, "lineno", 1) - 1
        col = getattr(node, "col_offset", 0) + self.info.indent
        return CompilationError(message, self.info.filename, line, col, self.info.line_text(line))

    def visit(self, node):
        if not hasattr(node, "lineno"):
            return super().visit(node)
        with self.builder.location(self.loc_of(node)):
            try:
                return super().visit(node)
            except CompilationError:
                raise
            except (SemanticError, RuntimeError, TypeError, ValueError, AttributeError, IndexError, KeyError) as e:
                # as in Triton, the semantic error is the cause (tests match its message there)
                raise self.error(node, str(e) or type(e).__name__) from e.with_traceback(None)
            except Exception as e:  # an internal error: still name the user's line
                raise self.error(node, f"internal compiler error: {type(e).__name__}: {e}") from e

    def generic_visit(self, node):
        what = _UNSUPPORTED.get(type(node), type(node).__name__)
        raise self.error(node, f"unsupported construct: {what} is not allowed in a kernel")

    # ------------------------------------------------------------------ statements
    def visit_body(self, stmts) -> None:
        stmts = list(stmts)
        while stmts and not self.returned:
            stmt, stmts = fold_early_return(stmts[0], stmts[1:])
            self.visit(stmt)

    def visit_Module(self, node):
        self.visit_body(node.body)

    def visit_Pass(self, node):
        pass

    def visit_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        self.visit(node.value)

    def visit_Assign(self, node):
        value = self.visit(node.value)
        for target in node.targets:
            self.assign(target, value)

    def visit_AnnAssign(self, node):
        value = self.visit(node.value) if node.value is not None else None
        annotation = self.visit(node.annotation)
        if annotation is constexpr:
            if _is_tensorish(value):
                raise SemanticError(f"'{ast.unparse(node.target)}' is annotated tl.constexpr but its value is a tensor")
            value = constexpr(value)
        self.assign(node.target, value)

    def visit_AugAssign(self, node):
        current = (
            self.visit(ast.Name(node.target.id, ast.Load(), lineno=node.lineno, col_offset=node.col_offset))
            if isinstance(node.target, ast.Name)
            else None
        )
        if current is None:
            raise SemanticError("augmented assignment is only supported on plain names")
        self.assign(node.target, self.binop(_BINOPS[type(node.op)], current, self.visit(node.value)))

    def assign(self, target, value) -> None:
        if isinstance(target, ast.Name):
            self.scope[target.id] = value
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            value = unwrap(value)
            if not isinstance(value, (tuple, list)) or len(value) != len(target.elts):
                raise SemanticError(f"cannot unpack {value!r} into {len(target.elts)} names")
            for t, v in zip(target.elts, value):
                self.assign(t, v)
            return
        raise SemanticError(f"cannot assign to {ast.unparse(target)}: only names and tuples of names can be assigned")

    def visit_Return(self, node):
        if self.loop_depth:
            raise SemanticError("return inside a run-time for/while is not supported; assign a variable instead")
        value = self.visit(node.value) if node.value is not None else None
        if self.runtime_depth:  # in an if region: merged with the other branch's (control_flow.visit_If)
            self.scope[RETURN_VALUE] = value
        else:
            self.ret_value = value
        self.returned = True

    def visit_Assert(self, node):
        cond = self.visit(node.test)
        msg = self.visit(node.msg) if node.msg is not None else ""
        if _is_tensorish(cond):
            self.sem.device_assert(cond, str(unwrap(msg)) or ast.unparse(node.test))
        elif not unwrap(cond):
            raise SemanticError(f"assertion failed: {unwrap(msg) or ast.unparse(node.test)}")

    # ------------------------------------------------------------------ names and constants
    def visit_Name(self, node):
        name = node.id
        if name in self.scope:
            return self.scope[name]
        found, value = self.info.lookup_global(name)
        if found:
            return value
        if name in _PY_BUILTINS:
            return _PY_BUILTINS[name]
        raise SemanticError(f"name '{name}' is not defined")

    def visit_Constant(self, node):
        return node.value

    def visit_Tuple(self, node):
        return tuple(self.visit(e) for e in node.elts)

    def visit_List(self, node):
        return [self.visit(e) for e in node.elts]

    def visit_JoinedStr(self, node):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
                continue
            value = self.visit(v.value)
            if _is_tensorish(value):
                raise SemanticError("f-strings can only format compile-time values (use them in tl.static_print)")
            spec = self.visit(v.format_spec) if v.format_spec is not None else ""
            conv = {-1: str, 115: str, 114: repr, 97: ascii}[v.conversion]
            parts.append(format(conv(unwrap(value)) if v.conversion != -1 else unwrap(value), spec))
        return "".join(parts)

    def visit_Attribute(self, node):
        obj = self.visit(node.value)
        target = obj if isinstance(obj, (tensor, dtype, block_ptr)) else unwrap(obj)
        if node.attr == "dtype" and is_python_number(target):  # `value = 1; value.dtype`: the literal's type
            return dtype(python_scalar_type(target))
        if not hasattr(target, node.attr):
            raise SemanticError(f"'{type(target).__name__}' object has no attribute '{node.attr}'")
        return getattr(target, node.attr)

    def visit_Subscript(self, node):
        value = self.visit(node.value)
        index = self.visit(node.slice)
        if isinstance(value, tensor):
            return self.sem.subscript(value, index)
        value, index = unwrap(value), unwrap(index)
        if _is_tensorish(index):
            raise SemanticError("tuples and lists can only be indexed with compile-time integers")
        return value[index]

    def visit_Slice(self, node):
        parts = [self.visit(p) if p is not None else None for p in (node.lower, node.upper, node.step)]
        return slice(*(unwrap(p) for p in parts))

    # ------------------------------------------------------------------ operators
    def binop(self, symbol: str, a, b):
        if isinstance(unwrap(a), tensor) or isinstance(unwrap(b), tensor):
            return self.sem.binary(symbol, unwrap(a), unwrap(b))
        if isinstance(unwrap(a), block_ptr) or isinstance(unwrap(b), block_ptr):
            raise SemanticError(f"unsupported operand for {symbol}: block pointer (use tl.advance)")
        result = _PYOPS[symbol](unwrap(a), unwrap(b))
        return constexpr(result) if isinstance(a, constexpr) or isinstance(b, constexpr) else result

    def visit_BinOp(self, node):
        if type(node.op) not in _BINOPS:
            raise SemanticError(f"unsupported operator {type(node.op).__name__}")
        return self.binop(_BINOPS[type(node.op)], self.visit(node.left), self.visit(node.right))

    def visit_Compare(self, node):
        left = self.visit(node.left)
        result = None
        for op, right_node in zip(node.ops, node.comparators):
            right = self.visit(right_node)
            symbol = _CMPOPS[type(op)]
            if symbol in ("is", "is not"):  # identity, known at compile time (`x is not None`)
                this = constexpr(_PYOPS[symbol](unwrap(left), unwrap(right)))
            elif _is_tensorish(left) or _is_tensorish(right):
                if symbol not in ("==", "!=", "<", "<=", ">", ">="):
                    raise SemanticError(f"'{symbol}' cannot compare tensors")
                this = self.sem.compare(symbol, unwrap(left), unwrap(right))
            else:
                this = _PYOPS[symbol](unwrap(left), unwrap(right))
            result = this if result is None else self.logical_and(result, this)
            left = right
        return result

    def logical_and(self, a, b):
        if _is_tensorish(a) or _is_tensorish(b):
            return self.sem.logical("and", unwrap(a), unwrap(b))
        return unwrap(a) and unwrap(b)

    def visit_BoolOp(self, node):
        is_and = isinstance(node.op, ast.And)
        result = self.visit(node.values[0])
        for value_node in node.values[1:]:
            if not _is_tensorish(result) and (bool(unwrap(result)) != is_and):
                return result  # Python short-circuit on a compile-time value
            value = self.visit(value_node)
            if _is_tensorish(result) or _is_tensorish(value):
                result = self.sem.logical("and" if is_and else "or", unwrap(result), unwrap(value))
            else:
                result = value
        return result

    def visit_UnaryOp(self, node):
        operand = self.visit(node.operand)
        symbol = {ast.USub: "-", ast.Invert: "~", ast.Not: "not", ast.UAdd: "+"}[type(node.op)]
        if isinstance(unwrap(operand), tensor):
            return operand if symbol == "+" else self.sem.unary(symbol, unwrap(operand))
        value = unwrap(operand)
        result = {"-": operator.neg, "~": operator.invert, "not": operator.not_, "+": operator.pos}[symbol](value)
        return constexpr(result) if isinstance(operand, constexpr) else result

    def visit_IfExp(self, node):
        cond = self.visit(node.test)
        if not _is_tensorish(cond):
            return self.visit(node.body if unwrap(cond) else node.orelse)
        return self.if_expression(cond, node)

    # ------------------------------------------------------------------ calls
    def visit_Call(self, node):
        fn = unwrap(self.visit(node.func))
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(unwrap(self.visit(a.value)))
            else:
                args.append(self.visit(a))
        kwargs = {kw.arg: self.visit(kw.value) for kw in node.keywords if kw.arg is not None}
        if any(kw.arg is None for kw in node.keywords):
            raise SemanticError("**kwargs in calls is not supported in a kernel")
        return self.call(fn, args, kwargs)

    def call(self, fn, args, kwargs):
        if is_builtin(fn):
            return fn(*args, _semantic=self.sem, **kwargs)
        if self.ctx.get_jit_fn(fn) is not None:
            return self.ctx.call_jit(self, fn, args, kwargs)
        special = _SPECIAL_CALLS.get(fn)
        if special is not None:
            return special(self, args, kwargs)
        return fn(*args, **kwargs)


# ---------------------------------------------------------------------- Python builtins


def _builtin_minmax(kind):
    def call(gen, args, kwargs):
        if len(args) == 1 and isinstance(unwrap(args[0]), (tuple, list)):
            args = list(unwrap(args[0]))
        if len(args) < 2:
            raise SemanticError(f"{kind}() needs at least two arguments in a kernel")
        if not any(_is_tensorish(a) for a in args):
            return (builtins.min if kind == "min" else builtins.max)(unwrap(a) for a in args)
        result = args[0]
        for a in args[1:]:
            result = gen.sem.minmax(kind, unwrap(result), unwrap(a))
        return result

    return call


def _builtin_print(gen, args, kwargs):
    prefix = "".join(str(unwrap(a)) for a in args if not _is_tensorish(a))
    values = [unwrap(a) for a in args if _is_tensorish(a)]
    gen.sem.device_print(prefix, values)


def _builtin_len(gen, args, kwargs):
    (x,) = args
    x = unwrap(x)
    return x.shape[0] if isinstance(x, tensor) else len(x)


def _builtin_number(kind):
    def call(gen, args, kwargs):
        (x,) = args
        if _is_tensorish(x):
            raise SemanticError(f"{kind.__name__}() needs a compile-time value; use x.to(...) on tensors")
        return kind(unwrap(x))

    return call


def _builtin_getattr(gen, args, kwargs):
    obj, name = args[0], unwrap(args[1])
    target = obj if isinstance(obj, (tensor, dtype, block_ptr)) else unwrap(obj)
    return getattr(target, name, *[unwrap(a) for a in args[2:]])


def _builtin_isinstance(gen, args, kwargs):
    obj, cls = args
    cls = unwrap(cls)
    return isinstance(obj, cls) or isinstance(unwrap(obj), cls)


_SPECIAL_CALLS = {
    builtins.min: _builtin_minmax("min"),
    builtins.max: _builtin_minmax("max"),
    builtins.print: _builtin_print,
    builtins.len: _builtin_len,
    builtins.float: _builtin_number(float),
    builtins.int: _builtin_number(int),
    builtins.bool: _builtin_number(bool),
    builtins.getattr: _builtin_getattr,
    builtins.isinstance: _builtin_isinstance,
    builtins.range: lambda gen, args, kwargs: range_spec(*args, **kwargs),
}

_PY_BUILTINS = {
    name: getattr(builtins, name)
    for name in (
        "min",
        "max",
        "print",
        "range",
        "len",
        "isinstance",
        "float",
        "int",
        "bool",
        "getattr",
        "tuple",
        "list",
        "abs",
        "enumerate",
        "zip",
        "str",
        "type",
        "hasattr",
        "None",
        "True",
        "False",
    )
    if hasattr(builtins, name)
}
