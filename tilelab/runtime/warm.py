"""Warm launches: a ``kernel[grid](...)`` call shaped like an earlier one goes straight to its kernel.

Why: binding arguments to names, specializing them and marshalling each one costs tens of
microseconds, far more than the driver's launch. Once a call has gone the full way,
``JITFunction`` keeps a ``WarmLaunch`` under the call's launch key (``call_key``: argument
kinds, dtypes, alignment, integer classes, constexpr values). A later call with an equal key
is known to bind and specialize the same way, so it only has to pick the kernel's runtime
arguments out of the call by position and hand them to the launcher::

    add[(4,)](x, y, out, 1000, BLOCK=256)   # full path: bind, specialize, compile, launch
    add[(4,)](x, y, out, 2000, BLOCK=256)   # same key: WarmLaunch, no dict, no specialization

A target's launcher may offer a ``warm_plan`` (CUDA does: a reusable parameter buffer);
otherwise the warm launch calls ``CompiledKernel.launch_normalized`` as the full path does.
"""

from __future__ import annotations

from .grid import normalize_grid


class WarmLaunch:
    """``warm(grid, args, kwargs, meta_options)``: launches ``kernel`` with this call's runtime arguments."""

    def __init__(self, jit, kernel, positions: tuple, direct):
        self.jit = jit
        self.kernel = kernel
        self.positions = positions  # where each of kernel.arg_names sits in args + kwargs values
        self.direct = direct  # the launcher's warm plan, or None

    @classmethod
    def prepare(cls, jit, kernel, args: tuple, kwargs: dict):
        """The ``WarmLaunch`` for calls shaped like ``(args, kwargs)``, or ``None`` (a default fills an argument)."""
        given = list(jit.arg_names[: len(args)]) + list(kwargs)
        if any(name not in given for name in kernel.arg_names):
            return None
        positions = tuple(given.index(name) for name in kernel.arg_names)
        values = _pick(args, kwargs, positions)
        plan = getattr(kernel.launcher, "warm_plan", None)
        direct = plan(values) if plan is not None else None
        return cls(jit, kernel, positions, direct)

    def __call__(self, grid, args: tuple, kwargs: dict, num_warps, num_stages):
        if type(grid) is not tuple:
            meta = dict(self.jit.bind(args, kwargs), num_warps=num_warps, num_stages=num_stages)
            grid = normalize_grid(grid, meta, self.jit.__name__)
        else:
            grid = normalize_grid(grid, None, self.jit.__name__)
        values = _pick(args, kwargs, self.positions)
        if self.direct is None:
            return self.kernel.launch_normalized(grid, dict(zip(self.kernel.arg_names, values)))
        if 0 not in grid:
            self.direct(grid, values)
        return self.kernel


def _pick(args: tuple, kwargs: dict, positions: tuple) -> list:
    """The values at ``positions`` of ``args`` followed by the ``kwargs`` values."""
    given = args + tuple(kwargs.values()) if kwargs else args
    return [given[i] for i in positions]
