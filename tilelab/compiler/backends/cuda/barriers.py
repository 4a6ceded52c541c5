"""Drop a scratch ``bar.sync`` with no shared-memory access between it and the barrier before or after it.

Every op that moves data through the shared scratch buffer (a reduction across warps, a
scan, a layout conversion) brackets its accesses with barriers: one before its stores
(earlier readers of the buffer are done), one between its stores and its loads, one after
its loads. Two such ops in a row, ``tl.max`` then ``tl.sum`` of a softmax row, leave the
first one's last barrier and the second one's first with no shared access between them:
every thread passed the first before it reached the second, so the second orders nothing
more; nor does a first one that no shared access precedes since the kernel began. The
facts flow along the control flow: a loop whose body ends with such a barrier starts its
next trip clean, a store under ``if`` leaves the join dirty. Barriers of ``gpu.barrier`` ops (``tl.debug_barrier``,
``insert-barriers``) order every access and always stay::

    bar.sync 0; ld.shared ...; bar.sync 0; max.f32 ...; ex2 ...; bar.sync 0; st.shared ...
    ->  bar.sync 0; ld.shared ...; bar.sync 0; max.f32 ...; ex2 ...; st.shared ...

The same holds looking forward: a barrier after which no shared access comes before the next
barrier or the kernel's end orders nothing (the last reduction of an RMSNorm row, read by every
thread, then only global stores). The backward pass runs on what the forward one left, so the
two never drop both barriers of a pair on each other's account::

    st.shared ...; bar.sync 0; ld.shared ...; bar.sync 0; mul.f32 ...; st.global ...; ret
    ->  st.shared ...; bar.sync 0; ld.shared ...; mul.f32 ...; st.global ...; ret
"""

from __future__ import annotations

import re

from llvmlite import ir

BARRIER = "llvm.nvvm.barrier0"
GLOBAL = 1  # the global address space

#: intrinsics and library functions that touch no memory
_PURE_PREFIXES = ("llvm.nvvm.read.ptx.sreg.", "llvm.nvvm.shfl.sync.", "llvm.nvvm.ex2.approx.", "__nv_")
_PURE_PREFIXES += tuple(f"llvm.{name}." for name in ("fma", "fabs", "minnum", "maxnum", "sqrt", "copysign", "smax"))
_PURE_PREFIXES += tuple(f"llvm.{name}." for name in ("smin", "umax", "umin", "abs", "ctlz", "cttz", "ctpop"))
#: PTX that may touch shared memory: an access with no ``.global`` among its qualifiers (which may come after
#: others: ``atom.acq_rel.gpu.global.cas``), and the shared-only instructions
_SHARED_ASM = re.compile(
    r"\b(ld|st|atom|red)(?![\w:.]*\.global\b)\.|ldmatrix|stmatrix|cp\.async|wgmma|mbarrier|fence|bar\."
)


def _callee_name(instr: ir.CallInstr) -> str | None:
    callee = instr.callee
    return callee.name if isinstance(callee, ir.Function) else None


def _pointer_space(ptr) -> int:
    return getattr(ptr.type, "addrspace", 0)


def _may_touch_shared(instr) -> bool:
    if isinstance(instr, ir.LoadInstr):
        return _pointer_space(instr.operands[0]) != GLOBAL
    if isinstance(instr, ir.StoreInstr):
        return _pointer_space(instr.operands[1]) != GLOBAL
    if isinstance(instr, (ir.AtomicRMW, ir.CmpXchg)):
        return _pointer_space(instr.operands[0]) != GLOBAL
    if not isinstance(instr, ir.CallInstr):
        return False
    if isinstance(instr.callee, ir.InlineAsm):
        return bool(_SHARED_ASM.search(instr.callee.asm))
    name = _callee_name(instr)
    return name is None or not name.startswith(_PURE_PREFIXES)


def _is_barrier(instr) -> bool:
    return isinstance(instr, ir.CallInstr) and _callee_name(instr) == BARRIER


