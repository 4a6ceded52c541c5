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

import importlib

from .errors import AccessRecord, KernelRuntimeError

#: Names this package gives, by the module that defines them: imported when first asked for,
#: so ``from tilelab.compiler.interpreter.errors import KernelRuntimeError`` (what the compiled
#: targets' launchers raise) does not load the executor.
_LAZY = {"Interpreter": ".executor", "InterpreterResult": ".executor", "run_kernel": ".run"}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name], __name__), name)


__all__ = ["AccessRecord", "Interpreter", "InterpreterResult", "KernelRuntimeError", "run_kernel"]
