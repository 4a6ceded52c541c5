"""Helpers for pass tests: run a pass on IR text, read a pass's docstring example, compare values."""

from __future__ import annotations

import textwrap

from tilelab.compiler.ir import print_module, verify
from tilelab.compiler.ir.parser import parse_module


def run_pass(pass_module, text: str) -> tuple[str, bool]:
    """Parse ``text``, run the pass, verify; return the printed result (no locations) and 'changed'."""
    module = parse_module(textwrap.dedent(text))
    verify(module)
    changed = pass_module.run(module)
    verify(module)
    return print_module(module, locs=False), changed


def canonical(text: str) -> str:
    """``text`` reprinted by the printer (values renumbered the printer's way)."""
    return print_module(parse_module(textwrap.dedent(text)), locs=False)


def docstring_example(pass_module) -> tuple[str, str]:
    """The ``before:`` and ``after:`` IR of a pass's module docstring."""
    doc = pass_module.__doc__
    before = doc.split("before:\n", 1)[1].split("after:\n", 1)[0]
    after = doc.split("after:\n", 1)[1]
    after = after.split("\n\n", 1)[0]
    return textwrap.dedent(before), textwrap.dedent(after)


def assert_docstring_example(pass_module) -> None:
    """The pass turns its docstring's ``before:`` IR into exactly its ``after:`` IR, and says it changed it."""
    before, after = docstring_example(pass_module)
    out, changed = run_pass(pass_module, before)
    assert changed, "the docstring example must show the pass firing"
    assert out == canonical(after)


def func(body: str, args: str = "%x: !ptr<f32>") -> str:
    """A kernel ``@k(args)`` around ``body`` (IR lines; ``tt.return`` is added)."""
    lines = textwrap.dedent(body).strip().splitlines()
    inner = "\n".join("  " + line for line in lines)
    return f"tt.func @k({args}) {{\n{inner}\n  tt.return\n}}\n"


def assert_same_values(pass_module, text: str, make_args, grid=(2,)) -> None:
    """Run the kernel in ``text`` on the interpreter before and after the pass: outputs must match.

    ``make_args()`` returns fresh arguments (random arrays, poisoned outputs); the same
    arguments are copied for both runs, and every array argument is compared afterwards.
    """
    import numpy as np

    from tilelab.compiler.interpreter import run_kernel

    original = make_args()
    results = []
    for transform in (False, True):
        module = parse_module(textwrap.dedent(text))
        if transform:
            assert pass_module.run(module), "the pass did not fire: the check would prove nothing"
            verify(module)
        args = [a.copy() if isinstance(a, np.ndarray) else a for a in original]
        run_kernel(module, grid=grid, args=args)
        results.append([a for a in args if isinstance(a, np.ndarray)])
    inputs = [a for a in original if isinstance(a, np.ndarray)]
    assert any(not np.array_equal(b, a, equal_nan=True) for b, a in zip(results[0], inputs)), "kernel wrote nothing"
    for before, after in zip(*results):
        np.testing.assert_array_equal(after, before)
