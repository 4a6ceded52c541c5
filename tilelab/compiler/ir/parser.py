"""Parse the text form of the tile IR back into a ``Module``: the inverse of the printer.

Why: golden tests write IR by hand, and the runtime's disk cache stores the final IR as
text and reads it back. ``print_module(parse_module(text))`` gives ``text`` again, with or
without locations::

    m = parse_module('''
    tt.func @k(%x: !ptr<f32>) {
      %0 = tt.get_program_id {axis = 0} : i32
      tt.return
    }
    ''')

The parser reads one op per line with a small cursor over the line (regular expressions
for the lexical pieces, recursive descent for types and attribute values). Attributes the
printer hides (``has_mask``, default hints, a ``False`` constant) come back from the
operand count and from each op's defaults. Errors are ``ParseError`` naming the line.
"""

from __future__ import annotations

import json
import re

from tilelab.compiler.layouts import parse_layout

from . import ops as ops_mod
from .core import UNKNOWN_LOC, Block, Loc, Module, Op, Region, Value
from .ops import BINARY_KINDS, UNARY_KINDS, BinaryOp, CallOp, CmpOp, ForOp, FuncOp, IfOp, UnaryOp, WhileOp
from .types import SCALARS, PointerType, TensorType, Type


class ParseError(Exception):
    """The text is not valid tile IR; the message names the line."""


#: printed op name -> op class (binary, unary and compare ops are spelled by kind)
OP_CLASSES: dict[str, type] = {
    cls.name: cls
    for cls in (getattr(ops_mod, n) for n in ops_mod.__all__)
    if isinstance(cls, type) and issubclass(cls, Op)
}
OP_CLASSES.update({f"arith.{k}": BinaryOp for k in BINARY_KINDS})
OP_CLASSES.update({f"math.{k}": UnaryOp for k in UNARY_KINDS})

