"""Axis info: what the compiler knows about the integers (and pointers) of a tile, per dimension.

Vectorized memory access needs facts about addresses that hold for *every*
program instance. Per value and per dimension the analysis keeps three numbers:

* **contiguity** ``c``: the dim splits into runs of ``c`` elements that are
  consecutive integers (``x, x+1, ..., x+c-1``);
* **divisibility** ``d``: the largest power of two known to divide the first
  element of every such run (every element, when ``c == 1``). For pointers it is
  in *bytes*, as in Triton: a 16-byte-aligned ``*f32`` argument has ``d = 16``;
* **constancy** ``k``: the dim splits into runs of ``k`` equal elements;

plus the value itself when it is a known integer constant. Example, with ``x``
a 16-byte aligned ``*f32`` argument::

    offs = pid * 1024 + tl.arange(0, 1024)   # contiguity 1024, divisibility 1024
    ptrs = x + offs                          # contiguity 1024, divisibility 16 bytes
    # -> a thread may load 16 / 4 = 4 floats at once (see memory_access.vector_width)

The rules follow Triton's AxisInfo analysis: each op has a small transfer
function (``@rule(OpClass)``), values the analysis knows nothing about (loads,
program ids) get the pessimistic ``unknown`` (1, 1, 1), and loop-carried values
take the meet of their initial and yielded facts until nothing changes.
Offsets are assumed non-negative (as in Triton).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tilelab._registry import Registry

from ..ir.core import Block, FuncOp, Module, Op, Value

#: Divisibility of 0 (every power of two divides it), capped to stay printable.
MAX_DIVISIBILITY = 1 << 30


def highest_pow2_divisor(n: int) -> int:
    """The largest power of two dividing ``n`` (``MAX_DIVISIBILITY`` for 0)."""
    n = abs(int(n))
    return MAX_DIVISIBILITY if n == 0 else min(n & -n, MAX_DIVISIBILITY)


@dataclass(frozen=True)
class AxisInfo:
    """Per-dim contiguity, divisibility and constancy of one value (scalars: one dim of 1)."""

    contiguity: tuple[int, ...]
    divisibility: tuple[int, ...]
    constancy: tuple[int, ...]
    constant: int | None = None

    @property
    def rank(self) -> int:
        return len(self.contiguity)

    @staticmethod
    def unknown(shape) -> AxisInfo:
        ones = (1,) * max(1, len(shape))
        return AxisInfo(ones, ones, ones)

    @staticmethod
    def of_constant(value: int, shape) -> AxisInfo:
        """A tile (or scalar) whose every element is ``value``."""
        dims = tuple(shape) or (1,)
        div = highest_pow2_divisor(value)
        return AxisInfo((1,) * len(dims), (div,) * len(dims), dims, int(value))

    def meet(self, other: AxisInfo) -> AxisInfo:
        """What holds for both (a value that may be either): gcd of each fact."""
        const = self.constant if self.constant == other.constant else None
        return AxisInfo(
            _gcds(self.contiguity, other.contiguity),
            _gcds(self.divisibility, other.divisibility),
            _gcds(self.constancy, other.constancy),
            const,
        )

    def __str__(self) -> str:
        text = f"contiguity={list(self.contiguity)}, divisibility={list(self.divisibility)}"
        text += f", constancy={list(self.constancy)}"
        return text + (f", constant={self.constant}" if self.constant is not None else "")


def _gcds(a, b) -> tuple[int, ...]:
    return tuple(math.gcd(x, y) for x, y in zip(a, b))


def _shape(v: Value) -> tuple[int, ...]:
    return tuple(v.type.shape)


class AxisInfoMap:
    """The analysis result: ``info[value]`` (unknown values get the pessimistic facts)."""

    def __init__(self):
        self.facts: dict[Value, AxisInfo] = {}

    def __getitem__(self, v: Value) -> AxisInfo:
        found = self.facts.get(v)
        return found if found is not None else AxisInfo.unknown(_shape(v))

    def __setitem__(self, v: Value, info: AxisInfo) -> None:
        self.facts[v] = info

    def __contains__(self, v: Value) -> bool:
        return v in self.facts


#: op class -> transfer function ``fn(op, info_map) -> AxisInfo | list[AxisInfo]``, registered with
#: ``@rule`` in ``axis_rules.py`` (every rule lives there; other ops take ``_elementwise_or_unknown``)
_RULES = Registry("axis-info rule", __package__, modules=("axis_rules",))
rule = _RULES.register


def analyze(root: Module | FuncOp) -> AxisInfoMap:
    """Axis info of every value of ``root`` (a module's functions, or one function)."""
    result = AxisInfoMap()
    funcs = root.funcs if isinstance(root, Module) else [root]
    for func in funcs:
        _seed_arguments(func, result)
        analyze_block(func.body, result)
    return result


def _seed_arguments(func: FuncOp, result: AxisInfoMap) -> None:
    """Arguments: divisibility from ``arg_divisibility`` (bytes for pointers), else unknown."""
    divs = func.attrs.get("arg_divisibility") or ()
    if isinstance(divs, dict):
        names = func.attrs.get("arg_names") or ()
        divs = [divs.get(n, 1) for n in names]
    for arg, div in zip(func.args, divs):
        if not arg.type.is_tensor:
            result[arg] = AxisInfo((1,), (int(div or 1),), (1,))


def analyze_block(block: Block, result: AxisInfoMap) -> None:
    """Apply the transfer function of every op of ``block``, in order."""
    for op in block.ops:
        fn = _RULES.get(type(op), _elementwise_or_unknown)
        facts = fn(op, result)
        if isinstance(facts, AxisInfo):
            facts = [facts]
        for value, info in zip(op.results, facts or ()):
            result[value] = info


def _elementwise_or_unknown(op: Op, info: AxisInfoMap):
    """Default: a pure op of same-shaped operands keeps the common constancy; the rest is unknown."""
    for region in op.regions:  # combine regions and the like: facts inside, unknown outside
        for block in region.blocks:
            analyze_block(block, info)
    results = []
    for res in op.results:
        shape = _shape(res)
        same = [info[v] for v in op.operands if _shape(v) == shape]
        if op.pure and same and len(same) == len(op.operands) and not op.regions:
            const = same[0].constancy
            for other in same[1:]:
                const = _gcds(const, other.constancy)
            results.append(AxisInfo((1,) * len(const), (1,) * len(const), const))
        else:
            results.append(AxisInfo.unknown(shape))
    return results


__all__ = ["AxisInfo", "AxisInfoMap", "analyze", "analyze_block", "rule", "highest_pow2_divisor"]
