"""Drop the values a lowered LLVM function computes and never uses, before it is printed.

A backend lowers a tile op for every element a thread (or a CPU lane loop) holds, whether
or not each element is read: a 16-byte load of an ``int8`` tile reads the address of one
element in sixteen, yet the ``+`` that made the pointer tile computed all sixteen. LLVM's
O3 deletes such values in its first pass, but before that the module goes through
``llvmlite``'s printer and LLVM's parser as text, a few microseconds per instruction: in
the 4-warp ``int8`` matmul a quarter of the 5,400 instructions handed to LLVM are dead.

``drop_dead_values(fn)`` deletes, in place, every instruction without side effects whose
result no instruction uses, and then those that only they used::

    before                                  after
      %a = add i32 %x, 1                      %a = add i32 %x, 1
      %b = add i32 %x, 2     ; unused         store i32 %a, ptr %p
      %c = mul i32 %b, 3     ; unused
      store i32 %a, ptr %p

Only value-computing instructions go (arithmetic, comparisons, casts, ``getelementptr``,
``select``, vector and aggregate element moves); calls, loads, stores, ``phi``s and
terminators stay, whatever their uses. O3 would delete the same instructions, so the
optimized IR does not change. A function with an operand of another kind than these (a
wrapper of the lowering's own, a metadata argument, which may name an instruction without
being one) is left as it is.
"""

from __future__ import annotations

from llvmlite import ir
from llvmlite.ir import instructions as ins

#: Instruction classes that only compute their result from their operands.
_PURE_CLASSES = (
    ins.CastInstr,
    ins.CompareInstr,
    ins.ExtractElement,
    ins.ExtractValue,
    ins.GEPInstr,
    ins.InsertElement,
    ins.InsertValue,
    ins.SelectInstr,
    ins.ShuffleVector,
)

#: Opcodes of plain ``ir.Instruction``s (what ``IRBuilder``'s arithmetic methods make) without side
#: effects; integer division and remainder stay, as LLVM keeps them (they may trap).
_PURE_OPCODES = frozenset("add sub mul and or xor shl lshr ashr fadd fsub fmul fdiv frem fneg".split())


def _is_pure(i: ir.Instruction) -> bool:
    if type(i) is ir.Instruction:
        return i.opname in _PURE_OPCODES
    return isinstance(i, _PURE_CLASSES)


#: Operands that are an instruction or name none: any other kind may hide a use.
_PLAIN_OPERANDS = (ir.Instruction, ir.Argument, ir.Constant, ir.GlobalValue, ir.Block, ir.InlineAsm)


def _operands(i: ir.Instruction):
    if isinstance(i, ins.PhiInstr):
        return [value for value, _ in i.incomings]
    return i.operands


def drop_dead_values(fn: ir.Function) -> int:
    """Delete ``fn``'s unused side-effect-free instructions (and those only they used); return how many."""
    uses: dict[ir.Instruction, int] = {}
    for block in fn.blocks:
        for i in block.instructions:
            for op in _operands(i):
                if isinstance(op, ir.Instruction):
                    uses[op] = uses.get(op, 0) + 1
                elif not isinstance(op, _PLAIN_OPERANDS):
                    return 0
    work = [i for block in fn.blocks for i in block.instructions if not uses.get(i) and _is_pure(i)]
    dead: set[ir.Instruction] = set()
    while work:
        i = work.pop()
        if i in dead:
            continue
        dead.add(i)
        for op in i.operands:
            if isinstance(op, ir.Instruction):
                uses[op] -= 1
                if not uses[op] and _is_pure(op):
                    work.append(op)
    if dead:
        for block in fn.blocks:
            block.instructions[:] = [i for i in block.instructions if i not in dead]
    return len(dead)
