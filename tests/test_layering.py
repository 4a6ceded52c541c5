"""The import graph follows the layer table (``tilelab/_layers.py``): nothing imports upward, no folder cycles.

Every module's imports are read from its syntax tree, function-local ones included (an import
hidden in a function is still an arrow of the graph), with relative imports resolved.
"""

from __future__ import annotations

import ast
import graphlib
import re
from pathlib import Path

import pytest

from tilelab import _layers

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tilelab"
#: the folders that must not import one another in a cycle (a folder is one node, its subfolders in it)
FOLDERS = (
    "analysis",
    "backends",
    "passes",
    "runtime",
    "viz",
    "frontend",
    "ir",
    "layouts",
    "interpreter",
    "magics",
    "language",
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported_modules(name: str, path: Path) -> list[tuple[str, int]]:
    """``(imported module, line)`` for every import statement of the module, at any depth."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                stem = package[: len(package) - (node.level - 1)]
                base = ".".join(stem + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.append((sub if sub in MODULES else base, node.lineno))
    return [(m, line) for m, line in found if m == "tilelab" or m.startswith("tilelab.")]


EDGES = [(name, target, line) for name, path in MODULES.items() for target, line in imported_modules(name, path)]


def test_every_module_has_a_unit_in_the_table():
    unlisted = [m for m in MODULES if m != "tilelab" and _layers.unit_of(m) == "api"]
    assert not unlisted, f"add these modules' packages to tilelab/_layers.py: {unlisted}"


def test_no_module_imports_a_higher_layer():
    upward = [
        f"{name}:{line} imports {target} ({_layers.unit_of(name)} -> {_layers.unit_of(target)})"
        for name, target, line in EDGES
        if not _layers.may_import(name, target)
    ]
    assert not upward, "imports against the layer table (tilelab/_layers.py):\n" + "\n".join(upward)


def folder_of(module: str) -> str | None:
    for part in module.split(".")[1:]:
        if part in FOLDERS:
            return part
    return None


def test_folders_form_no_import_cycle():
    graph: dict[str, set[str]] = {f: set() for f in FOLDERS}
    for name, target, _ in EDGES:
        a, b = folder_of(name), folder_of(target)
        if a and b and a != b:
            graph[a].add(b)
    try:
        list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as e:
        pytest.fail(f"folders import one another in a cycle: {' -> '.join(e.args[1])}")


def test_the_checker_sees_local_and_relative_imports(tmp_path):
    """The parser the other tests rely on finds a function-local relative import (so the test can fail)."""
    path = PACKAGE / "compiler" / "ir" / "core.py"
    targets = {t for t, _ in imported_modules("tilelab.compiler.ir.core", path)}
    assert "tilelab.compiler.ir.printer" in targets  # ``from .printer import print_module`` inside a method
    assert not _layers.may_import("tilelab.compiler.analysis.memory_access", "tilelab.compiler.backends.cuda.x")
    assert not _layers.may_import("tilelab.compiler.passes.x", "tilelab.compiler.backends.cpu.x")
    assert _layers.may_import("tilelab.compiler.backends.cuda.x", "tilelab.compiler.layouts")


def test_internals_doc_shows_this_table():
    doc = (ROOT / "docs" / "internals.md").read_text()
    table = re.search(r"<!-- layers -->\n(.*?)\n<!-- /layers -->", doc, re.S)
    assert table is not None, "docs/internals.md lost its <!-- layers --> table"
    assert table.group(1).strip() == _layers.layer_table_markdown()


def test_every_axis_rule_is_in_axis_rules():
    """A rule registered elsewhere would exist only once its module is imported (by whoever thinks of it)."""
    elsewhere = []
    for name, path in MODULES.items():
        if name == "tilelab.compiler.analysis.axis_rules":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            for deco in getattr(node, "decorator_list", ()):
                target = deco.func if isinstance(deco, ast.Call) else deco
                if ast.unparse(target) in ("rule", "axis_info.rule"):
                    elsewhere.append(f"{name}:{node.lineno}")
    assert not elsewhere, f"axis-info rules outside analysis/axis_rules.py: {elsewhere}"
