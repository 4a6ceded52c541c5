"""The rewriter: the one place where ops are inserted, replaced, erased, cloned and moved.

The frontend builds functions through it and every pass edits the IR through it, so
insertion points, source locations and use-lists are handled once (MLIR's
``OpBuilder``/``RewriterBase``, xDSL's ``Rewriter``)::

    rw = Rewriter(func.body, loc)              # inserts at the end of the body
    pid = rw.insert(ProgramIdOp(0)).result     # takes the rewriter's location
    with rw.before(store):                     # temporarily insert just before ``store``
        conv = rw.insert(ConvertLayoutOp(v, t))
    rw.replace_op(op, [conv.result])           # uses of op's result now use conv's; op erased
    copy = rw.clone(loop, mapping)             # a deep copy, regions included, new uids
    rw.move_before(inv, loop)                  # the same op (same uid) elsewhere

An insertion point is a block and the op to insert before (``None``: at the end).
Ops inserted one after the other keep their order. Erasing checks that the op's
results are unused and drops the uses the op (and everything nested in it) held.
"""

from __future__ import annotations

from contextlib import contextmanager

from .core import UNKNOWN_LOC, Block, Loc, Op, Region, Value


class Rewriter:
    """Edits the IR at an insertion point, keeping locations and use-lists right."""

    def __init__(self, block: Block | None = None, loc: Loc = UNKNOWN_LOC):
        self.block = block
        self.anchor: Op | None = None  # insert before this op of ``block``; None: at the end
        self.loc = loc

    # ------------------------------------------------------------------ insertion point
    def set_insertion_point_to_end(self, block: Block) -> None:
        self.block, self.anchor = block, None

    def set_insertion_point_to_start(self, block: Block) -> None:
        self.block, self.anchor = block, (block.ops[0] if block.ops else None)

    def set_insertion_point_before(self, op: Op) -> None:
        self.block, self.anchor = op.parent, op

    def set_insertion_point_after(self, op: Op) -> None:
        ops = op.parent.ops
        i = ops.index(op) + 1
        self.block, self.anchor = op.parent, (ops[i] if i < len(ops) else None)

    @contextmanager
    def _saved(self):
        saved = (self.block, self.anchor)
        try:
            yield self
        finally:
            self.block, self.anchor = saved

    @contextmanager
    def at_end(self, block: Block):
        """Temporarily insert at the end of ``block``."""
        with self._saved():
            self.set_insertion_point_to_end(block)
            yield self

    @contextmanager
    def at_start(self, block: Block):
        """Temporarily insert at the start of ``block``."""
        with self._saved():
            self.set_insertion_point_to_start(block)
            yield self

    @contextmanager
    def before(self, op: Op):
        """Temporarily insert just before ``op`` in its block."""
        with self._saved():
            self.set_insertion_point_before(op)
            yield self

    @contextmanager
    def after(self, op: Op):
        """Temporarily insert just after ``op`` (ops inserted in turn stay in order)."""
        with self._saved():
            self.set_insertion_point_after(op)
            yield self

    @contextmanager
    def location(self, loc: Loc):
        """Temporarily give new ops ``loc``."""
        saved, self.loc = self.loc, loc
        try:
            yield self
        finally:
            self.loc = saved

    # ------------------------------------------------------------------ inserting
    def insert(self, op: Op) -> Op:
        """Insert ``op`` at the insertion point; give it the current location if it has none."""
        if op.loc is UNKNOWN_LOC:
            op.loc = self.loc
        if self.anchor is None:
            self.block.append(op)
        else:
            self.block.insert(self.block.ops.index(self.anchor), op)
        return op

    def add(self, op: Op) -> Value:
        """Insert a one-result op and return its result."""
        return self.insert(op).result

    @staticmethod
    def insert_before(anchor: Op, op: Op) -> Op:
        block = anchor.parent
        return block.insert(block.ops.index(anchor), op)

    @staticmethod
    def insert_after(anchor: Op, op: Op) -> Op:
        block = anchor.parent
        return block.insert(block.ops.index(anchor) + 1, op)

    # ------------------------------------------------------------------ replacing and erasing
    @staticmethod
    def replace_all_uses(old: Value, new: Value) -> None:
        old.replace_all_uses_with(new)

    @classmethod
    def replace_op(cls, op: Op, new: list[Value] | Op) -> None:
        """Make the uses of ``op``'s results uses of ``new`` (values, or an op's results); erase ``op``."""
        values = new.results if isinstance(new, Op) else new
        if len(values) != len(op.results):
            raise ValueError(f"{op.name} has {len(op.results)} results, replaced by {len(values)} values")
        for old, value in zip(op.results, values):
            old.replace_all_uses_with(value)
        cls.erase(op)

    @staticmethod
    def erase(op: Op) -> None:
        """Remove ``op`` (and what its regions hold) from the IR; its results must be unused."""
        inside = set(op.walk()) if op.regions else (op,)  # a use from within the op itself goes with it
        for r in op.results:
            for user in r.users:
                if user not in inside:
                    raise ValueError(f"cannot erase {op.name} at {op.loc}: its result is used by {user.name}")
        op.drop_references()
        if op.parent is not None:
            op.parent.remove(op)

    # ------------------------------------------------------------------ moving
    @staticmethod
    def move_before(op: Op, anchor: Op) -> None:
        """Move ``op`` (the same op: its uid and uses stay) just before ``anchor``."""
        op.parent.remove(op)
        Rewriter.insert_before(anchor, op)

    @staticmethod
    def move_after(op: Op, anchor: Op) -> None:
        op.parent.remove(op)
        Rewriter.insert_after(anchor, op)

    @staticmethod
    def move_to_end(op: Op, block: Block) -> None:
        op.parent.remove(op)
        block.append(op)

    @staticmethod
    def inline_block_before(block: Block, anchor: Op) -> list[Value]:
        """Move ``block``'s ops but its terminator before ``anchor``; the terminator's operands."""
        term = block.terminator
        for op in [op for op in block.ops if op is not term]:
            Rewriter.move_before(op, anchor)
        return list(term.operands) if term is not None else []

    # ------------------------------------------------------------------ cloning
    @staticmethod
    def clone(op: Op, mapping: dict[Value, Value] | None = None) -> Op:
        """A deep copy of ``op``, not inserted: operands through ``mapping``; new results (and
        block arguments) are added to it. The copy and everything in it get new uids."""
        mapping = {} if mapping is None else mapping
        regions = [Region([_clone_block(b, mapping) for b in r.blocks]) for r in op.regions]
        new = type(op).create(
            [mapping.get(v, v) for v in op.operands],
            [r.type for r in op.results],
            op.clone_attrs(),
            regions,
            op.loc,
        )
        for old, res in zip(op.results, new.results):
            res.name_hint = old.name_hint
            mapping[old] = res
        return new

    # ------------------------------------------------------------------ navigation
    @staticmethod
    def ancestor(op: Op, cls: type[Op]) -> Op | None:
        """The closest op of class ``cls`` enclosing ``op``."""
        return op.ancestor(cls)


def _clone_block(block: Block, mapping: dict[Value, Value]) -> Block:
    new = Block([a.type for a in block.args], [a.name_hint for a in block.args])
    mapping.update(zip(block.args, new.args))
    for op in block.ops:
        new.append(Rewriter.clone(op, mapping))
    return new


#: the frontend's name for it: a rewriter used only to insert
Builder = Rewriter
