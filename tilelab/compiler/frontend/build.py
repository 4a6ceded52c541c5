"""``build_module``: a kernel function (and the ``@jit`` functions it calls) -> a tile IR module.

    module = build_module(add, {"x": PointerType(f32), "n": i32}, {"BLOCK": 1024})

The kernel becomes the module's kernel ``FuncOp``; parameters in ``constants`` are
specialized away (they do not become arguments). Each called ``@jit`` function is
compiled into its own ``FuncOp``, once per combination of argument types and
compile-time argument values, and called with ``tt.call``.
"""

from __future__ import annotations

import ast
import functools
import inspect
import linecache
import textwrap

from ..ir import ops
from ..ir import types as irt
from ..ir.core import FuncOp, Loc, Module
from ..ir.rewriter import Builder
from .code_generator import CodeGenerator
from .descriptor_args import DescriptorArg
from .errors import CompilationError, SemanticError
from .semantic import Semantic
from .structure import flatten, rebuild
from .tuple_args import TupleArg
from .values import constexpr, tensor, tensor_descriptor, unwrap


def get_jit_fn(obj):
    """The Python function behind a ``@jit`` object (anything with ``_tilelab_fn``), else None."""
    fn = getattr(obj, "_tilelab_fn", None)
    return fn if callable(fn) else None


@functools.lru_cache(maxsize=1024)
def _parsed_source(code) -> tuple[str, list[str], int, ast.FunctionDef]:
    """``(filename, lines, first_line, FunctionDef node)`` of a function's code object, read and parsed once.

    Reading the source (``inspect`` tokenizes the whole file) and parsing it are most of a warm
    compile; a code object never changes, and redefining a function (a notebook cell run again)
    makes a new one, so the cache cannot go stale. The code generator never mutates the AST.
    """
    lines, first_line, filename = _source_lines(code)
    tree = ast.parse(textwrap.dedent("".join(lines)))
    node = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return filename, lines, first_line, node


def _source_lines(code) -> tuple[list[str], int, str]:
    """The lines of the function whose code object is ``code``, its first line and its file.

    Reads through ``linecache`` (which also holds notebook cells) and cuts the function out with
    ``inspect.getblock``: this is what ``inspect.getsourcelines`` does, without its search for the
    module, which visits every loaded module the first time (tens of milliseconds).
    """
    filename = code.co_filename
    all_lines = linecache.getlines(filename)
    start = code.co_firstlineno - 1
    if not all_lines or start >= len(all_lines):
        lines, first_line = inspect.getsourcelines(code)
        return lines, first_line, inspect.getsourcefile(code) or inspect.getfile(code)
    return inspect.getblock(all_lines[start:]), code.co_firstlineno, filename


class FunctionInfo:
    """A Python function's source, AST and names, with the file and line it came from."""

    def __init__(self, fn):
        self.fn = fn
        self.name = fn.__name__
        try:
            self.filename, lines, self.first_line, self.node = _parsed_source(fn.__code__)
        except (OSError, TypeError) as e:
            raise CompilationError(f"cannot read the source of {fn.__name__}: {e}") from None
        self.lines = lines
        self.source = "".join(lines)
        first = next((ln for ln in lines if ln.strip()), "")
        self.indent = len(first) - len(first.lstrip())
        self.globals = fn.__globals__
        self.closure = inspect.getclosurevars(fn).nonlocals if fn.__closure__ else {}
        self.params = inspect.signature(fn).parameters

    def line_text(self, line: int) -> str:
        index = line - self.first_line
        return self.lines[index] if 0 <= index < len(self.lines) else ""

    def lookup_global(self, name: str):
        if name in self.closure:
            return True, self.closure[name]
        if name in self.globals:
            return True, self.globals[name]
        return False, None

    def is_constexpr_param(self, name: str) -> bool:
        ann = self.params[name].annotation
        if ann is constexpr:
            return True
        return isinstance(ann, str) and ann.split(".")[-1] == "constexpr"


