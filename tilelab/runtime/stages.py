"""The compiler stages the runtime calls, each behind one small function.

Why: the runtime drives four other layers (frontend, passes, IR parser, interpreter).
Reaching them through this one module keeps every import of compiler internals in a
single place, imported lazily so that ``import tilelab`` stays fast.

    module = build(fn, {"x": "*f32", "n": "i32"}, {"BLOCK": 128}, {"x": 16, "n": 1})
    records = run_passes(module, CompileOptions(target="interpret"), "interpret", snapshots=False)
"""

from __future__ import annotations

from tilelab.compiler.ir.types import parse_type


def build(fn, signature: dict[str, str], constants: dict, divisibility: dict[str, int]):
    """Python kernel -> tile IR module (the frontend's ``build_module``)."""
    from tilelab.compiler.frontend import build_module

    types = {name: parse_type(text) for name, text in signature.items()}
    return build_module(fn, signature=types, constants=constants, arg_divisibility=divisibility)


def run_passes(module, options, pipeline: str, snapshots: bool) -> list:
    """Run the ``pipeline`` of passes on ``module`` in place with ``options``; return the ``PassRecord`` list."""
    from tilelab.compiler.passes import pipeline as passes

    return passes.run(module, options, pipeline, snapshots=snapshots)


def print_ir(module) -> str:
    """The module's tile IR text (with source locations)."""
    from tilelab.compiler.ir.printer import print_module

    return print_module(module)


def parse_ir(text: str):
    """Tile IR text -> module: the inverse of ``print_ir``."""
    from tilelab.compiler.ir.parser import parse_module

    return parse_module(text)


def interpret(module, grid, args, sanitize: bool):
    """Run ``module`` on the numpy interpreter."""
    from tilelab.compiler.interpreter import run_kernel

    return run_kernel(module, grid=grid, args=args, sanitize=sanitize)


def compilation_error_types() -> tuple[type, ...]:
    """The exception types that mean 'the user's kernel does not compile'."""
    from tilelab.compiler.frontend.errors import CompilationError

    return (CompilationError,)


def jit_function_of(obj):
    """The Python function behind a jit object, or ``None`` (the frontend's ``get_jit_fn``)."""
    fn = getattr(obj, "_tilelab_fn", None)
    return fn if callable(fn) else None
