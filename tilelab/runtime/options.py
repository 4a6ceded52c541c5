"""The environment, read in one place: every ``TILELAB_*`` variable, and the ``CompileOptions`` built from them.

Why one reader: a variable read by a pass, then again by the lowering, then patched into the
cache key by the runtime, is three readers that can drift apart (a key without a switch the
lowering obeyed reuses the wrong kernel). Here each variable has one reader, and whatever
changes the compiled code goes into ``CompileOptions`` (``tilelab.compiler.options``), which the
passes, the backends and the cache key all take::

    options = compile_options("cuda", num_warps=8)     # CompileOptions(target="cuda", arch=..., ...)

| variable | read | effect |
|---|---|---|
| ``TILELAB_TARGET`` | each launch | the target when no ``target=`` is given (``choose_target``) |
| ``TILELAB_SANITIZE`` | each launch | ``1``: bounds-checked launches when no ``sanitize=`` is given |
| ``TILELAB_CACHE_DIR`` | each compile | the disk cache's folder (default ``~/.cache/tilelab``) |
| ``TILELAB_PREFETCH`` | ``import tilelab`` | ``0``: no background imports (``prefetch.py``) |
| ``TILELAB_TIERED`` | each CPU compile | ``0``: no quick tier first (``tiers.py``) |
| ``TILELAB_NUM_THREADS`` | each split CPU launch | the most threads a CPU launch uses (default: the usable cores) |
| ``TILELAB_CUDA_WGMMA`` | each compile | ``0``: Hopper dots on mma.sync (``CompileOptions.wgmma``) |
| ``TILELAB_CUDA_LDMATRIX`` | each compile | ``0``: no ``ldmatrix``/``stmatrix`` (``CompileOptions.ldmatrix``) |
| ``TILELAB_CUDA_TMA`` | each compile | ``0``: no TMA copies of descriptor tiles (``CompileOptions.tma``) |
| ``TILELAB_CUDA_FP_FUSION`` | each compile | ``0``: no ``fma`` contraction unless a launch says ``enable_fp_fusion`` |
| ``TILELAB_CUDA_REFLECT_FTZ`` | each compile | ``0``: libdevice keeps subnormals (``enable_reflect_ftz`` wins) |
| ``TILELAB_LIBDEVICE`` | each compile | the libdevice bitcode to link (``CompileOptions.libdevice``) |
| ``TILELAB_PTXAS``, ``..._NVDISASM``, ``..._CUOBJDUMP`` | each compile | CUDA tools' paths (``CompileOptions.tools``) |
| ``CUDA_HOME``, ``CUDA_PATH`` | each compile | CUDA toolkits searched for tools and libdevice (``tools``) |

The variables are read when needed rather than once per process, so that a notebook (or a
test) that sets one sees it take effect at the next launch or compile (as the table says: a
kernel already compiled for a call of the same shape keeps its code). The two a launch reads
are read straight from ``os.environ``'s own dictionary (``launch_environment_reader``): the
call key of every launch holds them.
"""

from __future__ import annotations

import os
from pathlib import Path

from tilelab.compiler.options import NUM_STAGES, NUM_WARPS, WARP_SIZE, CompileOptions

#: the CUDA tools whose path a ``TILELAB_<TOOL>`` variable may give
TOOLS = ("ptxas", "nvdisasm", "cuobjdump")
#: other spellings of a target kind: ``hip:gfx942`` is ``amd:gfx942``
TARGET_ALIASES = {"hip": "amd"}
#: where a CUDA toolkit may be installed (its ``bin/`` tools and ``nvvm/libdevice``), searched in this order
TOOLKIT_VARIABLES = ("CUDA_HOME", "CUDA_PATH")


