"""The numpy reference interpreter of the tile IR.

It executes a module one program instance at a time, every tile a numpy array, and is
the reference semantics of every op: the compiled backends are tested against it. It
also checks memory accesses (an out-of-bounds load is an error naming the kernel's
line, never a crash) and records the addresses one program touches, for the
coalescing views::

    from tilelab.compiler.interpreter import run_kernel, KernelRuntimeError

    result = run_kernel(module, grid=(4,), args=[x, y, out, n], trace_program=(0, 0, 0))
    for record in result.trace:
        print(record.kind, record.arg_name, record.addresses[:4])
"""

from .errors import AccessRecord, KernelRuntimeError
from .executor import Interpreter, InterpreterResult
from .run import run_kernel

__all__ = ["AccessRecord", "Interpreter", "InterpreterResult", "KernelRuntimeError", "run_kernel"]
