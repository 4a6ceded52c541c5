"""The runtime: ``@jit``, specialization, caches, targets, launch, ``compile``, autotuning."""

from .api import cdiv, compile, constexpr_function, next_power_of_2, set_allocator
from .autotune import Autotuner, Config, Heuristics, autotune, heuristics
from .compiled import CompiledKernel
from .descriptors import TensorDescriptor
from .errors import LaunchError, TargetUnavailable
from .jit import JITFunction, jit
from .targets import Artifact, choose_target, get_target, register_target

__all__ = [
    "Artifact",
    "Autotuner",
    "CompiledKernel",
    "Config",
    "Heuristics",
    "JITFunction",
    "LaunchError",
    "TargetUnavailable",
    "TensorDescriptor",
    "autotune",
    "cdiv",
    "choose_target",
    "compile",
    "constexpr_function",
    "get_target",
    "heuristics",
    "jit",
    "next_power_of_2",
    "register_target",
    "set_allocator",
]