def _get(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def _on(name: str) -> bool:
    """A switch that is on unless set to ``0``."""
    return _get(name, "1") != "0"


def canonical_target(name: str) -> str:
    """``name`` with its kind spelled the one way (``hip:gfx942`` -> ``amd:gfx942``)."""
    kind, sep, arch = name.partition(":")
    return TARGET_ALIASES.get(kind, kind) + sep + arch


def compile_options(
    target: str,
    num_warps=None,
    num_stages=None,
    debug: bool = False,
    arch: str | None = None,
    warp_size: int | None = None,
    fp_fusion: bool | None = None,
    reflect_ftz: bool | None = None,
    maxnreg: int | None = None,
) -> CompileOptions:
    """The ``CompileOptions`` of one compile for ``target`` (``cpu``, ``cuda``, ``cuda:sm_80``, ``amd:gfx942``...).

    ``num_warps`` / ``num_stages`` of ``None`` take the defaults; ``arch`` is the target's
    (``CudaTarget.arch``: the device's, or the one the name gives), ``warp_size`` too (64 on AMD).
    ``fp_fusion`` is the launch's ``enable_fp_fusion``; ``None`` takes ``TILELAB_CUDA_FP_FUSION``, else on
    (Triton's default); ``reflect_ftz`` likewise, the launch's ``enable_reflect_ftz`` or ``TILELAB_CUDA_REFLECT_FTZ``.
    ``maxnreg`` is the launch's register cap (``None``: none), kept for CUDA only: the other targets have no
    such cap, and a launch that gives one compiles the same code there (one cache entry).
    """
    target = canonical_target(target)
    named_arch = target.partition(":")[2]
    tools = tuple((tool, path) for tool in TOOLS if (path := _get(f"TILELAB_{tool.upper()}")))
    tools += tuple((var, root) for var in TOOLKIT_VARIABLES if (root := _get(var)))
    return CompileOptions(
        target=target,
        arch=arch or named_arch or None,
        num_warps=NUM_WARPS if num_warps is None else int(num_warps),
        num_stages=NUM_STAGES if num_stages is None else int(num_stages),
        warp_size=warp_size or WARP_SIZE,
        debug=bool(debug),
        wgmma=_on("TILELAB_CUDA_WGMMA"),
        ldmatrix=_on("TILELAB_CUDA_LDMATRIX"),
        tma=_on("TILELAB_CUDA_TMA"),
        fp_fusion=_flag("TILELAB_CUDA_FP_FUSION", fp_fusion),
        reflect_ftz=_flag("TILELAB_CUDA_REFLECT_FTZ", reflect_ftz),
        maxnreg=int(maxnreg) if maxnreg is not None and target.partition(":")[0] == "cuda" else None,
        libdevice=_get("TILELAB_LIBDEVICE") or None,
        tools=tools,
    )


def _flag(variable: str, given: bool | None) -> bool:
    """A launch's boolean option when given, else the environment ``variable`` (on unless ``0`` or empty)."""
    return _on(variable) if given is None else bool(given)


def target_override() -> str | None:
    """``TILELAB_TARGET`` (``interpret``, ``cpu``, ``cuda``...), or ``None`` when unset."""
    return _get("TILELAB_TARGET") or None


def sanitize_default() -> bool:
    """Whether launches without ``sanitize=`` check bounds (``TILELAB_SANITIZE`` set, and not ``0``)."""
    return _get("TILELAB_SANITIZE") not in ("", "0")


def cache_dir() -> Path:
    """``TILELAB_CACHE_DIR``, else ``~/.cache/tilelab``."""
    env = os.environ.get("TILELAB_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "tilelab"


def prefetch_enabled() -> bool:
    """Whether ``import tilelab`` starts the background imports (``TILELAB_PREFETCH`` is not ``0``)."""
    return _on("TILELAB_PREFETCH")


def tiered() -> bool:
    """Whether targets may hand back a quick tier first (``TILELAB_TIERED`` is not ``0``)."""
    return _on("TILELAB_TIERED")


def num_threads() -> int:
    """Threads a CPU launch may use: ``TILELAB_NUM_THREADS`` or the usable cores."""
    env = _get("TILELAB_NUM_THREADS")
    if env.isdigit():
        return max(1, int(env))
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def launch_environment_reader():
    """``(get, target name, sanitize name)``: ``os.environ``'s own dictionary and its encoded keys where it has them.

    For the warm launch path, which reads the two variables inline (``keys.call_key``: a call of
    ``launch_environment`` costs ~60 ns more). ``os.environ.get`` encodes the name and raises
    ``KeyError`` inside for a missing variable: about 0.7 us, twice per launch.
    ``os.environ[...] = ...`` and ``monkeypatch.setenv`` update the dictionary too.
    """
    data, encode = getattr(os.environ, "_data", None), getattr(os.environ, "encodekey", None)
    if isinstance(data, dict) and encode is not None:
        return data.get, encode("TILELAB_TARGET"), encode("TILELAB_SANITIZE")
    return os.environ.get, "TILELAB_TARGET", "TILELAB_SANITIZE"


_ENV_GET, _TARGET_KEY, _SANITIZE_KEY = launch_environment_reader()


def launch_environment() -> tuple:
    """The raw values of the variables that change a launch: ``(TILELAB_TARGET, TILELAB_SANITIZE)``.

    For keys only (equal tuples: the same launch); ``target_override`` and ``sanitize_default``
    say what they mean.
    """
    return _ENV_GET(_TARGET_KEY), _ENV_GET(_SANITIZE_KEY)


__all__ = [
    "cache_dir",
    "compile_options",
    "launch_environment",
    "launch_environment_reader",
    "num_threads",
    "prefetch_enabled",
    "sanitize_default",
    "target_override",
    "tiered",
]