class ModuleContext:
    """The module under construction: compiled callees by specialization, the call stack."""

    def __init__(self, module: Module):
        self.module = module
        self.callees: dict = {}
        self.stack: list = []
        self.names: set[str] = set()
        self.infos: dict = {}

    get_jit_fn = staticmethod(get_jit_fn)

    def info(self, fn) -> FunctionInfo:
        if fn not in self.infos:
            self.infos[fn] = FunctionInfo(fn)
        return self.infos[fn]

    def unique_name(self, base: str) -> str:
        name, k = base, 0
        while name in self.names:
            k += 1
            name = f"{base}_{k}"
        self.names.add(name)
        return name

    def generate(self, info, func: FuncOp, bind) -> tuple[CodeGenerator, object]:
        """Visit ``info``'s body into ``func``; ``bind(sem)`` gives the initial scope. Returns the return value."""
        builder = Builder(func.body, Loc(info.filename, info.first_line, 0))
        sem = Semantic(builder)
        gen = CodeGenerator(self, info, sem, bind(sem))
        sem.inline_call = lambda fn, args: self.inline(gen, fn, args)
        self.stack.append(info.fn)
        try:
            gen.visit_body(info.node.body)
        finally:
            self.stack.pop()
        return gen, gen.ret_value

    def inline(self, caller: CodeGenerator, fn_obj, args):
        """Generate ``fn_obj``'s body right here (combine functions of reductions and scans)."""
        fn = get_jit_fn(fn_obj) or fn_obj
        info = self.info(fn)
        scope = _bind_args(info, args, {})
        gen = CodeGenerator(self, info, caller.sem, scope)
        gen.visit_body(info.node.body)
        return gen.ret_value

    def call_jit(self, caller: CodeGenerator, fn_obj, args, kwargs):
        """Compile (once per specialization) and call another ``@jit`` function."""
        fn = get_jit_fn(fn_obj)
        if fn in self.stack:
            raise SemanticError(f"recursive call of {fn.__name__} is not supported")
        info = self.info(fn)
        bound = _bind_args(info, args, kwargs)
        key, runtime = _specialization(info, bound)
        if key not in self.callees:
            self.callees[key] = self._compile_callee(info, bound, runtime)
        name, result_template, result_types = self.callees[key]
        flat = [p.handle for n in runtime for p in flatten(bound[n])[1]]
        op = ops.CallOp(name, flat, result_types)
        caller.builder.insert(op)
        return rebuild(result_template, iter(tensor(r, caller.sem) for r in op.results))

    def _compile_callee(self, info, bound, runtime):
        arg_types, arg_names, templates = [], [], {}
        for n in runtime:
            tpl, parts = flatten(bound[n])
            templates[n] = tpl
            arg_types += [p.type for p in parts]
            arg_names += [n if len(parts) == 1 else f"{n}_{i}" for i in range(len(parts))]
        func = FuncOp(self.unique_name(info.name), arg_types, [], arg_names, Loc(info.filename, info.first_line, 0))
        func.attrs["kernel"] = False
        self.module.funcs.append(func)

        def bind(sem):
            args = iter(tensor(a, sem) for a in func.args)
            scope = dict(bound)
            for n in runtime:
                scope[n] = rebuild(templates[n], args)
            return scope

        gen, ret = self.generate(info, func, bind)
        with gen.builder.at_end(func.body):
            ret = _materialize(gen.sem, ret)
            tpl, parts = flatten(ret)
            gen.builder.insert(ops.ReturnOp([p.handle for p in parts]))
        result_types = [p.type for p in parts]
        func.attrs["result_types"] = tuple(result_types)
        return func.sym_name, tpl, result_types


