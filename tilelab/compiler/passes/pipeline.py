"""The ordered pass list of each target: one list, one commented line per pass.

Why one list: it feeds the pass manager, the print-after options and the inspector's
pass list, so what runs and what is shown cannot drift apart. Targets append their own
passes after the common ones::

    from tilelab.compiler.passes.pipeline import PIPELINES, PassManager
    records = PassManager(PIPELINES["cpu"], snapshots=True).run(module)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

from . import (
    accelerate_dot,
    allocate_shared_memory,
    assign_layouts,
    canonicalize,
    coalesce,
    convert_through_shared,
    cse,
    dce,
    inline,
    insert_barriers,
    licm,
    remove_layout_conversions,
)
from .manager import PassManager, PassRecord


@dataclass(frozen=True)
class Pass:
    """A named pass: ``run(module) -> bool`` (changed) and the first line of its docstring."""

    name: str
    run: Callable
    doc: str

    @classmethod
    def of(cls, module: ModuleType) -> Pass:
        """The pass defined by a pass file (its ``NAME``, ``run`` and module docstring)."""
        doc = (module.__doc__ or "").strip().splitlines()
        return cls(module.NAME, module.run, doc[0] if doc else "")


COMMON: list[Pass] = [
    Pass.of(inline),  # calls of @jit helpers become their bodies; helper functions dropped
    Pass.of(canonicalize),  # fold constants, simplify x+0, addptr(p, 0), constant branches
    Pass.of(licm),  # move loop-invariant pure ops before their loop (then CSE merges them with outer ones)
    Pass.of(cse),  # compute each pure value once
    Pass.of(dce),  # drop unused pure ops, unused loads and dead loop-carried values
]

PIPELINES: dict[str, list[Pass]] = {
    # the reference executor: only what makes the IR one function of simple ops
    "interpret": [
        Pass.of(inline),  # the interpreter runs one function
        Pass.of(canonicalize),  # constant branches gone: fewer ops to step through
    ],
    "cpu": [*COMMON],  # the CPU backend appends its passes here
    "cuda": [
        *COMMON,
        Pass.of(assign_layouts),  # every tile gets a layout: which register of which lane/warp holds each element
        Pass.of(coalesce),  # loads/stores get layouts whose threads follow the contiguous dim of their addresses
        Pass.of(remove_layout_conversions),  # drop conversions to the same layout, fold chains of them
        Pass.of(accelerate_dot),  # mma dot operands get their fragment layouts, converted where they are defined
        Pass.of(convert_through_shared),  # conversions that cross threads become local_alloc/store/load (swizzled)
        Pass.of(allocate_shared_memory),  # every shared buffer gets its offset; live ranges apart share bytes
        Pass.of(insert_barriers),  # gpu.barrier where threads race on shared bytes (RAW, WAR, WAW)
    ],
}

__all__ = ["Pass", "PIPELINES", "COMMON", "PassManager", "PassRecord"]
