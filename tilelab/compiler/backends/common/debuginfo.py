"""Line tables for the generated code: each LLVM instruction carries its kernel source line.

Why: the inspector links the lines of the "LLVM IR", "Assembly", "PTX" and "SASS" views to
the kernel source. LLVM keeps a ``!dbg`` location on every instruction through its optimizer
(merged instructions keep one of theirs), and its code generators (x86, NVPTX) turn them
into ``.loc`` directives in the assembly -- if the module has a compile unit and each
function a subprogram. Both backends use this table. Only line tables are emitted (no
variables or types), so compile time barely moves and the machine code is the same.

    lines = LineTable(llmod, "kernel.py")
    lines.function(fn, name="add", line=3)      # fn gets a DISubprogram
    builder.debug_metadata = lines.location(fn, op.loc)   # what the builder emits next
"""

from __future__ import annotations

import os

from llvmlite import ir

I32 = ir.IntType(32)


class LineTable:
    """The debug metadata of one LLVM module: a compile unit, subprograms and interned locations.

    ``emission="DebugDirectivesOnly"`` keeps the ``.file`` / ``.loc`` directives but no DWARF
    sections: what PTX needs, since ptxas refuses optimized code with debug sections.
    """

    def __init__(self, module: ir.Module, filename: str, emission: str = "LineTablesOnly"):
        self.module = module
        directory, name = os.path.split(filename)
        self.file = module.add_debug_info("DIFile", {"filename": name or filename, "directory": directory})
        self.unit = module.add_debug_info(
            "DICompileUnit",
            {
                "language": ir.DIToken("DW_LANG_Python"),
                "file": self.file,
                "producer": "tilelab",
                "runtimeVersion": 0,
                "isOptimized": True,
                "emissionKind": ir.DIToken(emission),
            },
            is_distinct=True,
        )
        module.add_named_metadata("llvm.dbg.cu", self.unit)
        module.add_named_metadata("llvm.module.flags", [ir.Constant(I32, 2), "Debug Info Version", ir.Constant(I32, 3)])
        module.add_named_metadata("llvm.module.flags", [ir.Constant(I32, 2), "Dwarf Version", ir.Constant(I32, 4)])
        self.signature = module.add_debug_info("DISubroutineType", {"types": module.add_metadata([])})
        self.scopes: dict[ir.Function, object] = {}
        self.locations: dict[tuple, object] = {}

    def function(self, fn: ir.Function, name: str, line: int) -> None:
        """Give ``fn`` a subprogram named ``name`` starting at source ``line``."""
        scope = self.module.add_debug_info(
            "DISubprogram",
            {
                "name": name,
                "file": self.file,
                "line": line,
                "type": self.signature,
                "isLocal": fn.linkage == "internal",
                "isDefinition": True,
                "scopeLine": line,
                "isOptimized": True,
                "unit": self.unit,
            },
            is_distinct=True,
        )
        fn.set_metadata("dbg", scope)
        self.scopes[fn] = scope

    def location(self, fn: ir.Function, loc) -> object:
        """The ``DILocation`` of source location ``loc`` (``line``, ``col``) inside ``fn``."""
        key = (fn, loc.line, loc.col)
        if key not in self.locations:
            self.locations[key] = self.module.add_debug_info(
                "DILocation", {"line": max(0, loc.line), "column": max(0, loc.col) + 1, "scope": self.scopes[fn]}
            )
        return self.locations[key]
