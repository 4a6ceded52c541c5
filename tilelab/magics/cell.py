"""What a ``%%tile_kernel`` cell does, step by step, without IPython display code.

1. ``define_kernel``: run the cell in the notebook namespace (under a file name IPython keeps
   in ``linecache``, so the compiler can read the source back) and wrap its last top-level
   function with ``tilelab.jit`` unless it already is a kernel;
2. ``specialize``: the signature (from ``--signature`` or the ``--args`` values) and constants;
3. ``tilelab.compile`` with snapshots on, for the inspector's pass viewer.

Mistakes come back as ``CellError``: one short message, plus the cell line to mark when
there is one.
"""

from __future__ import annotations

import ast
import os
import sys
from dataclasses import dataclass

import tilelab.language as tl
from tilelab import runtime
from tilelab.compiler.frontend.errors import CompilationError

from .options import OptionError, parse_consts, parse_signature, signature_from_args


class CellError(Exception):
    """A short, user-facing error of a cell: ``line`` is the cell's line to mark (1-based) or None."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.message, self.line = message, line

    def _render_traceback_(self):
        # IPython shows these lines instead of a traceback: none, the magic has displayed the message.
        return []


@dataclass
class DefinedKernel:
    """The kernel a cell defined: its name, the jit object and the file name of the cell."""

    name: str
    kernel: object
    filename: str


def _last_function(cell: str, filename: str) -> str:
    try:
        tree = ast.parse(cell, filename)
    except SyntaxError as e:
        raise CellError(f"line {e.lineno}: syntax error: {e.msg}", e.lineno) from None
    defs = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not defs:
        raise CellError("%%tile_kernel: the cell defines no function (write `def kernel(...):`)")
    return defs[-1]


def define_kernel(shell, cell: str) -> DefinedKernel:
    """Runs ``cell`` in ``shell``'s namespace; returns its last function, as a jit kernel."""
    filename = shell.compile.cache(cell, shell.execution_count, raw_code=cell)
    name = _last_function(cell, filename)
    shell.user_ns.setdefault("tl", tl)
    # the package itself, initialized before any of its modules: the magics sit below its public API
    shell.user_ns.setdefault("tilelab", sys.modules["tilelab"])
    exec(compile(cell, filename, "exec"), shell.user_ns)
    obj = shell.user_ns[name]
    if not isinstance(obj, runtime.JITFunction):
        obj = runtime.jit(obj)
        shell.user_ns[name] = obj
    return DefinedKernel(name, obj, filename)


def specialize(opts, kernel, namespace: dict) -> tuple[dict, dict]:
    """(signature, constants) of a cell from its options."""
    if opts.signature and opts.args:
        raise OptionError("give --signature or --args, not both")
    constants = parse_consts(opts.const)
    if opts.signature:
        signature = parse_signature(opts.signature)
    elif opts.args:
        signature = signature_from_args(opts.args, namespace)
    else:
        raise OptionError('%%tile_kernel needs --signature "x=*fp32, n=i32" or --args x,n to specialize the kernel')
    return signature, constants


def compile_cell(opts, defined: DefinedKernel, namespace: dict):
    """Compiles the cell's kernel; compiler and option errors become ``CellError``."""
    signature, constants = specialize(opts, defined.kernel, namespace)
    try:
        return runtime.compile(
            defined.kernel,
            signature=signature,
            constants=constants,
            target=runtime.choose_target(opts.target, set()),  # the runtime's choice: TILELAB_TARGET, else the host
            num_warps=opts.num_warps,
            num_stages=opts.num_stages,
            snapshots=True,
        )
    except CompilationError as e:
        same_file = os.path.basename(e.filename or "") == os.path.basename(defined.filename)
        line = e.line if same_file and e.line else None
        where = f"line {line}: " if line else ""
        raise CellError(f"{where}{e.message}", line) from None
    except runtime.LaunchError as e:
        raise CellError(str(e)) from None


def gpu_for_cell(opts, defined: DefinedKernel, namespace: dict):
    """``arch -> CompiledKernel`` of the cell's kernel for CUDA, for the inspector's GPU tabs.

    A CUDA target's own compile is its GPU view; other targets get one compiled on demand
    (no GPU needed: PTX, layouts and shared memory come from the compiler alone).
    """
    from tilelab.viz.gpu import gpu_compiler

    signature, constants = specialize(opts, defined.kernel, namespace)
    return gpu_compiler(
        defined.kernel, signature, constants, num_warps=opts.num_warps, num_stages=opts.num_stages, snapshots=True
    )
