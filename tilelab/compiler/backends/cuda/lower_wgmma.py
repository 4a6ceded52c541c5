"""GPU lowering of ``ttng.warp_group_dot``: Hopper's ``wgmma.mma_async`` reading A and B from shared memory.

A *warpgroup* (four consecutive warps) multiplies a 64 x K16 slice of A by a K16 x N slice
of B into its 64 x N accumulator registers with one asynchronous instruction. The operands
are not in registers: each is named by a 64-bit *matrix descriptor* (PTX ISA, "Matrix
Descriptor Format"):

    bits  0-13  start address >> 4 (the first byte of the slice, in the shared window)
    bits 16-29  leading-dimension byte offset >> 4 (LBO)
    bits 32-45  stride-dimension byte offset >> 4 (SBO)
    bits 62-63  swizzle mode: 1 = 128B, 2 = 64B, 3 = 32B (0 = none)

and the hardware finds every element from those numbers and the *canonical layouts*:
rows of ``S`` bytes (``S`` the swizzle width) grouped by 8 (the next 8 rows ``SBO`` further),
whose 16-byte chunks are XORed with address bits 7.. (``operand_address`` below spells
it out). A is stored K-major (a row of A holds K); B N-major (``imm-trans-b = 1``), or
K-major (``imm-trans-b = 0``) when it was loaded contiguous along K (``k`` of attention's
``q @ k``, or ``x @ w.T``), so that its buffer is written with 16-byte stores or
``cp.async`` chunks; a row wider than ``S`` is stored as column blocks of one atom each,
``LBO`` apart (``layouts.shared.nvmma_shared``). The tests check, element by element, that these
descriptors address exactly where ``nvmma_shared`` put each operand element.

Only the start field changes at run time (the warpgroup, the ring stage of a pipelined
operand, the instruction's slice), so each descriptor is built as a 32-bit low word (start
and LBO) zero-extended and or-ed with a constant high word (SBO and swizzle mode), never
with a 64-bit add: ``_descriptor`` says which ptxas miscompile this avoids.

The sequence for one dot (the accumulator registers pass through every instruction, and
through the wait, so nothing reads them before the tensor cores are done)::

    wgmma.fence.sync.aligned;
    wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {d0..d63}, descA, descB, p, 1, 1, 0, 1;  // per k16
    wgmma.commit_group.sync.aligned;
    wgmma.wait_group.sync.aligned 0;

A 16-bit A can also come from registers (``WarpGroupDotOp.a_in_registers``: attention's
``p``, converted from the first dot's accumulator without moving): each instruction then
takes four 32-bit registers, pairs of A elements in the ``fragment(16)`` pattern, in place of
A's descriptor (``{a0, a1, a2, a3}, descB, p, 1, 1, transB``: no A transpose operand).

``ttng.fence_async_shared`` becomes ``fence.proxy.async.shared::cta``: the operands were
written by ordinary stores (or ``cp.async``), which the tensor cores' async proxy sees only
after that fence. A barrier orders every thread's bytes before the dot: one found walking back
from it past ops that write no operand buffer (the proxy fence included: Triton emits the same
``bar.sync; fence.proxy.async`` pair), else one emitted here.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from tilelab.compiler.ir.ops import (
    AsyncCopyGlobalToLocalOp,
    AsyncWaitOp,
    BarrierOp,
    ConstantOp,
    FenceAsyncSharedOp,
    LocalStoreOp,
    WarpGroupDotOp,
    WarpGroupDotWaitOp,
)
from tilelab.compiler.layouts import REGISTER, WARP, LinearLayout
from tilelab.compiler.layouts.distributed import wgmma_a_fragment

from ..common.types import F32, I32, I64
from .context import GTile, LoweringBug, const_i32, lower, xor_flat
from .hooks import pair_word
from .lower_memory import to_bits
from .lower_shared import shared_address

SWIZZLE_MODE = {0: 0, 128: 1, 64: 2, 32: 3}


# --------------------------------------------------------------------------- descriptors (pure Python)


@dataclass(frozen=True)
class Descriptor:
    """The fields of a wgmma matrix descriptor, in bytes (``encode`` packs them as the hardware reads them)."""

    start: int
    lbo: int
    sbo: int
    swizzle: int  # 128, 64, 32 (bytes), or 0

    def encode(self) -> int:
        """The 64-bit descriptor.

        >>> hex(Descriptor(start=0x400, lbo=16, sbo=1024, swizzle=128).encode())
        '0x4000004000010040'
        """
        fields = ((self.start & 0x3FFFF) >> 4) | ((self.lbo >> 4) & 0x3FFF) << 16 | ((self.sbo >> 4) & 0x3FFF) << 32
        return fields | SWIZZLE_MODE[self.swizzle] << 62

    @classmethod
    def decode(cls, value: int) -> Descriptor:
        """The fields of a 64-bit descriptor (the inverse of ``encode`` on 16-byte aligned fields)."""
        mode = {v: k for k, v in SWIZZLE_MODE.items()}[value >> 62 & 3]
        return cls((value & 0x3FFF) << 4, (value >> 16 & 0x3FFF) << 4, (value >> 32 & 0x3FFF) << 4, mode)


def swizzle_address(address: int, swizzle: int) -> int:
    """Where the hardware really goes for a canonical ``address``: 16-byte chunk bits XOR bits 7...

    128B swizzle XORs address bits 4-6 with bits 7-9, 64B bits 4-5 with 7-8, 32B bit 4 with 7.

        >>> swizzle_address(128 + 16, 128)   # row 1, chunk 1 -> chunk 0
        128
    """
    if swizzle == 0:
        return address
    mask = swizzle // 16 - 1
    return address ^ ((address >> 7) & mask) << 4


def operand_address(desc: Descriptor, mn_major: bool, elem_bytes: int, mn: int, k: int) -> int:
    """The shared byte a wgmma reads for element ``(mn, k)`` of the operand ``desc`` names (the reference).

    ``mn`` indexes M (for A) or N (for B), ``k`` the instruction's K. K-major: rows of ``S``
    bytes along K, row ``mn`` at ``(mn % 8) * S + (mn // 8) * SBO``. MN-major: rows of ``S``
    bytes along MN, row ``k`` at ``(k % 8) * S + (k // 8) * SBO``, the next ``S / elem_bytes``
    MN elements ``LBO`` further. Then the swizzle (PTX ISA, "Shared Memory Matrix Layout").
    """
    s = desc.swizzle
    if s == 0:
        raise ValueError("only the swizzled canonical layouts are modelled")
    if mn_major:
        width = s // elem_bytes
        canonical = (mn % width) * elem_bytes + (mn // width) * desc.lbo + (k % 8) * s + (k // 8) * desc.sbo
    else:
        canonical = (mn % 8) * s + (mn // 8) * desc.sbo + k * elem_bytes
    return swizzle_address(desc.start + canonical, s)


# --------------------------------------------------------------------------- the plan of one dot


@dataclass
class Operand:
    """A wgmma operand buffer as the descriptors see it: ``rows x cols`` elements stored row-major in atoms.

    ``k_major``: a stored row runs along K (rows are M or N: A, and a B loaded K-contiguous);
    else along M or N (rows are K: a B stored N-major, read with ``imm-trans-b = 1``).
    """

    rows: int
    cols: int
    elem_bytes: int
    swizzle: int
    k_major: bool = True

    @property
    def width(self) -> int:
        """Elements of a row inside one swizzle atom."""
        return self.swizzle // self.elem_bytes

    @property
    def k(self) -> int:
        """The operand's K."""
        return self.cols if self.k_major else self.rows

    def byte_of(self, row: int, col: int) -> int:
        """The canonical (unswizzled) byte offset of stored element ``(row, col)``: column block, row, column."""
        block, within = divmod(col, self.width)
        return block * self.rows * self.swizzle + row * self.swizzle + within * self.elem_bytes

    def at(self, mn: int, k: int) -> int:
        """The canonical byte offset of the operand element with M (or N) index ``mn`` and K index ``k``."""
        return self.byte_of(mn, k) if self.k_major else self.byte_of(k, mn)

    def descriptor(self, start: int) -> Descriptor:
        """Descriptor fields for a slice starting at byte ``start`` (relative to the buffer)."""
        lbo = 16 if self.k_major else self.rows * self.swizzle  # K-major swizzled: unused, 1 by convention
        return Descriptor(start, lbo, 8 * self.swizzle, self.swizzle)


def operand_of(layout: LinearLayout, shape, elem_bytes: int, index: int = 0) -> Operand:
    """The ``Operand`` of A (``index`` 0) or B (1) in an ``#nvmma_shared`` buffer (else a ``LoweringBug``).

    A is stored row-major (K-major); B row-major (N-major) or column-major (K-major).
    """
    p = layout.params
    order = tuple(p.get("order", ()))
    if p.get("kind") != "nvmma_shared" or order not in ((1, 0), (0, 1)) or (index == 0 and order != (1, 0)):
        raise LoweringBug(
            f"a wgmma operand needs a {'row-major ' if index == 0 else ''}#nvmma_shared buffer, not {layout}"
        )
    rows, cols = (int(shape[1]), int(shape[0])) if order == (0, 1) else (int(shape[0]), int(shape[1]))
    return Operand(rows, cols, elem_bytes, int(p["swizzle_bytes"]), k_major=index == 0 or order == (0, 1))


@dataclass
class Instruction:
    """One ``wgmma.mma_async``: its accumulator registers and its A and B slices (byte offsets in warpgroup 0)."""

    regs: list[int]
    a_offset: int
    b_offset: int
    origin: tuple[int, int]  # (row, col) of its accumulator tile, in warpgroup 0
    k0: int  # its first K


def fragment(instr_n: int) -> list[tuple[int, int]]:
    """``(row, col)`` of accumulator register ``i`` of one instruction, for lane 0 of the first warp.

    >>> fragment(16)
    [(0, 0), (0, 1), (8, 0), (8, 1), (0, 8), (0, 9), (8, 8), (8, 9)]
    """
    return [(8 * (i >> 1 & 1), 8 * (i >> 2) + (i & 1)) for i in range(instr_n // 2)]


def plan(acc: LinearLayout, a: Operand, b: Operand, k_step: int = 16) -> list[Instruction]:
    """Every instruction of one dot, K steps of ``k_step`` outermost (see ``fragment`` for the register order)."""
    instr_n = acc.params["instr_shape"][1]
    coords = acc.apply(register=list(range(acc.in_size(REGISTER))), lane=0, warp=0)
    by_coords = {(int(r), int(c)): i for i, (r, c) in enumerate(coords)}
    origins = sorted((r, c) for r, c in by_coords if r % 64 == 0 and c % instr_n == 0)
    out = []
    for k0 in range(0, a.k, k_step):
        for r0, c0 in origins:
            regs = [by_coords[(r0 + dr, c0 + dc)] for dr, dc in fragment(instr_n)]
            out.append(Instruction(regs, a.at(r0, k0), b.at(c0, k0), (r0, c0), k0))
    return out


def warpgroup_offsets(acc: LinearLayout, a: Operand, b: Operand) -> tuple[list[int], list[int]]:
    """Per warp bit, the bytes its warpgroup's slices of A and of B move (0 for the 4 warps of a group)."""
    a_bits, b_bits = [], []
    for bit, (row, col) in enumerate(acc.in_bases(WARP)):
        inside = bit < 2  # warps of one warpgroup share the instruction's operands
        a_bits.append(0 if inside or row == 0 else a.at(row, 0))
        b_bits.append(0 if inside or col == 0 else b.at(col, 0))
    return a_bits, b_bits


# --------------------------------------------------------------------------- lowering


def _start_field(lw, buf, operand: Operand) -> ir.Value:
    """The descriptor's start field (``address >> 4``, 14 bits) of the buffer's first byte, as an i32.

    The swizzle XORs absolute address bits, so a buffer must start on a multiple of its
    repeat (``8 * S`` bytes: 1024 for 128B): its offset is checked here, and the dynamic
    shared memory is declared 1024-byte aligned.
    """
    b = lw.b
    nbytes = buf.bits // 8
    repeat = 8 * operand.swizzle
    if (buf.first * nbytes) % repeat or (buf.dynamic is not None and (buf.stage_elems * nbytes) % repeat):
        raise LoweringBug(f"a wgmma operand buffer must start at a multiple of {repeat} bytes (its swizzle repeat)")
    return b.and_(b.lshr(shared_address(lw, buf), const_i32(4)), const_i32(0x3FFF))


def _descriptor(lw, start: ir.Value, fields: Descriptor) -> ir.Value:
    """The i64 descriptor of a slice whose start field is ``start`` (an i32), with the constant ``fields``.

    Only the low word depends on run-time values: the start field and the LBO above it (no
    carry leaves the word, as a start field is below 2^14). The high word (SBO, swizzle
    mode) is a constant, or-ed in. A 64-bit add of the constant fields computes the same
    value, but ptxas 12.9 and 13.0 (not 13.5) miscompiled it: in the pipelined matmul loop
    (128 x 128 x 32, 8 warps) the SASS took the A descriptor's high word from a register
    that held a shared-memory store address (a wrong SBO and no swizzle: reads far past the
    buffer), and in a 128 x 64 x 64 dot over two stacked warpgroups, from a register never
    written. With a constant high word the SASS materializes it as an immediate.
    """
    b = lw.b
    value = fields.encode()
    low = b.add(start, const_i32(value & 0xFFFFFFFF))
    return b.or_(b.zext(low, I64), ir.Constant(I64, value >> 32 << 32))


#: PTX names of the operand types, and the K of one instruction (32 bytes of each row)
#: operand type -> (its PTX name, one instruction's K): 32 bytes of K per instruction; f32 tiles are read as tf32
WGMMA_TYPES = {
    "f16": ("f16", 16),
    "bf16": ("bf16", 16),
    "fp8e4nv": ("e4m3", 32),
    "fp8e5": ("e5m2", 32),
    "f32": ("tf32", 8),
    "i8": ("s8", 32),  # into s32: exact, and no imm-scale operands
}


def _wgmma(lw, kind: str, instr_n: int, acc_regs, a, desc_b, trans_b: int, use_acc: bool = True) -> list:
    """One ``wgmma.mma_async``; ``trans_b`` is 1 for an N-major B, 0 for a K-major one (A is K-major).

    ``use_acc`` false computes ``A @ B`` alone (the instruction's ``scale-d`` predicate is false):
    the accumulator registers are not read, so a zero accumulator needs none of its zeros written.

    ``a`` is A's descriptor (an i64), or its four packed registers (a list: ``{a0, a1, a2, a3}``,
    which has no A transpose operand). 8- and 32-bit types (tf32) have no transpose operands
    (both operands are K-major).
    """
    n_out = len(acc_regs)
    outs = ", ".join(f"${i}" for i in range(n_out))
    a_regs = a if isinstance(a, list) else [a]
    first = 2 * n_out
    db, scale = first + len(a_regs), first + len(a_regs) + 1
    a_text = "{" + ", ".join(f"${first + i}" for i in range(len(a_regs))) + "}" if len(a_regs) > 1 else f"${first}"
    name, k = WGMMA_TYPES[kind]
    integer = name == "s8"
    transposes = (f", {trans_b}" if len(a_regs) > 1 else f", 0, {trans_b}") if k == 16 else ""
    scales = "" if integer else ", 1, 1"  # the integer form has no imm-scale-a / imm-scale-b
    text = (
        f"{{ .reg .pred p; setp.ne.b32 p, ${scale}, 0; "
        f"wgmma.mma_async.sync.aligned.m64n{instr_n}k{k}.{'s32' if integer else 'f32'}.{name}.{name} "
        f"{{{outs}}}, {a_text}, ${db}, p{scales}{transposes}; }}"
    )
    a_cons = ["r"] * len(a_regs) if len(a_regs) > 1 else ["l"]
    cons = ",".join(["=r" if integer else "=f"] * n_out + [str(i) for i in range(n_out)] + a_cons + ["l", "n"])
    args = [*acc_regs, *a_regs, desc_b, const_i32(int(use_acc))]
    ftype = ir.FunctionType(lw.struct([I32 if integer else F32] * n_out), [a.type for a in args])
    res = lw.b.call(ir.InlineAsm(ftype, text, cons, True), args)
    return [lw.b.extract_value(res, i) for i in range(n_out)]


def _zero_start(lw, op, regs: list) -> tuple[list, set]:
    """``regs``, or undefined registers when ``op``'s accumulator is a zero constant, and the registers read so far.

    A zero accumulator (``qk = tl.dot(q, k)``) is not materialized: the first instruction writing
    each register starts with ``scale-d`` false (``_wgmma``'s ``use_acc``) and reads none, as in
    Triton; before, its zeros were written in every iteration of an attention loop (16 ``CS2R``).
    """
    acc = op.acc.defining_op
    if isinstance(acc, ConstantOp) and acc.value == 0:
        return [ir.Constant(r.type, ir.Undefined) for r in regs], set()
    return regs, set(range(len(regs)))


def _fence(lw, regs: list) -> list:
    """``wgmma.fence``, the accumulator registers (and A's, when in registers) tied through it.

    PTX requires the fence *after* every write of the accumulator and A registers by other
    instructions; passing them through it keeps the compiler from materializing them
    (the moves of a zero accumulator, the packing of A, say) between the fence and the
    first wgmma.
    """
    return _tied(lw, "wgmma.fence.sync.aligned;", regs)


def _wait(lw, regs: list, pendings: int = 0) -> list:
    """``wgmma.commit_group`` + ``wait_group pendings``, the registers tied through it.

    With A in registers they are tied too: the tensor cores read them until the wait, so
    nothing may reuse them before it.
    """
    return _tied(lw, f"wgmma.commit_group.sync.aligned; wgmma.wait_group.sync.aligned {pendings};", regs)


def _tied(lw, text: str, regs: list) -> list:
    """Run ``text`` with ``regs`` as in-out operands (f32 or i32; each output in its input's register)."""
    n = len(regs)
    letters = ["r" if r.type == I32 else "f" for r in regs]
    cons = ",".join([f"={c}" for c in letters] + [str(i) for i in range(n)]) + ",~{memory}"
    ftype = ir.FunctionType(lw.struct([r.type for r in regs]), [r.type for r in regs])
    res = lw.b.call(ir.InlineAsm(ftype, text, cons, True), regs)
    return [lw.b.extract_value(res, i) for i in range(n)]


def a_fragment_registers(layout: LinearLayout, origin_row: int, k0: int) -> list[int]:
    """The A tile's registers ``a0..a7`` (lane 0 of the first warp) of the instruction at row ``origin_row``, K ``k0``.

    The same ``(row, col)`` pattern as the accumulator's first eight registers (``fragment(16)``):
    pairs ``(a0, a1)``, ``(a2, a3)``, ... pack into the instruction's four 32-bit registers.

        >>> from tilelab.compiler.layouts.distributed import wgmma_accumulator, wgmma_a_fragment
        >>> a_fragment_registers(wgmma_a_fragment(wgmma_accumulator([64, 64], [4, 1], 64), k=32), 0, 16)
        [8, 9, 10, 11, 12, 13, 14, 15]
    """
    coords = layout.apply(register=list(range(layout.in_size(REGISTER))), lane=0, warp=0)
    by_coords = {(int(r), int(c)): i for i, (r, c) in enumerate(coords)}
    return [by_coords[(origin_row + dr, k0 + dc)] for dr, dc in fragment(16)]


def _pack_a(lw, values: list, elem) -> list:
    """Eight 16-bit A elements as the instruction's four 32-bit registers (low half first)."""
    b = lw.b
    out = []
    for lo, hi in zip(values[0::2], values[1::2]):
        out.append(pair_word(b, to_bits(b, lo, elem), to_bits(b, hi, elem)))
    return out


def _asm(lw, text: str) -> None:
    lw.b.call(ir.InlineAsm(ir.FunctionType(ir.VoidType(), []), text, "~{memory}", True), [])


#: ops that write operand buffers (or make copies land, or fence them): a barrier must come after them
_SHARED_WRITES = (LocalStoreOp, AsyncCopyGlobalToLocalOp, AsyncWaitOp)  # a proxy fence writes nothing


def _after_barrier(op) -> bool:
    """Whether a barrier precedes ``op`` in its block with no operand-buffer write since.

    Then every thread's operand bytes are written and fenced and the wgmma needs no barrier of
    its own. Ops that hold such writes in their regions count as writes; other ops touch only
    registers or the lowering's scratch bytes, apart from the operand buffers. The proxy fence
    may follow the barrier: each thread's fence then orders what the barrier made visible to it
    before its own async-proxy reads (Triton emits the same ``bar.sync; fence.proxy.async`` pair).
    """
    return _since_last(op, BarrierOp)


def _since_last(op, kind) -> bool:
    """Whether an op of ``kind`` precedes ``op`` in its block with no operand-buffer write in between."""
    ops = op.parent.ops
    for prev in reversed(ops[: ops.index(op)]):
        if isinstance(prev, kind):
            return True
        if isinstance(prev, _SHARED_WRITES) or any(isinstance(o, _SHARED_WRITES) for o in prev.walk()):
            return False
    return False


@lower(FenceAsyncSharedOp)
def lower_fence_async_shared(lw, op):
    """``fence.proxy.async``, unless an earlier fence of the block already covers every operand-buffer write.

    The fence orders this thread's generic-proxy writes (stores, landed ``cp.async`` copies) before
    the tensor cores' async-proxy reads; a second one with no operand write since orders nothing
    more (attention's loop fenced before each of its dots: ``FENCE.VIEW.ASYNC.S`` and a ``MEMBAR``).
    """
    if not _since_last(op, FenceAsyncSharedOp):
        _asm(lw, "fence.proxy.async.shared::cta;")


@lower(WarpGroupDotOp)
def lower_warp_group_dot(lw, op):
    if op.a_in_registers:
        lower_warp_group_dot_registers(lw, op)
        return
    b = lw.b
    a_type, b_type, c_type = (v.type for v in op.operands)
    acc = lw.get(op.acc)
    eb = a_type.element.itemsize
    a_op = operand_of(a_type.layout, a_type.shape, eb, 0)
    b_op = operand_of(b_type.layout, b_type.shape, eb, 1)
    instr_n = acc.layout.params["instr_shape"][1]
    if not _after_barrier(op):
        lw.barrier()  # every thread's operand bytes written (and fenced) before any warpgroup reads them
    a_bits, b_bits = warpgroup_offsets(acc.layout, a_op, b_op)
    start_a = b.add(_start_field(lw, lw.get(op.a), a_op), xor_flat(b, [(lw.uniform_warp, [x >> 4 for x in a_bits])]))
    start_b = b.add(_start_field(lw, lw.get(op.b), b_op), xor_flat(b, [(lw.uniform_warp, [x >> 4 for x in b_bits])]))
    fields_a, fields_b = a_op.descriptor(0), b_op.descriptor(0)
    trans_b = 0 if b_op.k_major else 1
    regs, read = _zero_start(lw, op, list(acc.regs))
    out = _fence(lw, regs)
    if a_type.element.itemsize != 2 and not b_op.k_major:
        raise LoweringBug("an 8- or 32-bit wgmma operand B must be stored K-major")
    for ins in plan(acc.layout, a_op, b_op, WGMMA_TYPES[a_type.element.name][1]):
        desc_a = _descriptor(lw, b.add(start_a, const_i32(ins.a_offset >> 4)), fields_a)
        desc_b = _descriptor(lw, b.add(start_b, const_i32(ins.b_offset >> 4)), fields_b)
        use = ins.regs[0] in read
        read.update(ins.regs)
        results = _wgmma(lw, a_type.element.name, instr_n, [out[i] for i in ins.regs], desc_a, desc_b, trans_b, use)
        for i, v in zip(ins.regs, results):
            out[i] = v
    _finish(lw, op, acc.layout, c_type.element, out)


def _finish(lw, op, layout, elem, out: list, held: list = ()) -> None:
    """Commit and wait (``pendings``); sets ``op``'s result, and that of a wait right after it.

    A ``ttng.warp_group_dot_wait`` with the same ``pendings`` that directly follows the dot (the
    previous iteration's in-flight accumulator, ``software-pipeline``'s ``overlap_last_wgmma``)
    is done by the same ``wait_group``: its registers are tied through it too.
    """
    pendings = int(op.attrs.get("pendings", 0))
    ops = op.parent.ops
    after = ops[ops.index(op) + 1] if ops.index(op) + 1 < len(ops) else None
    joined = isinstance(after, WarpGroupDotWaitOp) and int(after.attrs["pendings"]) == pendings
    other = lw.get(after.operands[0]) if joined else None
    extra = list(other.regs) if joined else []
    regs = _wait(lw, out + extra + list(held), pendings)
    lw.set(op.result, GTile(layout, elem, regs[: len(out)]))
    if joined:
        lw.set(after.result, GTile(other.layout, after.result.type.element, regs[len(out) : len(out) + len(extra)]))


@lower(WarpGroupDotWaitOp)
def lower_warp_group_dot_wait(lw, op):
    if op.result in lw.values:
        return  # waited for with the dot right before it (``_finish``)
    acc = lw.get(op.operands[0])
    regs = _tied(lw, f"wgmma.wait_group.sync.aligned {int(op.attrs['pendings'])};", list(acc.regs))
    lw.set(op.result, GTile(acc.layout, op.result.type.element, regs))


def lower_warp_group_dot_registers(lw, op):
    """``ttng.warp_group_dot`` with A in registers: per instruction four packed A registers and B's descriptor.

    ``fence``, the wgmmas, ``commit``/``wait``: as with A in shared memory, but no barrier
    (this thread's registers are its own) and A's registers go through the fence and the
    wait along with the accumulator's.
    """
    b = lw.b
    a_tile, acc = lw.get(op.a), lw.get(op.acc)
    b_type, c_type = op.b.type, op.acc.type
    elem = op.a.type.element
    b_op = operand_of(b_type.layout, b_type.shape, elem.itemsize, 1)
    instr_n = acc.layout.params["instr_shape"][1]
    a_shape = Operand(int(op.a.type.shape[0]), int(op.a.type.shape[1]), elem.itemsize, 128)
    _, b_bits = warpgroup_offsets(acc.layout, a_shape, b_op)
    start_b = b.add(_start_field(lw, lw.get(op.b), b_op), xor_flat(b, [(lw.warp, [x >> 4 for x in b_bits])]))
    fields_b = b_op.descriptor(0)
    if a_tile.layout != wgmma_a_fragment(acc.layout, k=a_shape.cols):
        raise LoweringBug(f"a wgmma A operand in registers needs the A fragment layout, not {a_tile.layout}")
    instructions = plan(acc.layout, a_shape, b_op)
    packed = {}
    for ins in instructions:
        key = (ins.origin[0], ins.k0)
        if key not in packed:
            regs = a_fragment_registers(a_tile.layout, *key)
            packed[key] = _pack_a(lw, [a_tile.regs[r] for r in regs], elem)
    keys = list(packed)
    a_flat = [r for key in keys for r in packed[key]]
    n_acc = len(acc.regs)
    regs, read = _zero_start(lw, op, list(acc.regs))
    fenced = _fence(lw, regs + a_flat)
    out, a_flat = fenced[:n_acc], fenced[n_acc:]
    packed = {key: a_flat[4 * i : 4 * i + 4] for i, key in enumerate(keys)}
    trans_b = 0 if b_op.k_major else 1
    for ins in instructions:
        desc_b = _descriptor(lw, b.add(start_b, const_i32(ins.b_offset >> 4)), fields_b)
        a_regs = packed[(ins.origin[0], ins.k0)]
        use = ins.regs[0] in read
        read.update(ins.regs)
        results = _wgmma(lw, elem.name, instr_n, [out[i] for i in ins.regs], a_regs, desc_b, trans_b, use)
        for i, v in zip(ins.regs, results):
            out[i] = v
    _finish(lw, op, acc.layout, c_type.element, out, a_flat)
