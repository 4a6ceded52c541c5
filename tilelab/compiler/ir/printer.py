"""MLIR-style text form of the tile IR.

    tt.func @add(%x: !ptr<f32>, %n: i32) {
      %0 = tt.get_program_id {axis = 0} : i32 loc("add.py":3:11)
      %1 = arith.add %0, %0 : i32 loc("add.py":3:11)
      ...
    }

The text is stable (golden tests compare it). Values are numbered in order of
definition; block arguments take their name hint (function arguments, loop
variables) when they have one. ``print_module(m, locs=False)`` leaves the locations
out; ``Printer.line_locs`` gives, per printed line, the source location of the op on
it (the inspector uses it to link IR lines to kernel lines).
"""

from __future__ import annotations

import json

from .core import Block, Loc, Module, Op, Value
from .ops import BinaryOp, CmpOp, ConstantOp, ForOp, FuncOp, IfOp, UnaryOp, WhileOp


def op_display_name(op: Op) -> str:
    """The printed name of ``op``: binary and unary ops show their kind."""
    if isinstance(op, BinaryOp):
        return f"arith.{op.kind}"
    if isinstance(op, UnaryOp):
        return f"math.{op.kind}"
    if isinstance(op, CmpOp):
        return f"arith.cmp {op.predicate}"
    return op.name


_HIDDEN_ATTRS = {
    "kind",
    "predicate",
    "has_mask",
    "has_other",
    "arg_names",
    "sym_name",
    "result_types",
    "source",
}


def _fmt_attr(v) -> str:
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)  # quotes and newlines escaped, so the parser reads it back
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(_fmt_attr(x) for x in v) + "]"
    return str(v)


def _shown_attrs(op: Op) -> dict:
    # only binary/unary/compare ops spell kind and predicate in their name (hint and atomic ops print them)
    spelled = isinstance(op, (BinaryOp, UnaryOp, CmpOp))
    shown = {}
    for k, v in op.attrs.items():
        if k in _HIDDEN_ATTRS and (spelled or k not in ("kind", "predicate")):
            continue
        if (v is None or v == "" or v is False) and not (k == "value" and isinstance(op, ConstantOp)):
            continue
        shown[k] = v
    return shown