#: attributes the printer leaves out when they hold their default (None, "", False)
_DEFAULTS: dict[type, dict] = {
    ops_mod.ConstantOp: {"value": False},
    ops_mod.LoadOp: {"cache": "", "eviction": "", "volatile": False},
    ops_mod.StoreOp: {"cache": "", "eviction": ""},
    ops_mod.ScanOp: {"reverse": False},
    ops_mod.PrintOp: {"hex": False},
    ops_mod.LocalAllocOp: {"offset": None},
    ForOp: {"num_stages": None},
}

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<str>"(?:[^"\\]|\\.)*")
    | (?P<num>-?(?:inf|nan|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)(?![\w.]))
    | (?P<value>%[\w.]+)
    | (?P<sym>@[\w.$]+)
    | (?P<name>[A-Za-z_][\w.]*)
    | (?P<punct>->|\^bb|!ptr|[\[\](){}<>,:=])
    )""",
    re.VERBOSE,
)
_LOC = re.compile(r'\s*loc\("(.*)":(-?\d+):(-?\d+)\)')
_DIMS = re.compile(r"((?:\d+x)+)")


#: tensor types by their text (``<128x64xf16, #blocked<...>>``): a module repeats a few of them on most lines
_TENSOR_TYPES: dict[str, TensorType] = {}
_TENSOR_TYPES_KEPT = 4096
_ANGLES = re.compile(r"[<>]")


def _closing(text: str, pos: int) -> int | None:
    """Just past the ``>`` closing the ``<`` at ``pos`` (spaces skipped); None: no ``<`` there, or unbalanced."""
    start = len(text) - len(text[pos:].lstrip())
    if not text.startswith("<", start):
        return None
    depth = 0
    for m in _ANGLES.finditer(text, start):
        if m.group() == "<":
            depth += 1
        elif text[m.start() - 1] != "-":  # the '>' of '->' closes nothing
            depth -= 1
            if depth == 0:
                return m.end()
    return None


def _default_layout_parser(text: str, dims):
    """Layouts as the GPU passes print them (``#blocked<...>``, ``#linear<...>``)."""
    return parse_layout(text, dims)


class _Line:
    """A cursor over one line of text: peek and take tokens, with errors naming the line."""

    def __init__(self, text: str, lineno: int, layout_parser=None):
        self.text, self.lineno, self.pos = text, lineno, 0
        self.layout_parser = layout_parser

    def error(self, msg: str) -> ParseError:
        return ParseError(f"line {self.lineno}: {msg}: {self.text.strip()}")

    def peek(self) -> tuple[str, str] | None:
        m = _TOKEN.match(self.text, self.pos)
        return (m.lastgroup, m.group(m.lastgroup)) if m else None

    def take(self, kind: str | None = None, text: str | None = None) -> str:
        m = _TOKEN.match(self.text, self.pos)
        if not m or (kind and m.lastgroup != kind) or (text and m.group(m.lastgroup) != text):
            raise self.error(f"expected {text or kind or 'a token'}")
        self.pos = m.end()
        return m.group(m.lastgroup)

    def accept(self, text: str) -> bool:
        tok = self.peek()
        if tok and tok[1] == text:
            self.take()
            return True
        return False

    def at_end(self) -> bool:
        return not self.text[self.pos :].strip()

    def loc(self) -> Loc:
        m = _LOC.match(self.text, self.pos)
        if not m:
            return UNKNOWN_LOC
        self.pos = m.end()
        return Loc(m.group(1), int(m.group(2)), int(m.group(3)))

    # ------------------------------------------------------------ types
    def type(self) -> Type:
        word = self.take()
        if word == "!ptr":
            self.take(text="<")
            pointee = self.type()
            self.take(text=">")
            return PointerType(pointee)
        if word == "tensor":
            return self._tensor()
        if word in SCALARS:
            return SCALARS[word]
        raise self.error(f"unknown type '{word}'")

    def _tensor(self) -> TensorType:
        """``<dims x elem[, layout]>``; a text seen before gives the type made then (types are values)."""
        end = _closing(self.text, self.pos) if self.layout_parser is None else None
        key = self.text[self.pos : end] if end is not None else None
        found = _TENSOR_TYPES.get(key) if key is not None else None
        if found is not None:
            self.pos = end
            return found
        made = self._tensor_text()
        if key is not None:
            if len(_TENSOR_TYPES) >= _TENSOR_TYPES_KEPT:
                _TENSOR_TYPES.clear()
            _TENSOR_TYPES[key] = made
        return made

    def _tensor_text(self) -> TensorType:
        self.take(text="<")
        m = _DIMS.match(self.text, self.pos)
        if not m:
            raise self.error("expected tensor dimensions")
        self.pos = m.end()
        dims = tuple(int(d) for d in m.group(1).split("x")[:-1])
        elem = self.type()
        layout = None
        if self.accept(","):
            layout = self._layout(dims)
        self.take(text=">")
        return TensorType(dims, elem, layout)

    def _layout(self, dims):
        start, depth = self.pos, 0
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch == ">" and depth == 0:
                break
            depth += {"<": 1, ">": -1}.get(ch, 0)
            self.pos += 1
        parse = self.layout_parser or _default_layout_parser
        try:
            return parse(self.text[start : self.pos].strip(), dims)
        except (ValueError, KeyError) as e:
            raise self.error(f"bad layout ({e})") from None

    def type_list(self) -> list[Type]:
        """``(t, t, ...)``"""
        self.take(text="(")
        types = []
        while not self.accept(")"):
            types.append(self.type())
            self.accept(",")
        return types

    # ------------------------------------------------------------ attributes
    def attr_value(self):
        kind, text = self.peek() or (None, None)
        if kind == "str":
            return json.loads(self.take())
        if kind == "num":
            self.take()
            is_float = any(c in text for c in ".eEn")  # 'n' for inf / nan
            return float(text) if is_float else int(text)
        if text in ("true", "false"):
            return self.take() == "true"
        if text == "[":
            self.take()
            items = []
            while not self.accept("]"):
                items.append(self.attr_value())
                self.accept(",")
            return tuple(items)
        return self.type()

    def attr_dict(self) -> dict:
        """``{name = value, ...}``"""
        self.take(text="{")
        attrs = {}
        while not self.accept("}"):
            key = self.take("name")
            self.take(text="=")
            attrs[key] = self.attr_value()
            self.accept(",")
        return attrs


class _Parser:
    """Reads lines into functions; ``values`` maps printed names to SSA values."""

    def __init__(self, text: str, layout_parser=None):
        self.lines = [
            _Line(t, i + 1, layout_parser) for i, t in enumerate(text.splitlines()) if t.strip() and not _comment(t)
        ]
        self.index = 0
        self.values: dict[str, Value] = {}

    def next_line(self) -> _Line:
        if self.index >= len(self.lines):
            last = self.lines[-1].lineno if self.lines else 0
            raise ParseError(f"line {last}: unexpected end of text (missing '}}')")
        line = self.lines[self.index]
        self.index += 1
        return line

    def use(self, line: _Line) -> Value:
        name = line.take("value")
        if name not in self.values:
            raise line.error(f"unknown value {name}")
        return self.values[name]

    def define(self, line: _Line, name: str, value: Value) -> None:
        if name in self.values:
            raise line.error(f"{name} is defined twice")
        self.values[name] = value

    def new_block(self, line: _Line, args: list[tuple[str, Type]]) -> Block:
        block = Block([t for _, t in args], [n[1:] for n, _ in args])
        for (name, _), v in zip(args, block.args):
            self.define(line, name, v)
        return block

    def typed_args(self, line: _Line) -> list[tuple[str, Type]]:
        """``(%a: t, %b: t)``"""
        line.take(text="(")
        args = []
        while not line.accept(")"):
            name = line.take("value")
            line.take(text=":")
            args.append((name, line.type()))
            line.accept(",")
        return args

    # ------------------------------------------------------------ functions
    def module(self, kernel: str | None) -> Module:
        funcs = []
        while self.index < len(self.lines):
            self.values = {}
            funcs.append(self.func(self.next_line()))
        called = {op.attrs["callee"] for f in funcs for op in f.walk() if isinstance(op, CallOp)}
        if kernel is None:
            kernel = next((f.sym_name for f in funcs if f.sym_name not in called), None)
        return Module(funcs, kernel)

    def func(self, line: _Line) -> FuncOp:
        line.take(text="tt.func")
        sym = line.take("sym")[1:]
        args = self.typed_args(line)
        rtypes = line.type_list() if line.accept("->") else []
        loc = line.loc()
        self.expect_open(line)
        f = FuncOp(sym, [t for _, t in args], rtypes, [n[1:] for n, _ in args], loc=loc)
        for (name, _), v in zip(args, f.args):
            self.define(line, name, v)
        self.block_body(f.body)
        return f

    def expect_open(self, line: _Line) -> None:
        line.take(text="{")
        if not line.at_end():
            raise line.error("unexpected text after '{'")

    def block_body(self, block: Block, stops=("}",)) -> _Line:
        """Parse ops into ``block`` until a line starting with one of ``stops``; return that line."""
        while True:
            line = self.next_line()
            stripped = line.text.strip()
            if any(stripped.startswith(s) for s in stops):
                return line
            block.append(self.op(line))

    # ------------------------------------------------------------ ops
    def op(self, line: _Line) -> Op:
        results = []
        if line.peek()[0] == "value":
            results.append(line.take("value"))
            while line.accept(","):
                results.append(line.take("value"))
            line.take(text="=")
        name = line.take("name")
        special = {"scf.for": self.for_op, "scf.if": self.if_op, "scf.while": self.while_op}
        op = special[name](line) if name in special else self.generic(line, name, len(results))
        if len(op.results) != len(results):
            raise line.error(f"{name} gives {len(op.results)} results, not {len(results)}")
        for r, v in zip(results, op.results):
            self.define(line, r, v)
        return op

    def generic(self, line: _Line, name: str, nresults: int) -> Op:
        cls = OP_CLASSES.get(name)
        if cls is None:
            raise line.error(f"unknown op '{name}'")
        attrs = {}
        if cls in (BinaryOp, UnaryOp):
            attrs["kind"] = name.split(".", 1)[1]
        elif cls is CmpOp:
            attrs["predicate"] = line.take("name")
        operands = []
        if line.peek() and line.peek()[0] == "value":
            operands.append(self.use(line))
            while line.accept(","):
                operands.append(self.use(line))
        if _attrs_next(line):
            attrs.update(line.attr_dict())
        rtypes = []
        if line.accept(":"):
            types = [line.type()]
            while line.accept(","):
                types.append(line.type())
            rtypes = types if nresults else []
        loc = line.loc()
        regions = self.generic_regions(line) if line.accept("{") else []
        if not line.at_end():
            raise line.error("unexpected text at the end of the op")
        _restore_hidden(cls, operands, attrs)
        return cls.create(operands, rtypes, attrs, regions, loc)

    def generic_regions(self, line: _Line) -> list[Region]:
        """``^bb(...):`` headers, each followed by the ops of its block, up to ``}``."""
        regions: list[Region] = []
        while True:
            head = self.next_line()
            if head.text.strip() == "}":
                return regions
            head.take(text="^bb")
            block = self.new_block(head, self.typed_args(head))
            head.take(text=":")
            regions.append(Region([block]))
            while self.index < len(self.lines) and not _ends_block(self.lines[self.index]):
                block.append(self.op(self.next_line()))

    def for_op(self, line: _Line) -> Op:
        iv = line.take("value")
        line.take(text="=")
        lb = self.use(line)
        line.take(text="to")
        ub = self.use(line)
        line.take(text="step")
        step = self.use(line)
        names, inits, rtypes = [], [], []
        if line.accept("iter_args"):
            line.take(text="(")
            while not line.accept(")"):
                names.append(line.take("value"))
                line.take(text="=")
                inits.append(self.use(line))
                line.accept(",")
            line.take(text="->")
            rtypes = line.type_list()
        attrs = line.attr_dict() if _attrs_next(line) else {}
        loc = line.loc()
        self.expect_open(line)
        _restore_hidden(ForOp, [], attrs)
        body = self.new_block(line, [(iv, lb.type), *zip(names, rtypes)])
        op = ForOp.create([lb, ub, step, *inits], rtypes, attrs, [Region([body])], loc)
        self.block_body(body)
        return op

    def if_op(self, line: _Line) -> Op:
        cond = self.use(line)
        rtypes = line.type_list() if line.accept("->") else []
        loc = line.loc()
        self.expect_open(line)
        then, other = Block(), Block()
        op = IfOp.create([cond], rtypes, {}, [Region([then]), Region([other])], loc)
        end = self.block_body(then)
        if end.text.strip() == "} else {":
            self.block_body(other)
        elif end.text.strip() != "}":
            raise end.error("expected '}' or '} else {'")
        return op

    def while_op(self, line: _Line) -> Op:
        line.take(text="(")
        names, inits = [], []
        while not line.accept(")"):
            names.append(line.take("value"))
            line.take(text="=")
            inits.append(self.use(line))
            line.accept(",")
        line.take(text="->")
        rtypes = line.type_list()
        loc = line.loc()
        self.expect_open(line)
        before = self.new_block(line, [(n, v.type) for n, v in zip(names, inits)])
        mid = self.block_body(before)
        mid.take(text="}")
        mid.take(text="do")
        mid.take(text="{")
        mid.take(text="^bb")
        after = self.new_block(mid, self.typed_args(mid))
        mid.take(text=":")
        self.block_body(after)
        return WhileOp.create(inits, rtypes, {}, [Region([before]), Region([after])], loc)


def _comment(text: str) -> bool:
    return text.lstrip().startswith("//")


def _ends_block(line: _Line) -> bool:
    """A generic region's block ends at the next ``^bb`` header or at the closing ``}``."""
    text = line.text.strip()
    return text == "}" or text.startswith("^bb")


def _attrs_next(line: _Line) -> bool:
    """Whether an attribute dictionary starts at the cursor (a ``{`` that does not end the line)."""
    rest = line.text[line.pos :].strip()
    return rest.startswith("{") and rest != "{"


def _restore_hidden(cls: type, operands: list[Value], attrs: dict) -> None:
    """Give back the attributes the printer hides: mask/other flags and defaults."""
    if cls is ops_mod.LoadOp:
        rank = attrs.get("descriptor", 0)
        n = len(operands) - (1 + 3 * rank if rank else 0)  # the descriptor's scalars come last
        attrs.setdefault("has_mask", n >= 2)
        attrs.setdefault("has_other", n >= 3)
    elif cls is ops_mod.StoreOp:
        rank = attrs.get("descriptor", 0)
        attrs.setdefault("has_mask", len(operands) - (1 + 3 * rank if rank else 0) >= 3)
    elif cls is ops_mod.AtomicRMWOp or cls is ops_mod.AsyncCopyGlobalToLocalOp:
        attrs.setdefault("has_mask", len(operands) >= 3)
    for key, value in _DEFAULTS.get(cls, {}).items():
        attrs.setdefault(key, value)


def parse_module(text: str, kernel: str | None = None, layout_parser=None) -> Module:
    """Parse the text form of a module (as ``print_module`` writes it).

    ``kernel`` names the launched function; by default it is the first function that no
    other function calls. ``layout_parser(text, dims) -> layout`` reads the ``#...`` part of a
    tensor type with a layout. Lines starting with ``//`` are comments.
    """
    return _Parser(text, layout_parser).module(kernel)
