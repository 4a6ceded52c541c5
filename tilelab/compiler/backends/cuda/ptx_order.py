"""Straight-line PTX put in the order that keeps fewer values live: each store's chain before the next store's.

The lowering writes a tile op as one instruction per element, all of them before the next op's
(LLVM's NVPTX code generator keeps that order, and so, mostly, does ptxas). A long elementwise
chain over a thread's elements therefore keeps every element's intermediate values live at once:
``tl.rand`` over 16 elements a thread is ten Philox rounds of four words each, and round-major
order holds the 64 words of all 16 elements between rounds (ptxas: 79 registers for a 4096-wide
row at 8 warps, where the same values computed one store's elements at a time need 32). This pass
reorders the instructions of each basic block, keeping every dependence, so that the operand
chain of each side effect (a store, a shuffle, a barrier...) comes right before it, the chains of
``group`` consecutive stores of the same kind interleaved (enough independent work for the
scheduler, not all of it at once)::

    before:  add.s32     %r11, %r1, 1;
             add.s32     %r12, %r1, 2;
             mul.hi.u32  %r20, %r1, -766435501;
             mul.hi.u32  %r21, %r11, -766435501;
             mul.hi.u32  %r22, %r12, -766435501;
             xor.b32     %r30, %r20, %r2;
             xor.b32     %r31, %r21, %r2;
             xor.b32     %r32, %r22, %r2;
             st.global.b32  [%rd1], %r30;
             st.global.b32  [%rd1+4], %r31;
             st.global.b32  [%rd1+8], %r32;
    after:   mul.hi.u32  %r20, %r1, -766435501;
             xor.b32     %r30, %r20, %r2;
             st.global.b32  [%rd1], %r30;
             add.s32     %r11, %r1, 1;
             mul.hi.u32  %r21, %r11, -766435501;
             xor.b32     %r31, %r21, %r2;
             st.global.b32  [%rd1+4], %r31;
             add.s32     %r12, %r1, 2;
             mul.hi.u32  %r22, %r12, -766435501;
             xor.b32     %r32, %r22, %r2;
             st.global.b32  [%rd1+8], %r32;

(with ``group=1``). Every instruction that touches memory or other threads, or whose meaning is not
known here, keeps its place relative to the others of its kind; a pure instruction moves only after
the instructions that define its operands, and before any that redefine its result or read what
it overwrites. Loads may stay where they were, ahead of the arithmetic that uses them (their latency
is what the early issue hides), or each move to where its value is first needed: never past a side
effect that may write what it reads (a store to its state space, an atomic, a barrier), and in one
of the orders never past any side effect (``LOADS``). A block is reordered only where the count of
live values (32-bit words) drops; of the original PTX and its reorderings, ptxas, which moves
instructions too, keeps the one it gives the fewest registers (``assemble_in_better_order``): where
the loads go changes the count little and ptxas's result much. Short blocks keep their order, and so
do blocks that feed the tensor cores (``mma``, ``wgmma``, ``ldmatrix``, asynchronous copies): their
order is the software pipeline's, and ``wgmma``'s accumulator registers are read and written
asynchronously, between the ``wgmma.fence`` before it and the ``wgmma.wait_group`` after it, which no
register dependence shows. Each moved instruction keeps its source line (a ``.loc`` is written again
where the line changes).
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

from .occupancy import arch_number, estimate_occupancy

#: chains of this many consecutive stores (or other side effects of one opcode) are interleaved
GROUP = 2
#: where loads may go: where they are; anywhere between the side effects before and after them; anywhere
#: between the side effects that may write what they read (a shuffle does not, nor a store to another space)
LOADS = ("in place", "between side effects", "between writes")
#: blocks shorter than this are left as they are
MIN_BLOCK = 24

#: instructions whose result depends only on their operands (by the opcode's first word)
_PURE = frozenset(
    "add sub mul mad mad24 mul24 fma xor and or not cnot lop3 shl shr shf cvt cvta setp selp slct set mov neg abs "
    "min max ex2 lg2 rcp rsqrt sqrt div rem sin cos tanh prmt bfe bfi bfind popc clz brev testp copysign fns "
    "sad dp4a dp2a".split()
)
#: special registers that change while a kernel runs (reading them is not pure)
_VOLATILE_SREG = re.compile(r"%(clock|globaltimer|pm\d|smid|warpid|nsmid|lanemask)")
#: virtual registers (``%r12``, ``%rd3``, ``%p1``...), not special ones (``%tid.x``, ``%clock64``, ``%pm0``)
_REG = re.compile(r"%(?!pm\d|clock|envreg|globaltimer)[a-z]+\d+\b")
_INSTRUCTION = re.compile(r"^(@!?(%\w+)\s+)?([a-z][\w.:]*)\s*(.*?);\s*$")
#: blocks that feed the tensor cores keep the order their pipelining gave them; ``wgmma``'s accumulators are
#: read and written asynchronously, which no register dependence shows
_KEEP_ORDER = re.compile(r"\b(wgmma|mma|ldmatrix|stmatrix|cp\.async|mbarrier|tensormap)\b")
_LABEL = re.compile(r"^[$\w]+:")
_BRANCH = re.compile(r"^(@!?%\w+\s+)?(bra|ret|exit|trap|brx)\b")


class _Unit:
    """An instruction (or an inline-asm region, kept whole) with the lines before it that belong to it. Its
    opcode, registers and purity are read (``read``) only in blocks that may be reordered."""

    __slots__ = ("lines", "text", "op", "defs", "uses", "pure", "load", "loc")

    def __init__(self, lines, text=None):
        self.lines, self.text = lines, text  # ``text``: the instruction; None for an asm region or a fence
        self.op, self.defs, self.uses, self.pure, self.load = "", [], [], False, None
        self.loc = None  # the ``.loc`` line in force for it

    def read(self) -> bool:
        """Fill in opcode, defs, uses and purity; False if the instruction cannot be read."""
        if self.text is None:
            if any("begin inline asm" in ln for ln in self.lines):
                self.op, self.defs, self.uses, self.pure, self.load = _asm_region(self.lines)
            return True
        parsed = _instruction(self.text)
        if parsed is None:
            return False
        self.op, self.defs, self.uses, self.pure = parsed
        self.load = _load_space(self.op)
        return True

    def mentions(self) -> list[str]:
        """Every register its lines name (what it reads, and more), without reading it as an instruction."""
        return [r for ln in self.lines for r in _REG.findall(ln)]


def _registers(text: str) -> list[str]:
    return _REG.findall(text)


def _instruction(text: str) -> tuple[str, list[str], list[str], bool] | None:
    """``(opcode, defs, uses, pure)`` of one PTX instruction, or None if it cannot be read."""
    m = _INSTRUCTION.match(text)
    if not m:
        return None
    guard, op, rest = m.group(2), m.group(3), m.group(4)
    head = op.split(".")[0]
    if rest.startswith("{"):
        close = rest.index("}")
        defs, uses = _registers(rest[: close + 1]), _registers(rest[close + 1 :])
        if head in ("st", "red", "stmatrix"):
            defs, uses = [], defs + uses
    elif not rest or rest.startswith("[") or head in ("st", "red", "bar", "barrier", "membar", "fence", "bra", "ret",
                                                       "exit", "trap", "prefetch", "cp", "stmatrix"):  # fmt: skip
        defs, uses = [], _registers(rest)
    else:
        first, _, others = rest.partition(",")
        defs, uses = _registers(first), _registers(others)  # ``setp``'s and ``shfl``'s ``%a|%p``: two defs
    pure = head in _PURE and not _VOLATILE_SREG.search(rest)
    if head == "ld" and ".param" in op and "_param_" in rest:
        pure = True  # a kernel parameter (a call's return value, read after the call, is not)
    if guard:
        uses = uses + [guard] + defs  # a guarded write keeps the old value where the guard is false
    if not pure:
        uses = uses + defs  # side effects read what they write (wgmma's accumulators, a predicated load's others)
    return op, defs, uses, pure


def _units(body: list[str]) -> list | None:
    """The body's lines as units, labels and ``{ }`` scopes as ``None`` fences between blocks; None if an
    inline-asm region has no end."""
    out, pending, i, loc = [], [], 0, None

    def add(unit: _Unit) -> None:
        nonlocal loc
        for ln in unit.lines:
            if ln.strip().startswith(".loc"):
                loc = ln.strip()
        unit.loc = loc
        out.append(unit)

    while i < len(body):
        line = body[i]
        s = line.strip()
        if not s or s.startswith((".loc", ".file", "//")) and "inline asm" not in s:
            pending.append(line)
            i += 1
            continue
        if s.startswith("// begin inline asm"):
            j = next((k for k in range(i + 1, len(body)) if body[k].strip().startswith("// end inline asm")), None)
            if j is None:
                return None
            add(_Unit(pending + body[i : j + 1]))
            pending, i = [], j + 1
            continue
        if _LABEL.match(s) or s.startswith(("{", "}", ".")):
            out.append(None)
            add(_Unit(pending + [line]))
            out.append(None)
            pending, i = [], i + 1
            continue
        add(_Unit(pending + [line], s))
        pending, i = [], i + 1
        if _BRANCH.match(s):
            out.append(None)
    if pending:
        add(_Unit(pending))
    return out


def _load_space(op: str) -> str | None:
    """The state space an instruction that only reads memory reads (``""``: generic addresses); None for
    any other instruction, and for volatile or ordered reads."""
    words = op.split(".")
    if words[0] not in ("ld", "ldu") or any(w in _ORDERED for w in words):
        return None
    return next((w.split("::")[0] for w in words if w.split("::")[0] in _SPACES), "")


def _conflict(op: str, space: str) -> bool:
    """Whether a side effect (by opcode) must stay on the same side of a load of ``space``: all but
    register-only ones (shuffles, votes) and stores or atomics to another state space."""
    words = op.split(".")
    if words[0] in _REGISTER_ONLY:
        return False
    if words[0] in ("st", "atom", "red"):
        spaces = {w.split("::")[0] for w in words} & set(_SPACES)
        return not (space and len(spaces) == 1 and space not in spaces)
    return True


#: qualifiers that make a load more than a read of memory
_ORDERED = ("volatile", "acquire", "relaxed", "mmio")
_SPACES = ("global", "shared", "local", "const", "param")
#: side effects that touch registers of other threads, not memory
_REGISTER_ONLY = ("shfl", "vote", "match", "activemask", "redux")


def _asm_region(lines: list[str]) -> tuple[str, list[str], list[str], bool, str | None]:
    """``(opcode, defs, uses, pure, load)`` of an inline-asm region: pure if it is pure instructions without
    scopes, a load (of the state space ``load``) if it is pure instructions and loads, else a side effect."""
    code = [ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith(("//", ".loc", ".file"))]
    parts = [p.strip() + ";" for ln in code for p in ln.split(";") if p.strip()]
    parsed = [_instruction(p) for p in parts]
    if (
        parsed
        and all(p is not None and (p[3] or _load_space(p[0]) is not None) for p in parsed)
        and not any(c.startswith(("{", "}")) for c in code)
    ):
        defs: list[str] = []
        uses: list[str] = []
        for _, written, read, _ in parsed:  # what the region reads before it writes it comes from outside
            uses += [r for r in read if r not in defs]
            defs += written
        spaces = {_load_space(p[0]) for p in parsed if not p[3]}
        if not spaces:
            return parsed[0][0], defs, uses, True, None
        return "ld", defs, uses + defs, False, spaces.pop() if len(spaces) == 1 else ""
    regs = _registers(" ".join(code))
    return "asm", regs, regs, False, None


def _blocks(units: list) -> list[list]:
    blocks, cur = [], []
    for u in units:
        if u is None:
            if cur:
                blocks.append(cur)
            cur = []
        else:
            cur.append(u)
    if cur:
        blocks.append(cur)
    return blocks


def _predecessors(block: list[_Unit], loads: str) -> list[list[int]]:
    """Each unit's must-come-before units: defs of what it reads, readers and writers of what it writes, and
    the side effect before it; loads as ``loads`` says (one of ``LOADS``)."""
    last_def: dict[str, int] = {}
    readers: dict[str, list[int]] = {}
    conflict = _conflict if loads == "between writes" else lambda op, space: True
    effects: list[int] = []  # the side effects so far, loads aside
    pending: list[int] = []  # loads no side effect since has to follow
    preds = []
    for k, u in enumerate(block):
        p = set()
        for r in u.uses:
            if r in last_def:
                p.add(last_def[r])
        for r in u.defs:
            if r in last_def:
                p.add(last_def[r])
            p.update(readers.get(r, ()))
        order = set()  # what memory and the other threads need: side effects in their order, loads among them
        if loads != "in place" and u.load is not None:
            before = next((e for e in reversed(effects) if conflict(block[e].op, u.load)), None)
            if before is not None:
                order.add(before)
            pending.append(k)
        elif not u.pure:
            if effects:
                order.add(effects[-1])
            order.update(q for q in pending if conflict(u.op, block[q].load))
            pending = [q for q in pending if q not in order]
            effects.append(k)
        p.discard(k)
        order -= p
        order.discard(k)
        preds.append(sorted(p) + sorted(order))
        for r in u.uses:
            readers.setdefault(r, []).append(k)
        for r in u.defs:
            last_def[r] = k
            readers[r] = []
    return preds


def _pressure(block: list[_Unit], order: list[int], live_out: set[str]) -> int:
    """The most 32-bit words live at once in ``order``, after each instruction: a value from its def (or the
    block's start, if the block reads it from outside) to its last use in the block (the end, if live out)."""
    last_use: dict[str, int] = {}
    for pos, k in enumerate(order):
        for r in block[k].uses:
            last_use[r] = pos
    defined = {r for u in block for r in u.defs}
    ends: dict[int, int] = {}
    live = 0
    for r, end in last_use.items():
        if r not in defined:
            live += _words(r)
            ends[end] = ends.get(end, 0) + _words(r)
    seen: set[str] = set()
    peak = live
    for pos, k in enumerate(order):
        live -= ends.pop(pos, 0)  # what an instruction last reads, its result may take the place of
        for r in block[k].defs:
            if r in seen:
                continue
            seen.add(r)
            end = len(order) if r in live_out else last_use.get(r, -1)
            if end > pos:
                live += _words(r)
                ends[end] = ends.get(end, 0) + _words(r)
        peak = max(peak, live)
    return peak


def _words(reg: str) -> int:
    """32-bit registers a PTX virtual register takes (``%rd``, ``%fd``: two; predicates: none)."""
    return 2 if reg.startswith(("%rd", "%fd")) else 0 if reg.startswith("%p") else 1


def _schedule(block: list[_Unit], live_out: set[str], group: int, loads: str = "in place") -> list[int]:
    preds = _predecessors(block, loads)
    done: set[int] = set()

    def pull(k: int, acc: list[int]) -> None:  # k's unplaced predecessors, depth first, then k
        stack = [(k, iter(preds[k]))]
        if k in done:
            return
        done.add(k)
        while stack:
            node, it = stack[-1]
            nxt = next((p for p in it if p not in done), None)
            if nxt is None:
                stack.pop()
                acc.append(node)
            else:
                done.add(nxt)
                stack.append((nxt, iter(preds[nxt])))

    n = len(block)
    terminator = n - 1 if block[-1].op and _BRANCH.match(block[-1].op) else None
    effects = [k for k in range(n) if not block[k].pure and not (loads != "in place" and block[k].load is not None)
               and k != terminator]  # fmt: skip
    order: list[int] = []
    i = 0
    while i < len(effects):
        head = effects[i]
        batch = [head]
        stores = block[head].op.startswith(("st.", "red."))
        while (stores and len(batch) < group and i + len(batch) < len(effects)
               and block[effects[i + len(batch)]].op == block[head].op):  # fmt: skip
            batch.append(effects[i + len(batch)])
        chains = []
        for k in batch:
            acc: list[int] = []
            done.add(k)
            for p in preds[k]:
                pull(p, acc)
            chains.append(acc)
        order.extend(_interleave(chains, preds))
        order.extend(batch)
        i += len(batch)
    for k in range(n):
        if k != terminator and any(r in live_out for r in block[k].defs):
            pull(k, order)
    for k in range(n):
        if k != terminator:
            pull(k, order)
    if terminator is not None:
        order.append(terminator)
    return order


def _interleave(chains: list[list[int]], preds: list[list[int]]) -> list[int]:
    """The chains merged a unit of each in turn, a unit waiting while a predecessor in a later position of
    another chain is not yet placed (each chain is in dependence order; the first never waits)."""
    members = {k for c in chains for k in c}
    placed: set[int] = set()
    heads = [0] * len(chains)
    out: list[int] = []
    while len(out) < len(members):
        for c, chain in enumerate(chains):
            if heads[c] < len(chain):
                k = chain[heads[c]]
                if all(p in placed or p not in members for p in preds[k]):
                    out.append(k)
                    placed.add(k)
                    heads[c] += 1
    return out


def _function_body(lines: list[str], start: int) -> int:
    """The index of the ``}`` closing the function whose ``{`` is at ``start``."""
    depth = 0
    for k in range(start, len(lines)):
        s = lines[k].strip()
        if s.startswith("//"):
            continue
        depth += s.count("{") - s.count("}")
        if depth == 0:
            return k
    return -1


def order_for_registers(ptx: str, group: int = GROUP, min_block: int = MIN_BLOCK, loads: str = "in place") -> str:
    """``ptx`` with each long basic block reordered as the module docstring says, where that needs fewer
    live registers, ``loads`` (one of ``LOADS``) kept in place or placed where their values are first needed;
    PTX this pass cannot read whole is returned unchanged."""
    return _orders(ptx, group, min_block, (loads,))[0]


def _orders(ptx: str, group: int, min_block: int, modes: tuple[str, ...]) -> list[str]:
    """``order_for_registers`` of ``ptx`` for each ``loads`` of ``modes``, the PTX read once."""
    lines = ptx.split("\n")
    outs: list[list[str]] = [[] for _ in modes]
    k = 0
    while k < len(lines):
        line = lines[k]
        for out in outs:
            out.append(line)
        if line.strip() == "{" and k > 0:
            end = _function_body(lines, k)
            if end < 0:
                return [ptx for _ in modes]
            for out, body in zip(outs, _reorder_body(lines[k + 1 : end], group, min_block, modes)):
                out.extend(body)
            k = end
            continue
        k += 1
    return ["\n".join(out) for out in outs]


def _reorder_body(body: list[str], group: int, min_block: int, modes: tuple[str, ...]) -> list[list[str]]:
    top = 0
    while top < len(body) and (not body[top].strip() or body[top].strip().startswith((".reg", ".shared", ".local"))):
        top += 1
    decls, rest = body[:top], body[top:]
    units = _units(rest)
    if units is None:
        return [body for _ in modes]
    blocks = _blocks(units)
    # only long blocks away from the tensor cores are read as instructions; in the others, a register
    # named anywhere counts as read there (which can only keep a value live longer in the estimate)
    chosen = [
        len(block) >= min_block
        and not any(_KEEP_ORDER.search(ln) for u in block for ln in u.lines)
        and all(u.read() for u in block)
        for block in blocks
    ]
    used_in: dict[str, set[int]] = {}
    for b, block in enumerate(blocks):
        for u in block:
            for r in u.uses if chosen[b] else u.mentions():
                used_in.setdefault(r, set()).add(b)
    plans = {}  # each chosen block's values live after it, and its pressure in the original order
    for b, block in enumerate(blocks):
        if chosen[b]:
            carried = _read_before_written(block)
            live_out = {r for u in block for r in u.defs if r in carried or used_in.get(r, set()) - {b}}
            plans[b] = live_out, _pressure(block, list(range(len(block))), live_out)
    return [_emit(blocks, plans, decls, group, loads) for loads in modes]


def _emit(blocks: list, plans: dict, decls: list[str], group: int, loads: str) -> list[str]:
    """The body's lines, the blocks of ``plans`` reordered (``loads`` as ``LOADS`` says) where that needs fewer."""
    out, loc = list(decls), None
    for b, block in enumerate(blocks):
        if b in plans:
            live_out, before = plans[b]
            order = _schedule(block, live_out, group, loads)
            if _pressure(block, order, live_out) < before:
                for k in order:  # each instruction with the source line it had
                    if block[k].loc != loc and block[k].loc is not None:
                        out.append("\t" + block[k].loc)
                    out.extend(ln for ln in block[k].lines if not ln.strip().startswith(".loc"))
                    loc = block[k].loc
                continue
        for u in block:
            out.extend(u.lines)
            loc = u.loc
    return out


def _read_before_written(block: list[_Unit]) -> set[str]:
    """Registers ``block`` reads before it writes them (values carried around a loop, or from before it)."""
    written: set[str] = set()
    read_first: set[str] = set()
    for u in block:
        read_first.update(r for r in u.uses if r not in written and r not in u.defs)
        written.update(u.defs)
    return read_first


def assemble_in_better_order(
    ptx: str, assemble, num_warps: int | None = None, shared: int = 0, arch: str = "sm_90"
) -> tuple[str, object]:
    """``(PTX, assemble(PTX))`` of ``ptx`` or of one of its reorderings (``order_for_registers`` with each of
    ``LOADS``), whichever ptxas spills less and, given the program's ``num_warps`` and dynamic ``shared`` bytes, lets
    more warps reside on an SM (without them: gives fewer registers); the earlier on a tie, the original
    first, since registers saved below what changes residency buy nothing and the moved loads may wait
    longer. ``assemble`` (ptxas: a ``CubinResult``) runs on all of them at once. The estimate that picks
    each reordering counts values, not what ptxas makes of them: ptxas moves instructions too, and for some
    kernels (SwiGLU's 64 elements a thread) the original order, so moved, needs fewer registers; where the
    loads go changes the count little and ptxas's result much. When ptxas is missing (the driver assembles
    at load), the original order is kept."""
    candidates, modes = [ptx], ["original"]
    for mode, text in zip(LOADS, _orders(ptx, GROUP, MIN_BLOCK, LOADS)):
        if text not in candidates:
            candidates.append(text)
            modes.append(mode)
    if len(candidates) == 1:
        return ptx, assemble(ptx)
    with ThreadPoolExecutor(len(candidates)) as pool:  # ptxas processes side by side: the wall time of one
        results = list(pool.map(assemble, candidates))
    if any(r.cubin is None for r in results):
        return ptx, results[0]

    def cost(k):
        r = results[k]
        if num_warps is None:
            return (r.spill_stores + r.spill_loads, r.registers, k)
        warps = estimate_occupancy(r.registers, shared + r.shared_static, num_warps, arch_number(arch)).active_warps
        return (r.spill_stores + r.spill_loads, -warps, k)

    best = min(range(len(candidates)), key=cost)
    if best:
        results[best].notes.append(
            f"PTX reordered for registers (loads {modes[best]}): {results[0].registers} -> {results[best].registers}"
        )
    return candidates[best], results[best]


__all__ = ["assemble_in_better_order", "order_for_registers"]
