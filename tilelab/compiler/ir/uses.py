"""Use-lists: every value knows the ops that use it, kept up to date by the IR itself.

An op's operands live in an ``OperandList``: a list that records, on the value, each
slot that holds it. Setting, inserting, appending or removing an operand updates the
values' use-lists; erasing an op drops its uses (``drop_references``). Passes then ask
``value.users`` or ``value.has_uses()`` in constant time instead of walking the function,
and ``value.replace_all_uses_with(new)`` visits only the ops that use ``value`` (MLIR's
use-lists, kept as a count per using op)::

    add = BinaryOp("add", x, x)
    x.users            # [add]
    x.num_uses         # 2: both operand slots
    add.operands[1] = y
    x.num_uses, y.users  # (1, [add])

The verifier's ``check_uses`` recomputes every use-list by walking the IR and compares.
"""

from __future__ import annotations

from typing import NamedTuple


class Use(NamedTuple):
    """One operand slot: ``op.operands[index]`` holds the value."""

    op: object
    index: int


def add_use(value, op) -> None:
    users = value._users
    users[op] = users.get(op, 0) + 1


def drop_use(value, op) -> None:
    users = value._users
    n = users[op] - 1
    if n:
        users[op] = n
    else:
        del users[op]


class OperandList(list):
    """An op's operands: a list whose every change updates the values' use-lists.

    Reads are a plain list's; slices and copies are plain lists (they own no uses).
    """

    __slots__ = ("owner",)

    @classmethod
    def of(cls, owner, values) -> OperandList:
        """``owner``'s operand list holding ``values``, recorded in their use-lists."""
        ops = cls(values)  # list's own constructor: every op built pays this
        ops.owner = owner
        for v in ops:
            users = v._users
            users[owner] = users.get(owner, 0) + 1
        return ops

    def release(self) -> list:
        """Drop every use this list holds; return its values as a plain list (for a dead op)."""
        for v in self:
            drop_use(v, self.owner)
        values = list(self)
        list.clear(self)
        return values

    def __setitem__(self, index, value):
        if isinstance(index, slice):
            old, value = list.__getitem__(self, index), list(value)
            list.__setitem__(self, index, value)
        else:
            old, value = [list.__getitem__(self, index)], [value]
            list.__setitem__(self, index, value[0])
        for v in old:
            drop_use(v, self.owner)
        for v in value:
            add_use(v, self.owner)

    def __delitem__(self, index):
        old = list.__getitem__(self, index)
        list.__delitem__(self, index)
        for v in old if isinstance(index, slice) else [old]:
            drop_use(v, self.owner)

    def append(self, value) -> None:
        list.append(self, value)
        add_use(value, self.owner)

    def insert(self, index, value) -> None:
        list.insert(self, index, value)
        add_use(value, self.owner)

    def extend(self, values) -> None:
        values = list(values)
        list.extend(self, values)
        for v in values:
            add_use(v, self.owner)

    def __iadd__(self, values):
        self.extend(values)
        return self

    def pop(self, index=-1):
        value = list.pop(self, index)
        drop_use(value, self.owner)
        return value

    def remove(self, value) -> None:
        list.remove(self, value)
        drop_use(value, self.owner)

    def clear(self) -> None:
        self.release()

    def __imul__(self, n):
        raise TypeError("operands cannot be repeated in place")
