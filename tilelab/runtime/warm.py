"""Warm launches: a ``kernel[grid](...)`` call shaped like an earlier one goes straight to its kernel.

Why: binding arguments to names, specializing them and marshalling each one costs tens of
microseconds, far more than the driver's launch. Once a call has gone the full way,
``JITFunction.launches`` keeps the ``launch`` of a ``WarmLaunch`` under the call's key
(``keys.call_key``: argument kinds, dtypes, alignment, integer classes, constexpr values, launch
options, sanitize setting). A later call with an equal key is known to bind and specialize the
same way, so it only has to pick the kernel's runtime arguments out of the call by position
(after the call's arguments come the defaults of the parameters it left out) and hand them to
the launcher::

    add[(4,)](x, y, out, 1000, BLOCK=256)   # full path: bind, specialize, compile, launch
    add[(4,)](x, y, out, 2000, BLOCK=256)   # same key: the warm launch, no dict, no specialization

A target's launcher may offer a ``warm_plan`` (CUDA does: a reusable parameter buffer filled
straight from the call's arguments); otherwise the warm launch calls
``CompiledKernel.launch_normalized`` as the full path does.
"""

from __future__ import annotations

from .descriptors import descriptor_part, descriptor_part_source, descriptor_parts
from .grid import grid_dims, normalize_grid


class WarmLaunch:
    """Launches ``kernel`` with the runtime arguments of calls of one shape: ``warm.launch(grid, args, kwargs)``.

    ``launch`` is a plain function (a closure made by ``prepare``) where the call shape allows:
    it runs on every warm launch, and a closure calls faster than a method or ``__call__``.
    """

    def __init__(
        self, jit, kernel, positions: tuple, direct, meta: tuple, defaults, sanitize: bool = False, parts=None
    ):
        self.jit = jit
        self.kernel = kernel
        self.positions = positions  # where each of kernel.arg_names sits in args + kwargs values + defaults
        self.parts = parts  # per kernel argument, which part of a host descriptor it is (None: the value itself)
        self.direct = direct  # the launcher's warm plan, or None
        self.meta = meta  # (names of the positional arguments, the rest of a callable grid's meta)
        self.defaults = defaults  # values of the parameters a call leaves to their defaults; None: all positional
        self.sanitize = sanitize
        if direct is not None and defaults is None:
            self.launch = self._direct_positional()

    @classmethod
    def prepare(cls, jit, kernel, args: tuple, kwargs: dict, meta_options: dict | None = None, sanitize=False):
        """The ``WarmLaunch`` for calls shaped like ``(args, kwargs)`` (with ``sanitize``: bounds-checked).

        ``meta_options`` (``num_warps``, ``num_stages``) join the meta-parameters a callable grid sees.
        """
        given = list(jit.arg_names[: len(args)]) + list(kwargs)
        defaults = {p.name: p.default for p in jit.params if p.name not in given}
        order = given + list(defaults)
        owners = descriptor_parts(kernel.constants)  # part name -> (descriptor parameter, part index)
        positions = tuple(order.index(owners.get(name, (name,))[0]) for name in kernel.arg_names)
        parts = tuple(owners[name][1] if name in owners else None for name in kernel.arg_names) if owners else None
        tail = tuple(defaults.values()) if any(i >= len(args) for i in positions) else None
        plan = None if sanitize else getattr(kernel.launcher, "warm_plan", None)  # a plan never checks bounds
        direct = None
        if plan is not None:
            picked = _pick(args, kwargs, tail, positions)
            if parts is None:
                direct = plan(picked, positions)
            else:  # a descriptor's parts are read from it: its base array, int(its shape[0])...
                values = [v if k is None else descriptor_part(v, k) for v, k in zip(picked, parts)]
                sources = [
                    f"given[{i}]" if k is None else descriptor_part_source(f"given[{i}]", v, k)
                    for i, v, k in zip(positions, picked, parts)
                ]
                direct = plan(values, positions, sources)
        meta = (tuple(jit.arg_names[: len(args)]), dict(defaults, **(meta_options or {})))
        return cls(jit, kernel, positions, direct, meta, tail, sanitize, parts)

    def launch(self, grid, args: tuple, kwargs: dict):
        """Launch over ``grid`` with the runtime arguments of ``args`` and ``kwargs``; returns the kernel."""
        dims = grid_dims(grid) or self.dims(grid, args, kwargs)
        given = args if self.defaults is None else args + tuple(kwargs.values()) + self.defaults
        if self.direct is not None:
            if 0 not in dims:
                self.direct(dims, given)
            return self.kernel
        if self.parts is None:
            values = [given[i] for i in self.positions]
        else:
            picks = zip(self.positions, self.parts)
            values = [given[i] if k is None else descriptor_part(given[i], k) for i, k in picks]
        return self.kernel.launch_normalized(dims, dict(zip(self.kernel.arg_names, values)), self.sanitize)

    def _direct_positional(self):
        """``launch`` when every runtime argument is positional and the launcher has a warm plan."""
        direct, kernel, dims_of = self.direct, self.kernel, self.dims

        def launch(grid, args: tuple, kwargs: dict):
            dims = grid_dims(grid)
            if dims is None:
                dims = dims_of(grid, args, kwargs)
                if 0 in dims:
                    return kernel
            direct(dims, args)
            return kernel

        return launch

    def dims(self, grid, args: tuple, kwargs: dict) -> tuple[int, int, int]:
        """``normalize_grid`` of a callable grid (or an unusual tuple), with the meta-parameters of this call."""
        if not callable(grid):
            return normalize_grid(grid, None, self.jit.__name__)
        names, rest = self.meta
        meta = dict(zip(names, args))
        meta.update(kwargs)
        meta.update(rest)
        return normalize_grid(grid, meta, self.jit.__name__)


def _pick(args: tuple, kwargs: dict, defaults: tuple | None, positions: tuple) -> list:
    """The values at ``positions`` of ``args`` followed by the ``kwargs`` values and the ``defaults``."""
    given = args if defaults is None else args + tuple(kwargs.values()) + defaults
    return [given[i] for i in positions]
