"""Helpers for pass tests: run a pass on IR text, FileCheck its output, run its docstring example, compare values.

A golden case is one piece of IR text with its ``// CHECK`` lines in it, as in MLIR's lit
tests: the parser skips the ``//`` lines, the pass runs on the rest, and FileCheck (the
``filecheck`` package) matches the printed result against the CHECK lines::

    check_pass(cse, '''
    tt.func @k(%x: !ptr<f32>) {
      %0 = tt.splat %x : tensor<8x!ptr<f32>>
      %1 = tt.splat %x : tensor<8x!ptr<f32>>
      %2 = tt.load %0 : tensor<8xf32>
      tt.store %1, %2 : tensor<8x!ptr<f32>>
      tt.return
    }
    // CHECK:     %[[P:.*]] = tt.splat %x
    // CHECK-NOT: tt.splat
    // CHECK:     tt.store %[[P]]
    ''')

Layouts are long, so a case may name them first, as MLIR's attribute aliases do
(``#row = #blocked<...>`` lines before the function); ``expand_aliases`` writes them out
in the IR and in the CHECK lines alike.
"""

from __future__ import annotations

import contextlib
import io
import re
import textwrap

from filecheck.finput import FInput
from filecheck.matcher import Matcher
from filecheck.options import Options
from filecheck.parser import Parser, pattern_for_opts

from tilelab.compiler.ir import Module, print_module, verify
from tilelab.compiler.ir.parser import parse_module
from tilelab.compiler.options import CompileOptions


def filecheck(output: str, checks: str) -> None:
    """Match ``output`` against the CHECK lines of ``checks`` (FileCheck semantics); fail with its report."""
    opts = Options(match_filename="<checks>", enable_var_scope=True)
    parser = Parser(opts, io.StringIO(textwrap.dedent(checks)), *pattern_for_opts(opts))
    report = io.StringIO()
    with contextlib.redirect_stderr(report):
        code = Matcher(opts, FInput("<pass output>", output), parser).run()  # reports on stderr
    assert code == 0, f"FileCheck failed:\n{report.getvalue()}\n--- pass output ---\n{output}"


_ALIAS = re.compile(r"^[ \t]*(#\w+) = (#.*)\n", re.M)


def expand_aliases(text: str) -> str:
    """``text`` without its ``#name = #layout<...>`` lines, each ``#name`` after them written out."""
    while alias := _ALIAS.search(text):
        name, layout = alias.groups()
        rest = re.sub(re.escape(name) + r"(?![\w<])", lambda _, value=layout: value, text[alias.end() :])
        text = text[: alias.start()] + rest
    return text


def parse(text: str, attrs: dict | None = None) -> Module:
    """The module of IR ``text`` (``//`` lines skipped); ``attrs`` holds its options (``num_warps``, ``arch``)
    and module attributes (``shared_bytes``)."""
    module = parse_module(textwrap.dedent(expand_aliases(text)))
    attrs = dict(attrs or {})
    _seed_divisibility(module, attrs.pop("arg_divisibility", {}))
    options = {k: attrs.pop(k) for k in list(attrs) if k in CompileOptions.__dataclass_fields__}
    module.options = CompileOptions(target="cuda", **options)  # what the passes read (``options_of``)
    module.attrs.update(attrs)
    verify(module)
    return module


def _seed_divisibility(module: Module, given: dict) -> None:
    """Pointer arguments 16-byte aligned, integers unknown (what the runtime specializes a typical launch to),
    unless ``given`` (argument name -> divisibility) says otherwise; the IR text does not spell them."""
    for func in module.funcs:
        names = func.attrs.get("arg_names") or ()
        defaults = [16 if arg.type.is_pointer else 1 for arg in func.args]
        func.attrs["arg_divisibility"] = tuple(given.get(n, d) for n, d in zip(names, defaults))


def check_pass(pass_module, text: str, attrs: dict | None = None) -> str:
    """Run the pass on the IR of ``text``: it must say it changed it, and its output must match the CHECK lines."""
    return check_module(pass_module, parse(text, attrs), expand_aliases(text))


def check_module(pass_module, module: Module, checks: str) -> str:
    """Run the pass on ``module``: it must say it changed it, and its output must match ``checks``' CHECK lines."""
    assert pass_module.run(module), f"{pass_module.NAME} did not fire"
    verify(module)
    out = print_module(module, locs=False)
    filecheck(out, checks)
    return out


def check_unchanged(pass_module, text: str, attrs: dict | None = None) -> None:
    """A negative case: the pass leaves the IR of ``text`` exactly as it was, and says so."""
    module = parse(text, attrs)
    before = print_module(module, locs=False)
    assert not pass_module.run(module), f"{pass_module.NAME} fired where it must not"
    verify(module)
    assert print_module(module, locs=False) == before


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


#: ``before:`` or ``before (arch=sm_90a, num_warps=4):``, its IR, then ``after:`` and its IR up to a blank line
_EXAMPLE = re.compile(
    r"^ *before(?: \((?P<attrs>[^)]*)\))?:\n(?P<before>.*?)^ *after:\n(?P<after>.*?)(?:\n\s*\n|\Z)", re.M | re.S
)


def docstring_examples(pass_module) -> list[tuple[dict, str, str]]:
    """Each ``before:`` / ``after:`` IR pair of a pass's module docstring, with the module attrs its label names."""
    examples = []
    for m in _EXAMPLE.finditer(pass_module.__doc__):
        attrs = dict(kv.strip().split("=") for kv in (m["attrs"] or "").split(",") if kv.strip())
        attrs = {k: int(v) if v.isdigit() else v for k, v in attrs.items()}
        examples.append((attrs, textwrap.dedent(m["before"]), textwrap.dedent(m["after"])))
    return examples


def docstring_example(pass_module) -> tuple[str, str]:
    """The first ``before:`` and ``after:`` IR of a pass's module docstring."""
    _, before, after = docstring_examples(pass_module)[0]
    return before, after


def assert_docstring_example(pass_module) -> None:
    """The pass turns each ``before:`` IR of its docstring into exactly its ``after:`` IR, and says it changed it."""
    examples = docstring_examples(pass_module)
    assert examples, f"{pass_module.NAME}: no before:/after: example in the docstring"
    for attrs, before, after in examples:
        module = parse(before, attrs)
        assert pass_module.run(module), "the docstring example must show the pass firing"
        verify(module)
        assert print_module(module, locs=False) == canonical(after)


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


def interpreted_after(kernel, signature: dict, constants: dict, files, grid, args: list) -> None:
    """Build ``kernel``, run the pass files ``files`` on it (for the cuda target's options), then run the result on
    the interpreter with ``args`` (written in place): what those passes' IR computes, before any lowering."""
    from tilelab.compiler.frontend.build import build_module
    from tilelab.compiler.interpreter import run_kernel
    from tilelab.compiler.passes.pipeline import Pass, PassManager

    module = build_module(kernel, signature, constants)
    module.options = CompileOptions(target="cuda")
    PassManager([Pass.named(f) for f in files]).run(module)
    run_kernel(module, grid, args)