def _successors(block: ir.Block) -> list[ir.Block]:
    term = block.terminator
    return [v for v in (term.operands if term is not None else []) if isinstance(v, ir.Block)]


def _summary(block: ir.Block) -> tuple[bool | None, bool]:
    """``(after_last, touched)``: whether no shared access follows the block's last barrier (None: it has
    none), and whether the block touches shared memory at all. The fixpoint below reads these, not the block."""
    after_last, touched = None, False
    for instr in block.instructions:
        if _is_barrier(instr):
            after_last = True
        elif _may_touch_shared(instr):
            touched = True
            after_last = False if after_last is not None else None
    return after_last, touched


def _clean_at_end(summary: tuple[bool | None, bool], clean: bool) -> bool:
    """Whether no shared access follows the last barrier of a block (or its start, when ``clean``)."""
    after_last, touched = summary
    return after_last if after_last is not None else clean and not touched


def _clean_at_start(fn: ir.Function, first: ir.Block) -> dict:
    """Per block, whether on every path into it no shared access followed the last barrier (a must-analysis:
    every block starts optimistic and the facts only fall until they hold)."""
    preds: dict = {block: [] for block in fn.blocks}
    for block in fn.blocks:
        for succ in _successors(block):
            preds[succ].append(block)
    summaries = {block: _summary(block) for block in fn.blocks}
    entry = fn.blocks[0]
    start = {block: True for block in fn.blocks}
    end = {block: True for block in fn.blocks}
    changed = True
    while changed:
        changed = False
        for block in fn.blocks:
            if block is entry or block is first:
                value = all(end[p] for p in preds[block] if p is not entry) if block is first else True
            else:
                value = bool(preds[block]) and all(end[p] for p in preds[block])
            out = _clean_at_end(summaries[block], value)
            if (value, out) != (start[block], end[block]):
                start[block], end[block], changed = value, out, True
    return start


def _clean_after_end(fn: ir.Function) -> dict:
    """Per block, whether on every path out of it no shared access comes before a barrier or the end
    (the backward twin of ``_clean_at_start``, over the blocks' first barriers)."""
    firsts = {}
    for block in fn.blocks:
        before_first, touched = None, False
        for instr in block.instructions:
            if _is_barrier(instr):
                before_first = not touched
                break
            touched = touched or _may_touch_shared(instr)
        firsts[block] = (before_first, touched)
    end = {block: True for block in fn.blocks}
    changed = True
    while changed:
        changed = False
        for block in fn.blocks:
            value = all(_clean_at_end(firsts[succ], end[succ]) for succ in _successors(block))
            if value != end[block]:
                end[block], changed = value, True
    return end


def _drop(blocks, clean_at: dict, scratch: set, backward: bool) -> set:
    """Drop the ``scratch`` barriers met while clean, walking each block from the side ``clean_at`` tells."""
    dropped = set()
    for block in blocks:
        clean = clean_at[block]
        instructions = list(block.instructions)
        for instr in reversed(instructions) if backward else instructions:
            if _is_barrier(instr):
                if clean and instr in scratch:
                    block.instructions.remove(instr)
                    dropped.add(instr)
                clean = True
            elif _may_touch_shared(instr):
                clean = False
    return dropped


def drop_redundant_barriers(fn: ir.Function, first: ir.Block, scratch: set) -> int:
    """Remove the ``scratch`` barriers of ``fn`` with no shared access since the previous barrier on any
    path, then, of those left, the ones with none before the next barrier (or the end) on any path.

    ``first`` is the block the kernel's body starts in (the entry block before it only computes
    thread indices). Returns how many barriers went.
    """
    if not scratch:
        return 0
    holding = [block for block in fn.blocks if any(instr.parent is block for instr in scratch)]
    leading = _drop(holding, _clean_at_start(fn, first), scratch, backward=False)
    trailing = _drop(holding, _clean_after_end(fn), scratch - leading, backward=True)
    return len(leading) + len(trailing)
