"""Insert a barrier wherever threads could race on shared memory (membar).

Why: the threads of a program read bytes of a shared buffer that other threads wrote,
so a ``local_load`` after a ``local_store`` to the same bytes needs every thread past
the store first (read after write), and a store over bytes an earlier ``local_load``
read must wait until every thread has read them (write after read; also after write).
Accesses to disjoint bytes need nothing. The pass walks the kernel in program order
with the byte ranges read and written since the last barrier; a loop body is walked
again with what its end leaves pending (the next iteration), until no barrier is added;
the two arms of an ``if`` each start from the state before it and merge after it.

Rings: an ``async_copy_global_to_local`` writes its buffer (the copy lands before the
``async_wait`` that precedes the next barrier). Accesses through stages of one ring
(``ttg.memdesc_index``) stand for the whole ring's bytes but never conflict with each other:
the software pipeliner copies into one stage while loads read another, and places the one
barrier per iteration that orders them itself. Against any other buffer (one that reuses
the ring's bytes after the loop, say) they race as usual.

before:
    tt.func @k(%x: !ptr<f32>) {
      %0 = arith.constant {value = 1.0} : tensor<64xf32>
      %1 = ttg.local_alloc {offset = 0} : tensor<64xf32>
      %2 = ttg.local_alloc {offset = 256} : tensor<64xf32>
      ttg.local_store %1, %0 : tensor<64xf32>
      ttg.local_store %2, %0 : tensor<64xf32>
      %3 = ttg.local_load %1 : tensor<64xf32>
      %4 = ttg.local_load %2 : tensor<64xf32>
      ttg.local_store %1, %3 : tensor<64xf32>
      tt.return
    }

after:
    tt.func @k(%x: !ptr<f32>) {
      %0 = arith.constant {value = 1.0} : tensor<64xf32>
      %1 = ttg.local_alloc {offset = 0} : tensor<64xf32>
      %2 = ttg.local_alloc {offset = 256} : tensor<64xf32>
      ttg.local_store %1, %0 : tensor<64xf32>
      ttg.local_store %2, %0 : tensor<64xf32>
      gpu.barrier
      %3 = ttg.local_load %1 : tensor<64xf32>
      %4 = ttg.local_load %2 : tensor<64xf32>
      gpu.barrier
      ttg.local_store %1, %3 : tensor<64xf32>
      tt.return
    }
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tilelab.compiler.ir.core import Block, Module, Op
from tilelab.compiler.ir.ops import (
    BarrierOp,
    IfOp,
    LocalAllocOp,
    MemDescIndexOp,
)
from tilelab.compiler.ir.ops.gpu import shared_reads
from tilelab.compiler.ir.rewriter import Rewriter
from tilelab.compiler.ir.traits import Loop, MemoryWrite, SharedMemory

NAME = "insert-barriers"
_EVERYTHING = (0, 1 << 62, None)


@dataclass
class Pending:
    """Byte ranges ``(lo, hi, ring)`` (bytes ``[lo, hi)``) read and written since the last barrier."""

    reads: set = field(default_factory=set)
    writes: set = field(default_factory=set)

    def union(self, other: Pending) -> Pending:
        return Pending(self.reads | other.reads, self.writes | other.writes)


def byte_range(buf) -> tuple[int, int, object]:
    """``(lo, hi, ring)``: the bytes of the buffer ``buf`` (all of shared memory while it has no offset yet).

    ``ring`` is the ring's allocation when ``buf`` is a stage of one (its bytes: the whole ring), else None.
    """
    alloc = buf.defining_op
    ring = None
    if isinstance(alloc, MemDescIndexOp):
        alloc = ring = alloc.ring.defining_op
    if not isinstance(alloc, LocalAllocOp) or alloc.attrs.get("offset") is None:
        return _EVERYTHING
    return alloc.attrs["offset"], alloc.attrs["offset"] + alloc.nbytes, ring


def _overlaps(r: tuple, ranges: set) -> bool:
    return any(lo < r[1] and r[0] < hi and (ring is None or ring is not r[2]) for lo, hi, ring in ranges)


def _access(op: Op, state: Pending) -> tuple[bool, Pending]:
    """Whether ``op`` needs a barrier before it, and the pending state after it."""
    if isinstance(op, BarrierOp):
        return False, Pending()
    if op.has_trait(SharedMemory) and op.has_trait(MemoryWrite):  # local_store, async copy
        r = byte_range(op.operands[0])
        hazard = _overlaps(r, state.reads | state.writes)
        state = Pending() if hazard else state
        return hazard, Pending(state.reads, state.writes | {r})
    reads = {byte_range(buf) for buf in shared_reads(op)}  # local_load, warp_group_dot
    if reads:
        hazard = any(_overlaps(r, state.writes) for r in reads)
        state = Pending() if hazard else state
        return hazard, Pending(state.reads | reads, state.writes)
    return False, state


def _block(block: Block, state: Pending) -> tuple[Pending, bool]:
    """Insert barriers into ``block`` entered with ``state``; the state at its end, and whether it changed."""
    changed = False
    for op in list(block.ops):
        if op.has_trait(Loop):
            state, c = _loop(op, state)
            changed |= c
        elif isinstance(op, IfOp):
            then, c1 = _block(op.then_block, state)
            other, c2 = _block(op.else_block, state)
            state, changed = then.union(other), changed | c1 | c2
        else:
            needs, state = _access(op, state)
            if needs:
                Rewriter.insert_before(op, BarrierOp(loc=op.loc))
                changed = True
    return state, changed


def _loop(op: Op, state: Pending) -> tuple[Pending, bool]:
    """Walk the loop's regions until the state entering an iteration stops growing."""
    changed, entry = False, state
    while True:
        end = entry
        for region in op.regions:
            end, c = _block(region.block, end)
            changed |= c
        grown = entry.union(end)
        if grown == entry:
            return grown, changed
        entry = grown


def run(module: Module) -> bool:
    changed = False
    for func in module.funcs:
        changed |= _block(func.body, Pending())[1]
    return changed
