"""The CPU target: compile tile IR to native code with LLVM; ``CpuLauncher`` runs the grid on threads.

    target = CpuTarget()
    artifact = target.compile(module, options)     # object code + LLVM IR (+ x86 assembly, lazily)
    launch = target.load(artifact, module)         # a CpuLauncher (cpu_launch.py): maps the object code
    launch((n // 1024, 1, 1), [x, y, out, n], False)

Where a kernel's pipeline allows it and ``TILELAB_TIERED`` is not ``0``, the first object code
is the quick tier and ``Artifact.upgrade`` makes the optimized one (``tiers.py``). The launch
side (argument packing, the thread pool) is ``cpu_launch.py``; what a kernel reports back
(prints, asserts, out-of-bounds accesses) becomes an error in ``cpu_errors.py``.
"""

from __future__ import annotations

from tilelab.compiler.backends import cpu as backend

from . import tiers
from .cpu_errors import kernel_error
from .cpu_launch import CpuLauncher
from .options import num_threads
from .targets import Artifact
from .texts import LazyTexts


class CpuTarget:
    """Compiles to host object code (``compile``) and launches it (``load``)."""

    name = "cpu"
    pipeline = "cpu"

    def __init__(self):
        backend.preload()  # LLVM's library loads on another core while the kernel is built and lowered

    def compile(self, module, options) -> Artifact:
        try:
            compiled = backend.compile_kernel(module, sanitize=False, want_asm=False, quick=tiers.enabled())
        except backend.UnsupportedType as e:
            raise kernel_error(f"{module.kernel.sym_name}: {e}") from None
        has_print = any(info["op"] == "tt.print" for info in compiled.ops.values())
        metadata = {
            "threads": num_threads(),
            "phase_seconds": compiled.seconds,
            "grid_symbol": compiled.grid_symbol,
            "ops": compiled.ops,
            "has_print": has_print,
            "work_per_program": backend.work_per_program(module),
            "host_cpu": backend.target_machine().triple,
            "tier": compiled.tier,
            "stack_bytes": compiled.stack_bytes,
        }
        asm = LazyTexts(compiled.asm, self.deferred_texts(compiled.asm, options))
        upgrade = None
        if compiled.tier == "quick":
            llir = compiled.asm["llir"]
            upgrade = lambda: {"obj": backend.emit_optimized(llir)}  # noqa: E731 - run by runtime/tiers.py
        return Artifact(asm=asm, metadata=metadata, blobs={"obj": compiled.obj}, upgrade=upgrade)

    def deferred_texts(self, texts, options=None) -> dict:
        """Makers of the texts emitted on first access: the x86 ``asm``, from the stored ``llir``."""
        if "asm" in texts or "llir" not in texts:
            return {}
        llir = texts["llir"]
        return {"asm": lambda: backend.assembly_from_llir(llir)}

    def load(self, artifact: Artifact, module):
        return CpuLauncher(artifact, module)


__all__ = ["CpuTarget", "CpuLauncher"]
