"""Errors the runtime reports about a launch: one short message naming the argument."""

from __future__ import annotations

from ..errors import InterpreterError, OutOfResources, TritonError


class LaunchError(TritonError, TypeError):
    """A launch that cannot happen: a bad grid, a missing or wrongly-typed argument.

    The message names the kernel and the argument: ``add(): argument 'n': unsupported
    type str (expected an array, int, float, bool or None)``.
    """


class TargetUnavailable(RuntimeError):
    """The requested target cannot be used on this machine (``CUDA target not available: ...``)."""


__all__ = ["InterpreterError", "LaunchError", "OutOfResources", "TargetUnavailable", "TritonError"]
