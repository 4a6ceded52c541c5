"""What several CPU test files share: the vector add kernel, running on both executors, the lowered IR."""

import numpy as np

import tilelab
import tilelab.language as tl

#: the signature of ``add``
F32_SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}


@tilelab.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """``out = x + y`` over ``n`` elements, the last block masked."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def both(kernel, grid, args, **constants):
    """Run ``kernel`` on the CPU target and the interpreter on copies of ``args``; returns both lists."""
    cpu = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    ref = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    kernel[grid](*cpu, **constants, target="cpu")
    kernel[grid](*ref, **constants, target="interpret")
    return cpu, ref


def lowered(monkeypatch, kernel, sig, constants) -> tuple[str, str]:
    """The LLVM IR the CPU backend hands to LLVM for ``kernel`` (before optimization), and its pipeline."""
    import tilelab.compiler.backends.cpu as backend

    out = []
    build = backend.build_llvm_module

    def build_and_print(*args):
        built = build(*args)
        out.append((str(built[0]), built[2]))  # now: the compile frees the module once LLVM has its text
        return built

    monkeypatch.setattr(backend, "build_llvm_module", build_and_print)
    tilelab.compile(kernel, signature=sig, constants=constants, target="cpu", snapshots=False, cache=False)
    return out[0]
