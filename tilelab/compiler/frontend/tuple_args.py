"""Tuples as kernel arguments: one parameter, an IR argument (or a constant) per element.

A tuple launch argument (``kernel[grid]((x, y), ...)``, as Triton takes them) reaches the compiler
as a ``TupleArg`` constant, its length, plus its elements as ordinary arguments named after the
parameter::

    ptrs = (x, y)  ->  ptrs_0: *f32, ptrs_1: *f32

Each element is specialized like any argument (an int equal to 1 becomes the constant 1, ``None``
a constant ``None``). In the kernel the parameter is a Python tuple of those values: it unpacks
(``x_ptr, y_ptr = ptrs``), indexes with constants (``ptrs[1]``) and has a length.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TupleArg:
    """What a compile fixes of a tuple argument: its length."""

    size: int

    def part_names(self, name: str) -> list[str]:
        """The runtime arguments that carry parameter ``name``, one per element."""
        return [f"{name}_{i}" for i in range(self.size)]
