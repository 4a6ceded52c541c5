"""The ordered pass list of each target: one list, one commented line per pass.

Why one list: it feeds the pass manager, the print-after options and the inspector's
pass list, so what runs and what is shown cannot drift apart. Targets append their own
passes after the common ones. ``run`` is the entry point: it gives the module its
``CompileOptions`` (``module.options``, which the passes read) and runs the list::

    from tilelab.compiler.passes import pipeline
    records = pipeline.run(module, CompileOptions(target="cpu"), snapshots=True)

Why by name: a pass file is imported the first time a target that runs it is asked for,
so compiling for the CPU never imports the GPU passes, the layouts or the analyses they
use (tens of milliseconds of a cold compile). ``PIPELINES`` is a read-only mapping that
builds and keeps each target's list on first access.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType
from typing import NamedTuple

from ..options import CompileOptions
from .manager import PassManager, PassRecord


class Pass(NamedTuple):
    """A named pass: ``run(module) -> bool`` (changed) and the first line of its docstring.

    A named tuple, not a frozen dataclass: as immutable and printed the same way, but a
    dataclass's generated methods cost ~0.8 ms of every process's first compile.
    """

    name: str
    run: Callable
    doc: str

    @classmethod
    def of(cls, module: ModuleType) -> Pass:
        """The pass defined by a pass file (its ``NAME``, ``run`` and module docstring)."""
        doc = (module.__doc__ or "").strip().splitlines()
        return cls(module.NAME, module.run, doc[0] if doc else "")

    @classmethod
    def named(cls, file: str) -> Pass:
        """The pass of the file ``file`` of this package, e.g. ``Pass.named("cse")`` (imports it)."""
        return cls.of(importlib.import_module(f"{__package__}.{file}"))


COMMON: tuple[str, ...] = (
    "inline",  # calls of @jit helpers become their bodies; helper functions dropped
    "canonicalize",  # fold constants, simplify x+0, addptr(p, 0), constant branches
    "licm",  # move loop-invariant pure ops before their loop (then CSE merges them with outer ones)
    "cse",  # compute each pure value once
    "dce",  # drop unused pure ops, unused loads and dead loop-carried values
)

PASS_FILES: dict[str, tuple[str, ...]] = {
    # the reference executor: only what makes the IR one function of simple ops
    "interpret": (
        "inline",  # the interpreter runs one function
        "canonicalize",  # constant branches gone: fewer ops to step through
    ),
    "cpu": (*COMMON,),  # the CPU backend appends its passes here
    "cuda": (
        *COMMON,
        "widen_accumulators",  # a dot accumulating in f16 accumulates in f32 on the tensor cores, rounded after
        "split_tf32x3",  # a tf32x3 dot becomes three tf32 dots (big and small halves of each operand)
        "carry_pointer_bases",  # a pointer tile a loop moves by one step is carried as one scalar base pointer
        "assign_layouts",  # every tile gets a layout: which register of which lane/warp holds each element
        "coalesce",  # loads/stores get layouts whose threads follow the contiguous dim of their addresses
        "remove_layout_conversions",  # drop conversions to the same layout, fold chains of them
        "rematerialize",  # index tiles computed again in the layout a user wants, not moved through shared memory
        "accelerate_dot",  # mma dot operands get their fragment layouts, converted where they are defined
        "remove_layout_conversions",  # again: loop-carried statistics of mma results move to the mma slice
        "tma_stores",  # sm_90: host descriptors' stores go through a swizzled shared buffer and one TMA copy
        "convert_through_shared",  # conversions that cross threads become local_alloc/store/load (swizzled)
        "software_pipeline",  # dot operand loads become cp.async into rings of num_stages shared buffers
        "prefetch_loads",  # a reduction loop's tiles are loaded one iteration ahead, into registers
        "critical_sections",  # a spin-locked section issues its loads together, before the math that waits for them
        "hoist_fences",  # a proxy fence leaves a loop that stores nothing to shared memory from registers
        "allocate_shared_memory",  # every shared buffer gets its offset; live ranges apart share bytes
        "insert_barriers",  # gpu.barrier where threads race on shared bytes (RAW, WAR, WAW)
    ),
    # AMD gfx942, for inspection: the GPU passes with 64-lane wavefronts; dots stay FMA loops
    # (no mma.sync layouts) and nothing is pipelined through cp.async
    "amd": (
        *COMMON,
        "assign_layouts",  # every tile gets a layout over wavefronts of options.warp_size (64) lanes
        "coalesce",  # loads/stores get layouts whose threads follow the contiguous dim of their addresses
        "remove_layout_conversions",  # drop conversions to the same layout, fold chains of them
        "rematerialize",  # index tiles computed again in the layout a user wants, not moved through shared memory
        "convert_through_shared",  # conversions that cross threads become local_alloc/store/load (in the LDS)
        "allocate_shared_memory",  # every LDS buffer gets its offset; over 64 KiB is an error
        "insert_barriers",  # gpu.barrier (s_barrier) where threads race on LDS bytes
    ),
}


class _Pipelines(Mapping):
    """Target name -> its list of ``Pass``, imported and built on first access, then kept.

    ``PIPELINES["cpu"]`` imports only the common passes; ``PIPELINES["cuda"]`` also the GPU ones.
    Iterating gives the target names without importing anything.
    """

    def __init__(self, files: Mapping[str, tuple[str, ...]]):
        self._files = files
        self._built: dict[str, list[Pass]] = {}

    def __getitem__(self, target: str) -> list[Pass]:
        if target not in self._built:
            self._built[target] = [Pass.named(file) for file in self._files[target]]
        return self._built[target]

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)

    def __repr__(self) -> str:
        return f"PIPELINES({', '.join(self._files)})"


PIPELINES: Mapping[str, list[Pass]] = _Pipelines(PASS_FILES)


def run(module, options: CompileOptions, pipeline: str | None = None, snapshots: bool = False) -> list[PassRecord]:
    """Run a pipeline over ``module`` in place with ``options``; return one ``PassRecord`` per pass.

    ``module.options`` is ``options`` from here on (the passes and the backends read it: a pass
    keeps the signature ``run(module) -> bool``). ``pipeline`` names the list to run: by default
    the one of ``options.target`` (``cuda:sm_80`` runs ``cuda``'s).
    """
    module.options = options
    passes = PIPELINES[pipeline or options.target.partition(":")[0]]
    return PassManager(passes, snapshots=snapshots).run(module)


__all__ = ["Pass", "PIPELINES", "PASS_FILES", "COMMON", "PassManager", "PassRecord", "run"]
