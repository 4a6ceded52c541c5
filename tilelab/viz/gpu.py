"""The GPU compile the inspector shows beside the target that runs the kernel.

Why: PTX, register layouts, shared-memory banks and mma ownership need no GPU: the CUDA pipeline
compiles anywhere. A learner on a laptop runs a kernel on the CPU and still reads what the GPU
compiler made of it: the inspector's PTX, SASS, coalescing, shared-memory and layout tabs come from
a ``cuda:<arch>`` compile of the same kernel (sm_90 unless chosen: sm_80, sm_90a).

    gpu = gpu_compiler(add, signature, constants)     # arch -> CompiledKernel, each compiled once
    Inspector(compiled_for_cpu, gpu=gpu)              # GPU tabs from gpu("sm_90"); a picker for the others
"""

from __future__ import annotations

from collections.abc import Callable

ARCHS = ("sm_90", "sm_80", "sm_90a")
DEFAULT_ARCH = "sm_90"

#: The tabs that show the GPU compile (the others show the compile that runs).
GPU_TABS = ("PTX", "SASS", "coalescing", "shared memory", "layouts")


def arch_of(target: str) -> str | None:
    """``"sm_90a"`` of ``"cuda:sm_90a"``; ``DEFAULT_ARCH`` for a bare ``"cuda"``; None off the GPU."""
    kind, _, arch = str(target).partition(":")
    return (arch or DEFAULT_ARCH) if kind == "cuda" else None


def gpu_compiler(kernel, signature: dict, constants: dict | None = None, **options) -> Callable[[str], object]:
    """``arch -> CompiledKernel``: ``kernel`` compiled for ``cuda:<arch>`` with snapshots, once per arch."""
    from tilelab import runtime

    done: dict[str, object] = {}

    def compile_for(arch: str):
        if arch not in done:
            done[arch] = runtime.compile(
                kernel, signature=signature, constants=constants or {}, target=f"cuda:{arch}", **options
            )
        return done[arch]

    return compile_for


class GpuView:
    """Which compile each tab shows: ``run`` (the kernel's target) and ``gpu(arch)`` (for inspection).

    ``source`` is a CompiledKernel for CUDA, a callable ``arch -> CompiledKernel``, or None (then a
    CUDA ``run`` is its own GPU view and other targets have none).
    """

    def __init__(self, run, source=None, arch: str | None = None):
        self.run = run
        self.build = source if callable(source) and not hasattr(source, "asm") else None
        self.fixed = source if hasattr(source, "asm") else (run if arch_of(run.target) else None)
        self.arch = arch or arch_of(getattr(self.fixed, "target", "")) or DEFAULT_ARCH
        self.error: str | None = None
        self._made: dict[str, object] = {}

    @property
    def choices(self) -> tuple[str, ...]:
        """The archs one can pick (only the fixed one when nothing can compile others)."""
        if self.build is not None:
            return ARCHS
        return (self.arch,) if self.fixed is not None else ()

    def compiled(self):
        """The GPU compile for ``arch`` (None with ``error`` set when it cannot be made)."""
        if self.fixed is not None and arch_of(self.fixed.target) == self.arch:
            return self.fixed
        if self.build is None:
            return None
        if self.arch not in self._made:
            try:
                self._made[self.arch] = self.build(self.arch)
            except Exception as e:  # a kernel the GPU pipeline rejects: its tabs say why
                self._made[self.arch] = e
        made = self._made[self.arch]
        self.error = f"{type(made).__name__}: {made}" if isinstance(made, Exception) else None
        return None if self.error else made

    def describe(self) -> str:
        """One line for the header: where the kernel runs and where the GPU tabs come from."""
        compiled = self.compiled()
        if compiled is None:
            why = f" ({self.error})" if self.error else ""
            return f"runs on {self.run.target}; no GPU compile{why}"
        if compiled is self.run:
            return f"runs on {self.run.target}"
        return (
            f"runs on {self.run.target}; {', '.join(GPU_TABS)} from {compiled.target} "
            "(compiled here for inspection, no GPU needed)"
        )