def _bind_args(info: FunctionInfo, args, kwargs) -> dict:
    try:
        bound = inspect.Signature(list(info.params.values())).bind(*args, **kwargs)
    except TypeError as e:
        raise SemanticError(f"bad arguments for {info.name}: {e}") from None
    bound.apply_defaults()
    scope = dict(bound.arguments)
    for name in scope:
        if info.is_constexpr_param(name) and not isinstance(scope[name], constexpr):
            if flatten(scope[name])[1]:
                raise SemanticError(f"argument '{name}' of {info.name} is a tl.constexpr but got a run-time value")
            scope[name] = constexpr(scope[name])
    return scope


def _specialization(info, bound):
    """A hashable key of a call (argument types, constant values) and the run-time parameter names."""
    key, runtime = [info.fn], []
    for name, value in bound.items():
        tpl, parts = flatten(value)
        if parts:
            runtime.append(name)
            key.append((name, _template_key(tpl), tuple(p.type for p in parts)))
        else:
            key.append((name, "const", _hashable(unwrap(value))))
    return tuple(key), runtime


def _template_key(tpl):
    if isinstance(tpl, tuple) and tpl and tpl[0] == "block_ptr" and isinstance(tpl[1], tensor_descriptor):
        desc = tpl[1]  # its Python-int shape and strides are compiled into the callee
        fields = tuple(None if isinstance(v, tensor) else _hashable(unwrap(v)) for v in (*desc.shape, *desc.strides))
        return ("tensor_descriptor", tuple(desc.block_shape), desc.padding, fields)
    if isinstance(tpl, tuple) and tpl and tpl[0] == "block_ptr":
        return ("block_ptr", tpl[1].block_shape, tpl[1].order)
    if isinstance(tpl, tuple) and tpl and tpl[0] == "python":
        return ("python", _hashable(unwrap(tpl[1])))
    if isinstance(tpl, tuple) and len(tpl) == 2 and isinstance(tpl[1], tuple):
        return (tpl[0], tuple(_template_key(t) for t in tpl[1]))
    return tpl


def _hashable(v):
    try:
        hash(v)
        return (type(v).__name__, v)
    except TypeError:
        return (type(v).__name__, repr(v))


def _materialize(sem, value):
    """Python numbers returned from a function become tensors (tuples element-wise)."""
    if isinstance(value, (tuple, list)):
        return type(value)(_materialize(sem, v) for v in value)
    if isinstance(unwrap(value), (bool, int, float)) and not isinstance(value, tensor):
        return sem.to_tensor(value)
    return value


def _kernel_params(info: FunctionInfo, signature: dict, constants: dict):
    """(arg names, arg types, constant scope, descriptor parameters) for the kernel's parameters, in order.

    A host ``TensorDescriptor`` parameter (a ``DescriptorArg`` in ``constants``) and a tuple parameter (a
    ``TupleArg``) contribute their runtime parts as arguments; the last result maps each to ``(spec, part names)``.
    """
    names, types, scope, descriptors = [], [], {}, {}

    def error(message):
        return CompilationError(message, info.filename, info.first_line, 0, info.line_text(info.first_line))

    def add_arg(name):
        t = signature[name]
        names.append(name)
        types.append(irt.parse_type(t) if isinstance(t, str) else t)

    def add_parts(name, spec, kind):
        """The parts of a descriptor or tuple parameter: arguments where typed, else constants."""
        parts = spec.part_names(name)
        for part in parts:
            if part in info.params:
                raise error(f"argument '{name}' is a {kind} and needs the name '{part}' for its parts")
            if part in signature:
                add_arg(part)
            elif part not in constants:
                raise error(f"{kind} '{name}' has neither a type nor a value for its part '{part}'")
        descriptors[name] = (spec, parts)
        return parts

    for name, param in info.params.items():
        spec = constants.get(name)
        if isinstance(spec, DescriptorArg):
            parts = add_parts(name, spec, "tensor descriptor")
            if parts[0] not in names or not types[names.index(parts[0])].is_pointer:
                raise error(f"tensor descriptor '{name}' needs a pointer type for its base '{parts[0]}'")
        elif isinstance(spec, TupleArg):
            add_parts(name, spec, "tuple")
        elif name in constants:
            scope[name] = constexpr(constants[name])
        elif name in signature:
            if info.is_constexpr_param(name):
                raise error(
                    f"argument '{name}' is a tl.constexpr: give its value in constants, not a type in the signature"
                )
            add_arg(name)
        elif param.default is not inspect.Parameter.empty:
            scope[name] = constexpr(param.default)
        else:
            raise error(f"argument '{name}' has neither a type in the signature nor a value in constants")
    return names, types, scope, descriptors


