"""Op traits: properties an op class declares once, that passes query instead of listing classes.

A trait is a class used as a tag (never instantiated). An op class lists its traits in
``traits``; a pass asks ``op.has_trait(Elementwise)`` rather than keeping its own tuple of
op classes, so a new op joins every pass that cares by declaring what it is::

    class FmaOp(Op):
        name = "math.fma"
        traits = frozenset({Pure, Elementwise, SameOperandsAndResultType})

    op.has_trait(Elementwise)      # on an op
    Elementwise in FmaOp.traits    # on a class

This is MLIR's op traits (``Pure``, ``Elementwise``, ``Commutative``, ``Terminator``, memory
effects) and xDSL's IRDL traits, kept to the ones tile IR passes need. Some traits also
state an invariant the verifier checks (``SameOperandsAndResultShape``, ``Terminator``).
"""

from __future__ import annotations


class Trait:
    """Base of the trait tags."""


class Pure(Trait):
    """No side effects: removable when unused, hoistable out of loops, merged by CSE."""


class Terminator(Trait):
    """Ends its block (and only the last op of a block may have it)."""


class Elementwise(Trait):
    """Result element ``i`` is computed from operand elements ``i`` alone (scalars broadcast).

    Arithmetic, comparisons, math functions, selects, casts, pointer offsets, hints.
    """


class SameOperandsAndResultShape(Trait):
    """Every tensor operand and result has one shape (checked by the verifier)."""


class SameOperandsAndResultType(Trait):
    """Every operand and the result have one type (checked by the verifier)."""


class SameLayout(Trait):
    """Tensor operands and results share one GPU layout: a layout passes through the op.

    Elementwise ops, and loads, stores, atomics and scans (each thread works on the
    elements it holds, along the same map). The layout passes propagate layouts across it.
    """


class Commutative(Trait):
    """Swapping the two operands gives the same result (``BinaryOp`` has it for some kinds)."""


class ShapeOnly(Trait):
    """Moves, copies or reorders elements without computing new ones (splat, broadcast, trans...)."""


class LayoutFree(Trait):
    """Built from attributes and scalars alone (constant, range, splat): made in any layout for free."""


class Uniform(Trait):
    """Every element of the result is one value (a scalar constant or splat): cheaper to make again than to move."""


class MemoryRead(Trait):
    """Reads memory (global or shared): ordered after the writes it may see."""


class MemoryWrite(Trait):
    """Writes memory (global or shared): ordered before the reads that may see it."""


class SharedMemory(Trait):
    """Touches the program's shared memory (the barrier and allocation passes look for these)."""


class AsyncCopy(Trait):
    """Writes shared memory through an asynchronous copy (``cp.async``, TMA), not a store from registers.

    Its bytes land before a wait; the tensor cores then read them with no proxy fence between
    (only stores from registers need ``fence.proxy.async``: ``hoist-fences``).
    """


class Loop(Trait):
    """Runs its body region repeatedly (``scf.for``, ``scf.while``)."""


__all__ = [
    "Trait",
    "Pure",
    "Terminator",
    "Elementwise",
    "SameOperandsAndResultShape",
    "SameOperandsAndResultType",
    "SameLayout",
    "Commutative",
    "ShapeOnly",
    "LayoutFree",
    "Uniform",
    "MemoryRead",
    "MemoryWrite",
    "SharedMemory",
    "AsyncCopy",
    "Loop",
]
