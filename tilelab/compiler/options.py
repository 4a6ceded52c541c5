"""``CompileOptions``: everything besides the kernel and its specialization that changes what the compiler emits.

Why one object: the passes, the lowering and the cache key must agree on the options. When a
pass read an environment variable, the lowering read it again and the runtime patched it into
the cache key, three readers could drift apart. Now the runtime builds one frozen
``CompileOptions`` per compile (``tilelab.runtime.options``, the one reader of ``TILELAB_*``
environment variables), ``pipeline.run(module, options)`` attaches it to the module as
``module.options``, and passes and backends read it from there::

    options = CompileOptions(target="cuda", arch="sm_90a", num_warps=8, wgmma=False)
    pipeline.run(module, options)           # passes read options_of(module).num_warps ...
    options.key()                           # the part of the cache key that options make

The defaults (``NUM_WARPS``, ``NUM_STAGES``, ``DEFAULT_ARCH``) are written here and nowhere else.
A launch-time choice that does not change the compiled code (``sanitize``: the same kernel
runs checked or not; the CPU target's tiers and threads) is not a compile option: it lives in
``tilelab.runtime.options``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

#: warps per program (the blocked layouts spread a tile over them; the launch's block size is 32x this)
NUM_WARPS = 4
#: depth of the cp.async ring that software-pipelines a loop's dot operands (1: no pipelining)
NUM_STAGES = 3
#: the GPU architecture compiled for when neither the caller nor a device names one (Hopper)
DEFAULT_ARCH = "sm_90a"
#: threads that run in lockstep: an NVIDIA warp (an AMD wavefront of gfx9 is 64, ``warp_size=64``)
WARP_SIZE = 32
#: the lanes of an AMD CDNA wavefront (gfx942): the ``warp_size`` of ``amd:*`` compiles
AMD_WARP_SIZE = 64


@dataclass(frozen=True)
class CompileOptions:
    """The options of one compile; frozen (hashable, so it can key caches), made by the runtime.

    ``target`` names the target as ``get_target`` takes it (``interpret``, ``cpu``, ``cuda``,
    ``cuda:sm_80``) and ``arch`` the GPU architecture (``None`` on the host). ``wgmma`` and
    ``ldmatrix`` switch Hopper's warpgroup dots and ``ldmatrix`` loads of mma operands (and
    ``stmatrix`` stores of mma fragments, sm_90 on) off, to compare with the older paths;
    ``tma`` the bulk tensor copies (sm_90) of pipelined tensor-descriptor loads, which then use ``cp.async``.
    ``warp_size`` is the threads of one warp (32 on NVIDIA, 64 for an AMD wavefront of gfx942):
    the layout passes spread a tile's lanes over that many threads.
    ``fp_fusion`` lets the CUDA backend contract a float multiply
    and the add or subtract that reads it into one ``fma`` (one rounding instead of two: what
    Triton's ``enable_fp_fusion`` does; on by default, as there); off (a launch's
    ``enable_fp_fusion=False``), results round as the interpreter's do, bit for bit.
    ``reflect_ftz`` links libdevice's flush-to-zero variants (LLVM's ``nvvm-reflect-ftz``
    module flag, what Triton's ``enable_reflect_ftz`` does, on by default as there): f32
    ``exp2`` is one ``ex2.approx.ftz.f32`` instead of four instructions around a non-ftz one,
    and libdevice's f32 functions read and write subnormals as zero.
    ``maxnreg`` caps the registers of a thread (Triton's launch option of that name: the CUDA
    kernel's ``.maxnreg``, ptxas spilling what does not fit; ``None``: ptxas chooses); the
    other targets have no such cap and ignore it.
    ``libdevice`` and ``tools`` name files the CUDA backend would otherwise search for
    (``tools``: ``(("ptxas", "/path/to/ptxas"), ...)``). ``debug`` (``@jit(debug=True)``) is kept
    with the kernel and in its key; no pass reads it yet.
    """

    target: str = "cpu"
    arch: str | None = None
    num_warps: int = NUM_WARPS
    num_stages: int = NUM_STAGES
    warp_size: int = WARP_SIZE
    debug: bool = False
    wgmma: bool = True
    ldmatrix: bool = True
    tma: bool = True
    fp_fusion: bool = True
    reflect_ftz: bool = True
    maxnreg: int | None = None
    libdevice: str | None = None
    tools: tuple[tuple[str, str], ...] = ()

    def replace(self, **changes) -> CompileOptions:
        """A copy with ``changes`` (``options.replace(num_warps=8)``)."""
        return replace(self, **changes)

    def key(self) -> dict:
        """The options as a JSON-able dict: the part of a cache key (and of a kernel's metadata) they make."""
        out = asdict(self)
        out["tools"] = dict(self.tools)
        return out

    @classmethod
    def from_key(cls, key: dict) -> CompileOptions:
        """The options ``key()`` gave (read back from a cache entry)."""
        return cls(**dict(key, tools=tuple(sorted(key.get("tools", {}).items()))))

    def tool(self, name: str) -> str | None:
        """The path given for the CUDA tool ``name`` (``ptxas``, ``nvdisasm``, ``cuobjdump``), or ``None``."""
        return dict(self.tools).get(name)

    @property
    def gpu_arch(self) -> str:
        """``arch``, or the default architecture when none was named."""
        return self.arch or DEFAULT_ARCH


#: the options of a module that was never given any (a pass test running one pass on parsed IR)
DEFAULTS = CompileOptions()


def options_of(module) -> CompileOptions:
    """The options a pass or backend reads: ``module.options`` (set by ``pipeline.run``), else ``DEFAULTS``."""
    return getattr(module, "options", None) or DEFAULTS


__all__ = [
    "CompileOptions",
    "DEFAULTS",
    "DEFAULT_ARCH",
    "NUM_STAGES",
    "NUM_WARPS",
    "WARP_SIZE",
    "AMD_WARP_SIZE",
    "options_of",
]
