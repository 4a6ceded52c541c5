"""The GPU compile the inspector shows beside the target that runs the kernel.

Why: PTX, register layouts, shared-memory banks and mma ownership need no GPU: the CUDA pipeline
compiles anywhere. A learner on a laptop runs a kernel on the CPU and still reads what the GPU
compiler made of it: the inspector's PTX, SASS, coalescing, shared-memory and layout tabs come from
a ``cuda:<arch>`` compile of the same kernel (sm_90 unless chosen: sm_80, sm_90a).

    gpu = gpu_compiler(add, signature, constants)     # arch -> CompiledKernel, each compiled once
    Inspector(compiled_for_cpu, gpu=gpu)              # GPU tabs from gpu("sm_90"); a picker for the others

The same compiler makes the AMD compile (``gpu("gfx942")``: target ``amd:gfx942``) that the "AMD ISA"
tab shows beside PTX. It is made only when that tab is opened (``GpuView.amd``), so the inspector of
a kernel nobody compares with AMD costs nothing more.
"""

from __future__ import annotations

from collections.abc import Callable

ARCHS = ("sm_90", "sm_80", "sm_90a")
DEFAULT_ARCH = "sm_90"
#: AMD architectures the "AMD ISA" tab compiles for (inspection only: tilelab has no AMD runtime)
AMD_ARCHS = ("gfx942",)
AMD_TAB = "AMD ISA"

#: The tabs that show the GPU compile (the others show the compile that runs).
GPU_TABS = ("PTX", "SASS", "coalescing", "shared memory", "layouts")


def arch_of(target: str) -> str | None:
    """``"sm_90a"`` of ``"cuda:sm_90a"``; ``DEFAULT_ARCH`` for a bare ``"cuda"``; None off the GPU."""
    kind, _, arch = str(target).partition(":")
    return (arch or DEFAULT_ARCH) if kind == "cuda" else None


def target_of_arch(arch: str) -> str:
    """The target that compiles for ``arch``: ``cuda:sm_90`` for ``sm_90``, ``amd:gfx942`` for ``gfx942``."""
    return f"amd:{arch}" if arch.startswith("gfx") else f"cuda:{arch}"


def gpu_compiler(kernel, signature: dict, constants: dict | None = None, **options) -> Callable[[str], object]:
    """``arch -> CompiledKernel``: ``kernel`` compiled for ``cuda:<arch>`` (``amd:<arch>`` for gfx*), once per arch."""
    from tilelab import runtime

    done: dict[str, object] = {}

    def compile_for(arch: str):
        if arch not in done:
            done[arch] = runtime.compile(
                kernel, signature=signature, constants=constants or {}, target=target_of_arch(arch), **options
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
        self.amd_error: str | None = None

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

    def amd(self, arch: str = AMD_ARCHS[0], make: bool = True):
        """The AMD compile for ``arch`` (``gfx942``): the kernel's own when it was compiled for AMD, else made
        by the GPU compiler on first call (``make=False``: only if already made). None, with ``amd_error``
        set, when it cannot be made."""
        if str(getattr(self.run, "target", "")).startswith("amd:"):
            return self.run
        if self.build is None:
            self.amd_error = "no compiler for other targets was given (gpu=gpu_compiler(...))"
            return None
        if arch not in self._made:
            if not make:
                return None
            try:
                self._made[arch] = self.build(arch)
            except (
                Exception
            ) as e:  # a kernel the AMD target rejects (a math function without ocml...): its tab says why
                self._made[arch] = e
        made = self._made[arch]
        self.amd_error = f"{type(made).__name__}: {made}" if isinstance(made, Exception) else None
        return None if self.amd_error else made

    def describe(self) -> str:
        """One line for the header: where the kernel runs and where the GPU tabs come from."""
        compiled = self.compiled()
        runs = f"runs on {self.run.target}"
        if str(self.run.target).startswith("amd:"):
            runs = f"compiled for {self.run.target} (inspection only: no AMD runtime)"
        if compiled is None:
            why = f" ({self.error})" if self.error else ""
            return f"{runs}; no GPU compile{why}"
        if compiled is self.run:
            return runs
        return f"{runs}; {', '.join(GPU_TABS)} from {compiled.target} (compiled here for inspection, no GPU needed)"
