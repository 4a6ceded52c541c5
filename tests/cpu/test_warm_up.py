"""LLVM's warm-up on a background thread (backends/cpu/codegen.py) and the early load of its library."""

import threading

import numpy as np

from tests.support.cpu_kernels import add
from tilelab.compiler.backends import llvm_library
from tilelab.compiler.backends.cpu import codegen


def test_the_library_is_found_without_importing_the_bindings_and_loads_once():
    path = llvm_library.library_path()
    assert path is not None and path.endswith((".so", ".dylib", ".dll"))
    llvm_library.preload()
    llvm_library.preload()  # a second call starts nothing
    llvm = llvm_library.binding()
    assert llvm.__name__ == "llvmlite.binding"


def test_kernels_compiled_while_warm_ups_run_beside_them_compute_the_same_values(rng):
    """The warm-up shares LLVM with the main thread's compiles: one call at a time, its own context."""
    errors = []

    def warm_up_repeatedly():
        try:
            for _ in range(4):
                codegen.warm_up()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    thread = threading.Thread(target=warm_up_repeatedly)
    thread.start()
    try:
        for block in (64, 128, 256, 512):
            n = 3 * block - 5
            x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
            out = np.full(n, np.nan, np.float32)
            add[(3,)](x, y, out, n, BLOCK=block, target="cpu")
            np.testing.assert_array_equal(out, x + y)
    finally:
        thread.join()
    assert not errors


def test_warm_up_shares_the_compiling_target_machine(monkeypatch):
    """The subtarget LLVM makes on first use is kept per target machine: the warm-up must use the shared ones."""
    emitted = []
    shared = codegen.quick_machine()

    class Recording:
        """The shared quick machine, recording that ``emit_object`` went through it."""

        def __getattr__(self, name):
            return getattr(shared, name)

        def emit_object(self, mod):
            emitted.append(mod)
            return shared.emit_object(mod)

    monkeypatch.setattr(codegen, "quick_machine", Recording)
    codegen.warm_up()
    assert len(emitted) == 1, "the warm-up emits its loop through the shared quick machine"
    assert codegen.target_machine() is codegen.target_machine()
    assert codegen._cached_target_machine.cache_info().currsize == 1
