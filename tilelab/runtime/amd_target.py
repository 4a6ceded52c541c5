"""The AMD target, for inspection only: compile tile IR to gfx942 (MI300) assembly; never launch.

    target = AmdTarget("gfx942")
    artifact = target.compile(module, options)   # asm: llir, amdgcn; metadata: vgprs, sgprs, lds...
    target.load(artifact, module)(grid, args)    # LaunchError: inspection only

Why a target that cannot launch: a learner compares the PTX and the AMD ISA of one kernel, on
any machine, through the same ``tilelab.compile(..., target="amd:gfx942")`` (``hip:gfx942`` is
the same target) and the inspector's "AMD ISA" tab. tilelab has no AMD runtime (HIP), so a
launch is refused with a message that says so and names the targets that do launch.
"""

from __future__ import annotations

from tilelab.compiler.options import AMD_WARP_SIZE

from .errors import LaunchError
from .targets import Artifact

#: The AMD architecture compiled for when the target name gives none (``amd`` alone).
DEFAULT_AMD_ARCH = "gfx942"


class AmdTarget:
    """Compiles for an AMD architecture (``gfx942``) through LLVM's AMDGPU backend; launches refuse."""

    name = "amd"
    pipeline = "amd"
    warp_size = AMD_WARP_SIZE

    def __init__(self, arch: str | None = None):
        from tilelab.compiler.backends import amd as backend

        arch = arch or DEFAULT_AMD_ARCH
        if arch not in backend.ARCHS:
            from .errors import TargetUnavailable

            raise TargetUnavailable(f"unknown AMD architecture {arch!r} (known: {', '.join(backend.ARCHS)})")
        self.arch = arch

    def compile(self, module, options) -> Artifact:
        """LLVM IR and GCN assembly of ``module`` (``asm["llir"]``, ``asm["amdgcn"]``); registers in ``metadata``."""
        from tilelab.compiler.backends import amd as backend

        compiled = backend.compile_kernel(module, options.replace(arch=options.arch or self.arch))
        return Artifact(asm=dict(compiled.asm), metadata=dict(compiled.metadata))

    def load(self, artifact: Artifact, module):
        return InspectionOnly(module.kernel.sym_name, f"amd:{self.arch}")


class InspectionOnly:
    """The launcher of a kernel compiled for inspection: every launch raises ``LaunchError``."""

    def __init__(self, kernel: str, target: str):
        self.kernel = kernel
        self.target = target

    def __call__(self, grid, args, sanitize: bool = False):
        raise LaunchError(
            f"kernel {self.kernel}: target {self.target} is for inspection only (tilelab has no AMD runtime): "
            f"read the compile with tilelab.compile(..., target={self.target!r}).asm['amdgcn'], "
            "and launch on 'cuda', 'cpu' or 'interpret'"
        )


__all__ = ["AmdTarget", "DEFAULT_AMD_ARCH", "InspectionOnly"]
