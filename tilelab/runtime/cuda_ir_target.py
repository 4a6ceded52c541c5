"""The ``cuda-ir`` target: compile for an NVIDIA GPU, then run the final tile IR on the numpy interpreter.

    target = CudaIrTarget("sm_90a")
    artifact = target.compile(module, options)     # nothing to emit: the passes' IR is the result
    launch = target.load(artifact, module)
    launch((n // 1024, 1, 1), [x, y, out, n], False)

Why: the CUDA passes (layouts, mma and wgmma operands, conversions through shared memory,
software pipelining, TMA copies) rewrite a kernel a great deal before the LLVM lowering, and
without a GPU nothing runs what they wrote. Here the kernel is compiled as a CUDA launch
compiles it (the ``cuda`` pipeline for ``sm_90a``, or the architecture the name gives:
``cuda-ir:sm_80``; the launch's ``num_warps``, ``num_stages`` and specialization), and its final
tile IR runs on the interpreter, which gives the GPU-only ops their values (``gpu_ops.py``):
a learner sees what the passes compute, and a test checks it, on any machine. It checks the
passes, not the PTX after them. Arguments are numpy arrays, as for ``interpret`` and ``cpu``.
"""

from __future__ import annotations

import re

from tilelab.compiler.options import DEFAULT_ARCH

from . import stages
from .errors import TargetUnavailable
from .targets import Artifact

#: an NVIDIA architecture as the CUDA pipeline takes it: ``sm_80``, ``sm_90``, ``sm_90a``
_ARCH = re.compile(r"sm_\d+a?")


class CudaIrTarget:
    """Runs the ``cuda`` pipeline for ``arch`` (default ``sm_90a``), then the interpreter on its final IR."""

    name = "cuda-ir"
    pipeline = "cuda"

    def __init__(self, arch: str | None = None):
        arch = arch or DEFAULT_ARCH
        if not _ARCH.fullmatch(arch):
            raise TargetUnavailable(
                f"unknown CUDA architecture {arch!r} for target cuda-ir (expected sm_80, sm_90, sm_90a...)"
            )
        self.arch = arch

    def compile(self, module, options) -> Artifact:
        """No code to emit; the metadata gives the architecture and the shared bytes the passes allocated."""
        shared = int(module.attrs.get("shared_bytes", 0))
        return Artifact(metadata={"arch": options.arch or self.arch, "shared": shared})

    def load(self, artifact: Artifact, module):
        def launch(grid, args, sanitize=False):
            return stages.interpret(module, grid, args, sanitize)

        return launch


__all__ = ["CudaIrTarget"]
