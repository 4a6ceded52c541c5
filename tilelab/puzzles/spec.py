"""What a puzzle is: a numpy specification, a maker of random cases, and how to launch a kernel on one.

A puzzle says *what* to compute with a plain numpy function (``spec``) and *how the kernel
is called* (its parameters, constants and grid); the learner writes the tile kernel. Each
check draws fresh random sizes and values (``make``), so a kernel that only works for one
size, or forgets a mask, is caught::

    @puzzle(level=1, outputs=("out",), constants={"BLOCK": 128})
    def copy(x):
        "out[i] = x[i] for every i < n."
        return {"out": x.copy()}

    @copy.maker
    def _(rng):
        n = int(rng.integers(300, 1000))
        x = rng.standard_normal(n).astype(np.float32)
        return Case(args={"x": x, "out": np.empty_like(x), "n": n}, grid=(cdiv(n, 128),))
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from tilelab._registry import Registry

#: name -> ``Puzzle``, registered with ``@puzzle`` in ``catalog.py`` (imported on the first lookup)
REGISTRY = Registry("puzzle", __package__, modules=("catalog",))


def cdiv(a: int, b: int) -> int:
    """Ceiling division: programs needed to cover ``a`` elements with blocks of ``b``."""
    return -(-a // b)


@dataclass
class Case:
    """One random instance of a puzzle: the launch arguments (in the kernel's order) and the grid."""

    args: dict[str, object]
    grid: tuple[int, ...]


@dataclass
class Puzzle:
    """A puzzle: ``spec(**inputs) -> {output: array}`` in numpy, and the launch it checks.

    ``outputs`` name the array arguments the kernel must write; every other argument is an
    input the spec reads (arrays and scalars). ``constants`` are passed as constexpr keywords.
    Outputs are poisoned before the launch, except those in ``zeroed`` (accumulated into, they start at 0).
    """

    name: str
    level: int
    spec: Callable[..., dict[str, np.ndarray]]
    outputs: tuple[str, ...]
    constants: dict[str, int] = field(default_factory=dict)
    make: Callable[[np.random.Generator], Case] | None = None
    zeroed: tuple[str, ...] = ()
    atol: float = 1e-5
    rtol: float = 1e-4

    @property
    def statement(self) -> str:
        """The puzzle's text: the spec's docstring."""
        return inspect.cleandoc(self.spec.__doc__ or "")

    @property
    def spec_source(self) -> str:
        """The numpy spec as source code, for the notebook to show."""
        lines = inspect.getsource(self.spec).splitlines(keepends=True)
        return "".join(line for line in lines if not line.startswith("@"))

    def maker(self, make: Callable[[np.random.Generator], Case]) -> Callable:
        """Decorator: registers the function that draws a random ``Case``."""
        self.make = make
        return make

    def expected(self, case: Case) -> dict[str, np.ndarray]:
        """The spec's outputs for ``case`` (computed on copies, so inputs stay as they were)."""
        inputs = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in case.args.items()}
        for name in self.outputs:
            inputs.pop(name)
        return self.spec(**inputs)

    def __repr__(self) -> str:
        return f"<puzzle {self.name!r} (level {self.level})>"


def puzzle(level: int, outputs: tuple[str, ...], constants: dict | None = None, zeroed=(), atol=1e-5, rtol=1e-4):
    """Decorator: turns a numpy spec function into a registered ``Puzzle`` named after it."""

    def register(spec: Callable) -> Puzzle:
        p = Puzzle(spec.__name__, level, spec, tuple(outputs), dict(constants or {}), None, tuple(zeroed), atol, rtol)
        return REGISTRY.register(p.name)(p)

    return register
