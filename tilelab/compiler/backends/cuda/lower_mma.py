"""GPU lowering of ``tt.dot`` on tensor cores with ``mma.sync``: f16/bf16, f32 in tf32, int8 into i32.

The accumulator already has the mma layout (``assign-layouts`` chose it): each warp
holds 16x8 tiles, four 32-bit registers per lane each. The operands are gathered into the
dot-operand layouts (through shared memory), whose registers are exactly the PTX
fragments: each 32-bit register holds ``k_width`` consecutive K elements (2 halves, one
tf32, 4 bytes: ``layouts.mma_k_width``), A four registers per 16 x K-step tile, B two per
K-step x 8. Then, for every accumulator tile and every K step, one instruction::

    mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {d0..d3}, {a0..a3}, {b0, b1}, {c0..c3};
    mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 ...       (K step 8)
    mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32 ...  (K step 32, as Triton emits it)

Registers are matched by their coordinates (the layouts' register bases), so the same
code serves every tile size, warp split and element type, and batched 3-d dots (each batch's
tiles with that batch's fragments).
"""

from __future__ import annotations

from llvmlite import ir

from tilelab.compiler.layouts import dot_operand, mma_k_width

from ..common.types import F32, I32
from .context import GTile, reg_indices
from .hooks import word_of_halves
from .lower_memory import to_bits
from .lower_shape import gather

C_FRAGMENT = [(0, 0), (0, 1), (8, 0), (8, 1)]
#: element type -> the instruction's shape and types (K step = 8 * k_width)
SHAPES = {
    "f16": "m16n8k16.row.col.f32.f16.f16.f32",
    "bf16": "m16n8k16.row.col.f32.bf16.bf16.f32",
    "f32": "m16n8k8.row.col.f32.tf32.tf32.f32",
    "i8": "m16n8k32.row.col.satfinite.s32.s8.s8.s32",
}


def fragments(k_width: int) -> tuple[list, list]:
    """(row, k) of A's and (k, col) of B's elements for lane 0, register by register, ``k_width`` per register.

    >>> fragments(2)[1]
    [(0, 0), (1, 0), (8, 0), (9, 0)]
    >>> fragments(1)[0]
    [(0, 0), (8, 0), (0, 4), (8, 4)]
    """
    a = [(r, k0 + j) for k0 in (0, 4 * k_width) for r in (0, 8) for j in range(k_width)]
    b = [(k0 + j, 0) for k0 in (0, 4 * k_width) for j in range(k_width)]
    return a, b


def _by_coords(layout) -> dict[tuple, int]:
    return {tuple(layout.unflatten(flat)): r for r, flat in enumerate(reg_indices(layout))}


def _packed(b, values, k_width: int) -> list:
    """Elements packed ``k_width`` to a 32-bit register, the lowest K in the low bits."""
    out = []
    width = 32 // k_width
    for i in range(0, len(values), k_width):
        loaded = word_of_halves(*values[i : i + 2]) if k_width == 2 else None
        if loaded is not None:  # the word the pair was loaded as
            out.append(loaded)
            continue
        reg = None
        for j, v in enumerate(values[i : i + k_width]):
            part = b.zext(v, I32) if width < 32 else v
            if j:
                part = b.shl(part, ir.Constant(I32, width * j))
            reg = part if reg is None else b.or_(reg, part)
        out.append(reg)
    return out


def _mma(lw, shape: str, a_regs, b_regs, c_regs):
    b = lw.b
    text = f"mma.sync.aligned.{shape} {{$0, $1, $2, $3}}, {{$4, $5, $6, $7}}, {{$8, $9}}, {{$10, $11, $12, $13}};"
    integer = ".s32" in shape
    c = "r" if integer else "f"
    cons = ",".join([f"={c}"] * 4 + ["r"] * 6 + [c] * 4)
    args = [*a_regs, *b_regs, *c_regs]
    ftype = ir.FunctionType(ir.LiteralStructType([I32 if integer else F32] * 4), [a.type for a in args])
    res = b.call(ir.InlineAsm(ftype, text, cons, False), args)
    return [b.extract_value(res, i) for i in range(4)]


def mma_plan(a_layout, b_layout, c_layout, k: int, k_width: int) -> list[tuple[list, list, list]]:
    """The instructions of a dot: per ``mma.sync``, the register indices of its A, B and C fragments.

    Registers are found by their coordinates in thread 0 (every thread runs the same code on its own
    registers): for each K step (outermost: one step's fragments live at a time) and each 16x8
    accumulator tile (of each batch), A's rows and B's columns are the tile's, K the step's.
    """
    a_frag, b_frag = fragments(k_width)
    a_at, b_at, c_at = _by_coords(a_layout), _by_coords(b_layout), _by_coords(c_layout)
    plan = []
    for k0 in range(0, k, 8 * k_width):
        for *batch, row, col in sorted(c_at):
            if row % 16 or col % 8:
                continue
            plan.append((
                [a_at[(*batch, row + dr, k0 + dk)] for dr, dk in a_frag],
                [b_at[(*batch, k0 + dk, col + dc)] for dk, dc in b_frag],
                [c_at[(*batch, row + dr, col + dc)] for dr, dc in C_FRAGMENT],
            ))  # fmt: skip
    return plan


def lower_mma(lw, op):
    b = lw.b
    a_type, b_type, c_type = (v.type for v in op.operands)
    acc = lw.get(op.operands[2])
    k = a_type.shape[-1]
    kw = mma_k_width(a_type.element.itemsize)
    a_layout = dot_operand(acc.layout, 0, kw, k=k)
    b_layout = dot_operand(acc.layout, 1, kw, k=k)
    a = gather(lw, [lw.get(op.operands[0])], a_layout, a_type.element, lambda i: i)
    bt = gather(lw, [lw.get(op.operands[1])], b_layout, b_type.element, lambda i: i)
    shape = SHAPES[a_type.element.name]
    out = list(acc.regs)
    for a_idx, b_idx, c_idx in mma_plan(a_layout, b_layout, acc.layout, k, kw):
        a_bits = [to_bits(b, a.regs[i], a.elem) for i in a_idx]
        b_bits = [to_bits(b, bt.regs[i], bt.elem) for i in b_idx]
        c_regs = _mma(lw, shape, _packed(b, a_bits, kw), _packed(b, b_bits, kw), [out[i] for i in c_idx])
        for i, v in zip(c_idx, c_regs):
            out[i] = v
    lw.set(op.result, GTile(acc.layout, c_type.element, out))
