"""The LLVM IR text of a CUDA kernel as the tests read it: as the lowering wrote it, or after O3."""

from tilelab.compiler.backends.cuda.kernel import build_llvm_module, optimize


def lowered_ir(ck) -> str:
    """``ck``'s kernel as the CUDA lowering writes it (before LLVM's passes)."""
    return str(build_llvm_module(ck.module, ck.options)[0])


def optimized_ir(ck) -> str:
    """``ck``'s kernel after O3, before the code generator (``ck.asm["llir"]`` is after its IR passes too)."""
    llmod, _ = build_llvm_module(ck.module, ck.options)
    mod = optimize(llmod, ck.options.gpu_arch, False)
    try:
        return str(mod)
    finally:
        mod.close()
