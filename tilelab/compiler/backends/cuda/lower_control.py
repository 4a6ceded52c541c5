"""GPU lowering of structured control flow: ``scf.for``, ``scf.if``, ``scf.while`` become LLVM blocks and phis.

A loop-carried tile is one phi per register (the layout pass made the carried
value, the yielded value and the result share one layout). Every thread runs the
same control flow: conditions are scalars, the same in all threads of a program.

    scf.for %i = %lb to %ub step %s iter_args(%acc = %0)
    ->  header: %i = phi [%lb, entry], [%i.next, latch]; %acc.r = phi ... ; br (%i < %ub) body, exit

and, where the loop's accumulator is waited for right after it (a pipelined wgmma loop) and the
compile is asked to (``rotate_waited_loops``: ptxas serialized the wgmmas of the loop as LLVM
rotated it), rotated here:

        entry: br (%lb < %ub) body, end
        body:  %i = phi [%lb, entry], [%i.next, body]; %acc.r = phi ... ; ... br (%i.next < %ub) body, exit
        exit:  wgmma.wait_group 0 (%acc.next.r); br end
        end:   %r = phi [%0.r, entry], [%acc.waited.r, exit]

Registers of 8 and 16 bits cross a loop's back edge packed, two or four to a 32-bit
word (``pack_words``): a GPU register holds 32 bits whatever the value's width, so
a loop carrying a bf16 tile of 16 registers a thread (a load one iteration ahead)
holds 8 words instead of 16 registers. Where the registers came out of loaded words,
LLVM folds the packing away and the loop carries the loaded words themselves.
"""

from __future__ import annotations

from llvmlite import ir

from tilelab.compiler.ir.ops import AssertOp, BarrierOp, ForOp, IfOp, PrintOp, ReturnOp, WarpGroupDotWaitOp, WhileOp

from .context import GTile, lower
from .debug import emit_assert, emit_print
from .lower_memory import from_bits, memory_bits, pack, to_bits, unpack


def flatten(values) -> list:
    """The llvmlite values behind lowered values (a tile gives its registers)."""
    out = []
    for v in values:
        out += v.regs if isinstance(v, GTile) else [v]
    return out


def rebuild(like, flat: list) -> list:
    """The inverse of ``flatten``, shaped like the lowered values ``like``."""
    out, i = [], 0
    for v in like:
        if isinstance(v, GTile):
            n = len(v.regs)
            out.append(GTile(v.layout, v.elem, flat[i : i + n]))
            i += n
        else:
            out.append(flat[i])
            i += 1
    return out


def lower_body(lw, block, args) -> list:
    """Lower ``block`` with its arguments bound to ``args``; return its terminator's operands, lowered."""
    for a, v in zip(block.args, args):
        lw.set(a, v)
    for op in block.ops[:-1] if block.terminator is not None else block.ops:
        lw.lower_op(op)
    term = block.terminator
    return [lw.get(v) for v in term.operands] if term is not None else []


def _phis(b, like, incoming, block) -> list:
    flat = flatten(like)
    phis = [b.phi(v.type) for v in flat]
    for phi, v in zip(phis, flatten(incoming)):
        phi.add_incoming(v, block)
    return phis


