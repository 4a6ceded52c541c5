"""Targets: where a compiled kernel runs, behind one small interface.

A target turns the final tile IR into an ``Artifact`` (assembly texts, metadata, binary
blobs: all that the disk cache stores) and turns an artifact back into a launcher::

    target = get_target("interpret")
    artifact = target.compile(module, CompileOptions(target="interpret"))
    launch = target.load(artifact, module)
    launch((4, 1, 1), [x, y, out, np.int32(n)], False)

The registry maps a name to a factory: ``interpret`` (the numpy interpreter: the reference
semantics), ``cpu`` (LLVM for the host, from ``tilelab.runtime.cpu_target``), ``cuda``
(``cuda:sm_90`` picks an architecture), ``cuda-ir`` (the ``cuda`` pipeline's final tile IR run on the
interpreter, no GPU needed; ``cuda-ir:sm_80`` picks an architecture; ``tilelab.runtime.cuda_ir_target``)
and ``amd`` (``amd:gfx942``, alias ``hip:gfx942``: compiles for inspection, never launches;
``tilelab.runtime.amd_target``). ``choose_target`` applies the precedence rules:
``target=`` argument, then ``TILELAB_TARGET``, then the arrays' device.

A target whose launcher needs nothing but the artifact says so (``loads_from_artifact = True``,
as ``cuda`` does): a kernel it loads from the disk cache then launches without its tile IR, which
is parsed back only when something reads ``CompiledKernel.module`` (a view, the inspector).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field

from . import options, prefetch, stages
from .errors import TargetUnavailable


@dataclass
class Artifact:
    """What a target's compile produces: ``asm`` texts, JSON-able ``metadata``, binary ``blobs``.

    A tiered target (runtime/tiers.py) hands back blobs quick to make and, in ``upgrade``,
    the maker of the optimized ones (run on a background thread); ``None`` when the blobs
    are final, as they always are in the disk cache.
    """

    asm: dict[str, str] = field(default_factory=dict)
    metadata: dict = field(default_factory=dict)
    blobs: dict[str, bytes] = field(default_factory=dict)
    upgrade: Callable[[], dict[str, bytes]] | None = None


class InterpretTarget:
    """Runs the tile IR on the numpy interpreter: no code generation, exact reference semantics."""

    name = "interpret"
    pipeline = "interpret"

    def compile(self, module, options) -> Artifact:
        return Artifact()

    def load(self, artifact: Artifact, module):
        def launch(grid, args, sanitize=False):
            return stages.interpret(module, grid, args, sanitize)

        return launch


def _lazy(module_name: str, class_name: str, what: str):
    """A factory importing ``module_name.class_name`` on first use."""

    def factory(arch: str | None = None):
        try:
            cls = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError) as e:
            raise TargetUnavailable(f"{what} target not available: {e}") from None
        return cls(arch) if arch else cls()

    return factory


TARGETS = {
    "interpret": lambda arch=None: InterpretTarget(),
    "cpu": _lazy("tilelab.runtime.cpu_target", "CpuTarget", "CPU"),
    "cuda": _lazy("tilelab.runtime.cuda_target", "CudaTarget", "CUDA"),
    "amd": _lazy("tilelab.runtime.amd_target", "AmdTarget", "AMD"),
    "cuda-ir": _lazy("tilelab.runtime.cuda_ir_target", "CudaIrTarget", "cuda-ir"),
}

_instances: dict[str, object] = {}


def register_target(name: str, factory) -> None:
    """Add (or replace) a target: ``factory(arch=None)`` returns an object with ``compile``/``load``."""
    TARGETS[name] = factory
    _instances.pop(name, None)


def get_target(name: str):
    """The target object for ``"interpret"``, ``"cpu"``, ``"cuda"``, ``"cuda:sm_90"``, ``"cuda-ir"``..."""
    if name in _instances:
        return _instances[name]
    name = options.canonical_target(name)
    base, _, arch = name.partition(":")
    if base not in TARGETS:
        known = ", ".join(sorted(TARGETS))
        raise TargetUnavailable(f"unknown target {name!r} (known: {known})")
    prefetch.wait()  # a target's imports never run beside the background ones
    target = TARGETS[base](arch or None)
    _instances[name] = target
    return target


def target_available(name: str) -> bool:
    """Whether ``get_target(name)`` works on this machine."""
    try:
        get_target(name)
    except TargetUnavailable:
        return False
    return True


def default_host_target() -> str:
    """``cpu`` when the CPU backend can be imported, else ``interpret``."""
    return "cpu" if target_available("cpu") else "interpret"


def choose_target(explicit: str | None, devices: set[str]) -> str:
    """Pick the target name: ``explicit`` > ``TILELAB_TARGET`` > the arrays' devices."""
    if explicit:
        return explicit
    env = options.target_override()
    if env:
        return env
    if "cuda" in devices:
        return "cuda"
    return default_host_target()