class Printer:
    """Prints a module or a function; collects ``lines`` and ``line_locs``."""

    def __init__(self, locs: bool = True):
        self.locs = locs
        self.names: dict[Value, str] = {}
        self.used: set[str] = set()
        self.counter = 0
        self.lines: list[str] = []
        self.line_locs: list[Loc | None] = []
        self.line_uids: list[int | None] = []  # the ``Op.uid`` printed on each line (None: braces, headers)

    # ---------------------------------------------------------------- naming
    def name(self, v: Value) -> str:
        if v not in self.names:
            self.names[v] = f"%{self.counter}"
            self.counter += 1
        return self.names[v]

    def name_arg(self, v: Value) -> str:
        base = v.name_hint or "arg"
        name, k = base, 0
        while name in self.used or name.isdigit():
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        self.names[v] = f"%{name}"
        return self.names[v]

    def emit(self, indent: int, text: str, loc: Loc | None = None, uid: int | None = None) -> None:
        if self.locs and loc is not None and loc.line:
            text = f"{text[:-2]} {loc} {{" if text.endswith(" {") else f"{text} {loc}"
        self.lines.append("  " * indent + text)
        self.line_locs.append(loc)
        self.line_uids.append(uid)

    # ---------------------------------------------------------------- ops
    def print_func(self, f: FuncOp, indent: int = 0) -> None:
        args = ", ".join(f"{self.name_arg(a)}: {a.type}" for a in f.args)
        rtypes = f.attrs.get("result_types", ())
        ret = f" -> ({', '.join(str(t) for t in rtypes)})" if rtypes else ""
        self.emit(indent, f"tt.func @{f.sym_name}({args}){ret} {{", f.loc)
        self.print_block_ops(f.body, indent + 1)
        self.emit(indent, "}")

    def print_block_ops(self, block: Block, indent: int) -> None:
        for op in block.ops:
            self.print_op(op, indent)

    def _results(self, op: Op) -> str:
        if not op.results:
            return ""
        return ", ".join(self.name(r) for r in op.results) + " = "

    def _operands(self, values) -> str:
        return ", ".join(self.name(v) for v in values)

    def print_op(self, op: Op, indent: int) -> None:
        if isinstance(op, ForOp):
            return self._print_for(op, indent)
        if isinstance(op, IfOp):
            return self._print_if(op, indent)
        if isinstance(op, WhileOp):
            return self._print_while(op, indent)
        text = self._results(op) + op_display_name(op)
        if op.operands:
            text += " " + self._operands(op.operands)
        attrs = _shown_attrs(op)
        if attrs:
            text += " {" + ", ".join(f"{k} = {_fmt_attr(v)}" for k, v in attrs.items()) + "}"
        if op.results:
            text += " : " + ", ".join(str(r.type) for r in op.results)
        elif op.operands:
            text += " : " + str(op.operands[0].type)
        if not op.regions:
            return self.emit(indent, text, op.loc, op.uid)
        self.emit(indent, text + " {", op.loc, op.uid)
        for region in op.regions:
            for block in region.blocks:
                self._print_block_header(block, indent + 1)
                self.print_block_ops(block, indent + 2)
        self.emit(indent, "}")

    def _print_block_header(self, block: Block, indent: int) -> None:
        args = ", ".join(f"{self.name_arg(a)}: {a.type}" for a in block.args)
        self.emit(indent, f"^bb({args}):")

    def _print_for(self, op: ForOp, indent: int) -> None:
        lb, ub, step = (self.name(v) for v in op.operands[:3])
        iv = self.name_arg(op.induction_var)
        head = self._results(op) + f"scf.for {iv} = {lb} to {ub} step {step}"
        carried = op.body.args[1:]
        if carried:
            pairs = ", ".join(f"{self.name_arg(a)} = {self.name(v)}" for a, v in zip(carried, op.init_args))
            head += f" iter_args({pairs}) -> ({', '.join(str(r.type) for r in op.results)})"
        attrs = _shown_attrs(op)
        if attrs:
            head += " {" + ", ".join(f"{k} = {_fmt_attr(v)}" for k, v in attrs.items()) + "}"
        self.emit(indent, head + " {", op.loc, op.uid)
        self.print_block_ops(op.body, indent + 1)
        self.emit(indent, "}")

    def _print_if(self, op: IfOp, indent: int) -> None:
        head = self._results(op) + f"scf.if {self.name(op.operands[0])}"
        if op.results:
            head += " -> (" + ", ".join(str(r.type) for r in op.results) + ")"
        self.emit(indent, head + " {", op.loc, op.uid)
        self.print_block_ops(op.then_block, indent + 1)
        if op.else_block.ops:
            self.emit(indent, "} else {")
            self.print_block_ops(op.else_block, indent + 1)
        self.emit(indent, "}")

    def _print_while(self, op: WhileOp, indent: int) -> None:
        args = ", ".join(f"{self.name_arg(a)} = {self.name(v)}" for a, v in zip(op.before.args, op.operands))
        types = ", ".join(str(r.type) for r in op.results)
        self.emit(indent, self._results(op) + f"scf.while ({args}) -> ({types}) {{", op.loc, op.uid)
        self.print_block_ops(op.before, indent + 1)
        after = ", ".join(f"{self.name_arg(a)}: {a.type}" for a in op.after.args)
        self.emit(indent, f"}} do {{ ^bb({after}):")
        self.print_block_ops(op.after, indent + 1)
        self.emit(indent, "}")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def print_module(module: Module, locs: bool = True) -> str:
    """The text form of ``module``."""
    p = Printer(locs)
    for f in module.funcs:
        p.print_func(f)
    return p.text()


def print_module_uids(module: Module, locs: bool = True) -> tuple[str, tuple[int | None, ...]]:
    """The text form of ``module`` and, per line, the ``Op.uid`` of the op printed there (None elsewhere).

    Two snapshots of one module match their ops by uid (a pass keeps an op's uid while it lives),
    so a diff shows only the ops a pass removed, added or changed, not renumbered SSA names.
    """
    p = Printer(locs)
    for f in module.funcs:
        p.print_func(f)
    return p.text(), tuple(p.line_uids)


def print_op(op: Op, locs: bool = False) -> str:
    """The text form of one op (and its regions)."""
    p = Printer(locs)
    if isinstance(op, FuncOp):
        p.print_func(op)
    else:
        p.print_op(op, 0)
    return p.text()