def _part_values(sem, descriptors: dict, args: dict, constants: dict) -> dict:
    """The ``tensor_descriptor`` of each host descriptor parameter and the tuple of each tuple parameter, over
    their argument tensors and constants."""
    values = {}
    for name, (spec, parts) in descriptors.items():
        if isinstance(spec, TupleArg):  # a Python tuple of its elements; an int specialized to 1 stays an i32
            values[name] = tuple(args[p] if p in args else _specialized_value(sem, constants[p]) for p in parts)
            continue
        base, *rest = (args[p] if p in args else constants[p] for p in parts)
        shape, strides = rest[: spec.rank], rest[spec.rank :]
        values[name] = sem.make_tensor_descriptor(base, shape, strides, list(spec.block_shape), spec.padding, host=True)
    return values


def _is_i32(value) -> bool:
    """An int a launch specialized to its value that a kernel still sees as an i32 scalar."""
    return type(value) is int and -(2**31) <= value < 2**31


def _specialized_value(sem, value):
    """A tuple element the launch specialized to a constant: an i32 for an int (as a plain int argument is)."""
    if _is_i32(value):
        return sem.constant(value, irt.i32)
    return None if value is None else constexpr(value)


def type_string(t) -> str:
    """``*f32`` for pointers, the scalar name otherwise (``parse_type`` reads it back)."""
    return f"*{type_string(t.pointee)}" if isinstance(t, irt.PointerType) else str(t)


def build_module(fn, signature: dict, constants: dict, arg_divisibility: dict | None = None) -> Module:
    """Compile kernel ``fn`` (a function or a ``@jit`` object) into a tile IR module."""
    fn = get_jit_fn(fn) or fn
    constants = {k: unwrap(v) for k, v in (constants or {}).items()}
    info = FunctionInfo(fn)
    names, types, scope, descriptors = _kernel_params(info, signature, constants)
    module = Module([], kernel=info.name)
    ctx = ModuleContext(module)
    ctx.names.add(info.name)
    func = FuncOp(info.name, types, [], names, Loc(info.filename, info.first_line, 0))
    module.funcs.append(func)

    # an int argument specialized to its value (``1``, by the runtime) stays a tensor-like i32 scalar,
    # as in Triton: ``s.to(tl.float32)`` works whatever the value; constant folding still sees the 1
    specialized = {
        n: v for n, v in constants.items()
        if n in info.params and not info.is_constexpr_param(n) and _is_i32(v)
    }  # fmt: skip

    def bind(sem):
        values = {n: sem.constant(v, irt.i32) for n, v in specialized.items()}
        args = {n: tensor(a, sem) for n, a in zip(names, func.args)}
        return {**scope, **values, **args, **_part_values(sem, descriptors, args, constants)}

    gen, ret = ctx.generate(info, func, bind)
    with gen.builder.at_end(func.body):
        gen.builder.insert(ops.ReturnOp([]))
    if ret is not None:
        raise gen.error(info.node, "a kernel cannot return a value")
    func.attrs.update(
        kernel=True,
        arg_divisibility=tuple(int((arg_divisibility or {}).get(n, 1)) for n in names),
        source=info.source,
        filename=info.filename,
        first_line=info.first_line,
    )
    module.attrs["constants"] = dict(constants)
    module.attrs["signature"] = {n: type_string(t) for n, t in zip(names, types)}
    return module
