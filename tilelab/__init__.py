"""tilelab: a tile-based GPU kernel language and its compiler, as a Jupyter lab.

Source-compatible with Triton: ``import tilelab as triton`` and ``import tilelab.language as tl``
run Triton kernels::

    import tilelab
    import tilelab.language as tl

    @tilelab.jit
    def add(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)

    add[(tilelab.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
"""

import importlib

from ._version import __version__
from .errors import CompilationError, InterpreterError, OutOfResources, TritonError
from .runtime import (
    CompiledKernel,
    Config,
    JITFunction,
    LaunchError,
    TensorDescriptor,
    autotune,
    cdiv,
    compile,
    constexpr_function,
    heuristics,
    jit,
    next_power_of_2,
    set_allocator,
)
from .runtime import prefetch as _prefetch
from .tensor_wrapper import TensorWrapper, reinterpret

_LAZY_SUBMODULES = ("language", "testing", "magics", "tools", "viz")


def __getattr__(name):
    """``tilelab.language`` and ``tilelab.testing`` load on first use (as ``triton.language`` does)."""
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'tilelab' has no attribute {name!r}")


def load_ipython_extension(ipython):
    """``%load_ext tilelab``: registers the notebook magics."""
    from .magics import load_ipython_extension as load

    load(ipython)


__all__ = [
    "CompilationError",
    "CompiledKernel",
    "InterpreterError",
    "OutOfResources",
    "TensorDescriptor",
    "TensorWrapper",
    "TritonError",
    "Config",
    "JITFunction",
    "LaunchError",
    "autotune",
    "cdiv",
    "compile",
    "constexpr_function",
    "heuristics",
    "jit",
    "next_power_of_2",
    "reinterpret",
    "set_allocator",
    "__version__",
]

# The compiler's modules (LLVM among them) load on a background thread from here on, while the
# notebook's next cell is typed or the script goes on: runtime/prefetch.py
_prefetch.start()
