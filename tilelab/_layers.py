"""The layers of tilelab, lowest first: the one table of who may import whom.

A module belongs to the unit of the longest package prefix below that names it. It may import
modules of its own unit and of every unit in a *lower* layer, never of its layer's other units
nor of a higher layer. ``tests/test_layering.py`` parses every module's imports (function-local
ones included) and checks them against this table; ``docs/internals.md`` shows it as a table
(``layer_table_markdown``), which the same test keeps equal to this one.

Data flows one way: the user's kernel goes down through the runtime into the compiler; results
(a ``CompiledKernel`` with its passes, layouts and analyses) go up to the views.
"""

from __future__ import annotations

#: ``(layer, {unit: (package prefixes...)}, what it owns)``, lowest layer first.
LAYERS: tuple[tuple[str, dict[str, tuple[str, ...]], str], ...] = (
    (
        "meta",
        {
            "meta": (
                "tilelab._layers",
                "tilelab._registry",
                "tilelab._switch",
                "tilelab._version",
                "tilelab.compiler",
                "tilelab.errors",
            ),
        },
        "version, this table, the decorator-filled tables (`Registry`), process-wide settings held by"
        " concurrent users (`SharedSwitch`), the exceptions user code catches",
    ),
    ("layouts", {"layouts": ("tilelab.compiler.layouts",)}, "linear layouts over GF(2), the gather math"),
    ("ir", {"ir": ("tilelab.compiler.ir",)}, "types, values, ops, printer, parser, verifier"),
    (
        "ir users",
        {
            "analysis": ("tilelab.compiler.analysis",),
            "frontend": ("tilelab.compiler.frontend",),
            "interpreter": ("tilelab.compiler.interpreter",),
        },
        "axis info, memory-access model, costs; Python AST -> IR; the numpy executor",
    ),
    (
        "transforms",
        {
            "passes": ("tilelab.compiler.passes",),
            "language": ("tilelab.language",),
            "backends/common": ("tilelab.compiler.backends",),
        },
        "passes and pipelines; the `tl` surface; LLVM types and the llvmlite library shared by the backends",
    ),
    (
        "backends",
        {
            "backends/cpu": ("tilelab.compiler.backends.cpu",),
            "backends/cuda": ("tilelab.compiler.backends.cuda",),
        },
        "IR -> LLVM IR -> host code / PTX",
    ),
    (
        "backends on backends",
        {"backends/amd": ("tilelab.compiler.backends.amd",)},
        "AMD gfx942 for inspection: the CUDA lowering with AMDGPU hooks -> GCN assembly",
    ),
    (
        "runtime",
        {"runtime": ("tilelab.runtime", "tilelab.cuda", "tilelab.tensor_wrapper")},
        "jit, keys, caches, targets, launch, autotune, do_bench",
    ),
    (
        "results",
        {"viz": ("tilelab.viz",), "testing": ("tilelab.testing",)},
        "the inspector's views and report; `tilelab.testing` (assert_close, perf_report)",
    ),
    ("notebook", {"magics": ("tilelab.magics",)}, "%%tile_kernel, %tile_bench, %tile_inspect"),
    ("api", {"api": ("tilelab",)}, "`import tilelab`: the public names, `%load_ext tilelab`"),
    (
        "applications",
        {"puzzles": ("tilelab.puzzles",), "cli": ("tilelab.cli",)},
        "course puzzles and the `tilelab` command, written against the public API",
    ),
)


def unit_of(module: str) -> str | None:
    """The unit of a dotted module name (longest prefix wins), or None outside tilelab."""
    best, best_len = None, -1
    for _, units, _ in LAYERS:
        for unit, prefixes in units.items():
            for prefix in prefixes:
                if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                    best, best_len = unit, len(prefix)
    return best


def layer_of(unit: str) -> int:
    """The position of ``unit``'s layer, 0 the lowest."""
    for i, (_, units, _) in enumerate(LAYERS):
        if unit in units:
            return i
    raise KeyError(unit)


def may_import(importer: str, imported: str) -> bool:
    """Whether module ``importer`` may import module ``imported`` (same unit, or a lower layer)."""
    a, b = unit_of(importer), unit_of(imported)
    if a is None or b is None or a == b:
        return True
    return layer_of(b) < layer_of(a)


def layer_table_markdown() -> str:
    """The table as ``docs/internals.md`` shows it: highest layer first, as the code is read top-down."""
    rows = ["| layer | units (packages) | owns |", "|---|---|---|"]
    for name, units, owns in reversed(LAYERS):
        cells = ", ".join(f"{u} (`{'`, `'.join(p)}`)" for u, p in units.items())
        rows.append(f"| {name} | {cells} | {owns} |")
    return "\n".join(rows)