def _sub_word(v) -> int:
    """The bits of each register of ``v`` when they are 8 or 16 and fill whole 32-bit words, else 0."""
    if not isinstance(v, GTile) or v.elem.is_pointer or v.elem.is_bool:
        return 0
    eb = memory_bits(v.elem)
    return eb if eb in (8, 16) and len(v.regs) % (32 // eb) == 0 else 0


def pack_words(b, values: list) -> list:
    """``flatten(values)``, but a tile of 8- or 16-bit elements as 32-bit words, as it crosses a back edge
    (``lower_memory.pack``: the words a load gave, where the registers are their halves)."""
    out = []
    for v in values:
        eb = _sub_word(v)
        out += pack(b, [to_bits(b, r, v.elem) for r in v.regs], eb, 32) if eb else flatten([v])
    return out


def unpack_words(lw, like: list, words: list) -> list:
    """The inverse of ``pack_words`` (``rebuild`` where nothing was packed): values shaped like ``like``."""
    out, i = [], 0
    for v in like:
        eb = _sub_word(v)
        n = len(v.regs) * eb // 32 if eb else len(flatten([v]))
        if eb:
            regs = [from_bits(lw.b, x, v.elem) for x in unpack(lw, words[i : i + n], eb, 32, len(v.regs))]
            out.append(GTile(v.layout, v.elem, regs))
        else:
            out += rebuild([v], words[i : i + n])
        i += n
    return out


def _bounds(lw, op):
    """``(lb, ub, step, before)`` of an ``scf.for``: ``before(i, ub)`` is true while ``i`` has not reached
    ``ub`` (``>`` for a constant negative step; signed unless the induction variable is unsigned)."""
    b = lw.b
    lb, ub, step = (lw.get(v) for v in op.operands[:3])
    signed = op.operands[0].type.is_signed if not op.operands[0].type.is_pointer else True
    cmp = b.icmp_signed if signed else b.icmp_unsigned
    negative = isinstance(step, ir.Constant) and int(step.constant) < 0
    return lb, ub, step, lambda i, bound: cmp(">" if negative else "<", i, bound)


def _loop_phis(b, lb, packed: list, pre) -> tuple:
    """The induction variable's phi and the carried words' phis, each entered from ``pre`` with its start."""
    iv = b.phi(lb.type)
    iv.add_incoming(lb, pre)
    return iv, _phis(b, packed, packed, pre)


def _iteration(lw, op, iv, step, inits: list, carried: list) -> tuple[list, ir.Value]:
    """One iteration of ``op``'s body from the phis, which get the back edge's values from the block it ends
    in: ``(the yielded words, the next induction value)``."""
    b = lw.b
    words = pack_words(b, lower_body(lw, op.body, [iv, *unpack_words(lw, inits, carried)]))
    latch = b.block
    iv_next = b.add(iv, step)
    iv.add_incoming(iv_next, latch)
    for phi, v in zip(carried, words):
        phi.add_incoming(v, latch)
    return words, iv_next


@lower(ForOp)
def lower_for(lw, op):
    """The loop with its test at the top (as MLIR's lowering writes it; LLVM rotates it), or, where a
    ``warp_group_dot_wait`` of a result follows it and ``lw.rotate_waited_loops`` asks, rotated here
    (``_lower_for_then_wait``: the compile that ptxas told it serialized the wgmmas)."""
    if lw.rotate_waited_loops:  # only the compile asked for it looks for the wait
        ops = op.parent.ops
        after = ops[ops.index(op) + 1] if ops.index(op) + 1 < len(ops) else None
        if isinstance(after, WarpGroupDotWaitOp) and after.operands[0] in op.results:
            _lower_for_then_wait(lw, op, after)
            return
    b = lw.b
    lb, ub, step, before = _bounds(lw, op)
    inits = [lw.get(v) for v in op.init_args]
    packed = pack_words(b, inits)
    pre = b.block
    header = b.append_basic_block("for.header")
    body = b.append_basic_block("for.body")
    exit_ = b.append_basic_block("for.exit")
    b.branch(header)
    b.position_at_end(header)
    iv, carried = _loop_phis(b, lb, packed, pre)
    b.cbranch(before(iv, ub), body, exit_)
    b.position_at_end(body)
    _iteration(lw, op, iv, step, inits, carried)
    b.branch(header)
    b.position_at_end(exit_)
    for r, v in zip(op.results, unpack_words(lw, inits, carried)):
        lw.set(r, v)


def _lower_for_then_wait(lw, op, after) -> None:
    """The loop in the form LLVM would rotate it to (a guard, then a body that tests at its end), with an exit
    block only the loop reaches, and the ``warp_group_dot_wait`` ``after`` it, of one of its results, done there.

    A wait after the loop in the block where the loop's exit and its guard's skip meet has on the skip's path
    the moves that give the results their initial values, into the very registers the loop's wgmmas
    accumulate in (LLVM coalesces them): ptxas then finds non-wgmma writes of accumulator registers inside a
    pipeline stage and serializes every wgmma of the kernel (its message C7515). On the loop's own exit path
    the wait sees only the wgmmas; a loop that never ran has nothing to wait for.
    """
    b = lw.b
    lb, ub, step, before = _bounds(lw, op)
    inits = [lw.get(v) for v in op.init_args]
    packed = pack_words(b, inits)
    pre = b.block
    body = b.append_basic_block("for.body")
    exit_ = b.append_basic_block("for.exit")
    merge = b.append_basic_block("for.end")
    b.cbranch(before(lb, ub), body, merge)
    b.position_at_end(body)
    iv, carried = _loop_phis(b, lb, packed, pre)
    words, iv_next = _iteration(lw, op, iv, step, inits, carried)
    b.cbranch(before(iv_next, ub), body, exit_)
    b.position_at_end(exit_)
    results = unpack_words(lw, inits, words)
    for r, v in zip(op.results, results):
        lw.set(r, v)
    lw.lower_op(after)
    results, inits = results + [lw.get(after.result)], inits + [inits[op.results.index(after.operands[0])]]
    last = b.block
    b.branch(merge)
    b.position_at_end(merge)
    phis = _phis(b, inits, inits, pre)
    for phi, v in zip(phis, flatten(results)):
        phi.add_incoming(v, last)
    merged = rebuild(inits, phis)
    for r, v in zip([*op.results, after.result], merged):
        lw.set(r, v)


@lower(IfOp)
def lower_if(lw, op):
    b = lw.b
    cond = lw.get(op.operands[0])
    then_bb = b.append_basic_block("if.then")
    else_bb = b.append_basic_block("if.else")
    merge = b.append_basic_block("if.end")
    b.cbranch(cond, then_bb, else_bb)
    ends = []
    for bb, block in ((then_bb, op.then_block), (else_bb, op.else_block)):
        b.position_at_end(bb)
        values = lower_body(lw, block, [])
        ends.append((b.block, values))
        b.branch(merge)
    b.position_at_end(merge)
    if not op.results:
        return
    like = ends[0][1]
    phis = [b.phi(v.type) for v in flatten(like)]
    for block, values in ends:
        for phi, v in zip(phis, flatten(values)):
            phi.add_incoming(v, block)
    for r, v in zip(op.results, rebuild(like, phis)):
        lw.set(r, v)


@lower(WhileOp)
def lower_while(lw, op):
    b = lw.b
    inits = [lw.get(v) for v in op.operands]
    packed = pack_words(b, inits)
    pre = b.block
    header = b.append_basic_block("while.before")
    after = b.append_basic_block("while.after")
    exit_ = b.append_basic_block("while.exit")
    b.branch(header)
    b.position_at_end(header)
    carried = _phis(b, packed, packed, pre)
    cond, *forwarded = lower_body(lw, op.before, unpack_words(lw, inits, carried))
    b.cbranch(cond, after, exit_)
    b.position_at_end(after)
    yielded = lower_body(lw, op.after, forwarded)
    for phi, v in zip(carried, pack_words(b, yielded)):
        phi.add_incoming(v, b.block)
    b.branch(header)
    b.position_at_end(exit_)
    for r, v in zip(op.results, forwarded):
        lw.set(r, v)


@lower(BarrierOp)
def lower_barrier(lw, op):
    lw.barrier(scratch=False)  # the user's or insert-barriers': it orders every access, and stays


@lower(AssertOp)
def lower_assert(lw, op):
    emit_assert(lw, op)


@lower(PrintOp)
def lower_print(lw, op):
    emit_print(lw, op)


@lower(ReturnOp)
def lower_return(lw, op):
    lw.b.ret_void()
