"""GPU lowering of f16/bf16 ``tt.dot`` on tensor cores: ``mma.sync.aligned.m16n8k16``.

The accumulator already has the mma layout (``assign-layouts`` chose it): each warp
holds 16x8 tiles, four f32 registers per lane each. The operands are gathered into the
dot-operand layouts (through shared memory), whose registers are exactly the PTX
fragments: A gives 8 halves per 16x16 tile, B 4 halves per 16x8 tile. Then, for every
accumulator tile and every K step of 16, one instruction::

    mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {d0..d3}, {a0..a3}, {b0, b1}, {c0..c3};

Registers are matched by their coordinates (the layouts' register bases), so the same
code serves every tile size and warp split.
"""

from __future__ import annotations

from llvmlite import ir

from tilelab.compiler.layouts import dot_operand

from ..common.types import F32, I32
from .context import GTile, reg_indices
from .lower_memory import to_bits
from .lower_shape import gather

A_FRAGMENT = [(0, 0), (0, 1), (8, 0), (8, 1), (0, 8), (0, 9), (8, 8), (8, 9)]
B_FRAGMENT = [(0, 0), (1, 0), (8, 0), (9, 0)]
C_FRAGMENT = [(0, 0), (0, 1), (8, 0), (8, 1)]


def _by_coords(layout) -> dict[tuple, int]:
    return {tuple(layout.unflatten(flat)): r for r, flat in enumerate(reg_indices(layout))}


def _pairs(b, halves) -> list:
    """16-bit values packed two by two into i32 registers (low half first)."""
    out = []
    for lo, hi in zip(halves[0::2], halves[1::2]):
        lo32 = b.zext(lo, I32)
        hi32 = b.shl(b.zext(hi, I32), ir.Constant(I32, 16))
        out.append(b.or_(lo32, hi32))
    return out


def _mma(lw, kind: str, a_regs, b_regs, c_regs):
    b = lw.b
    text = (
        f"mma.sync.aligned.m16n8k16.row.col.f32.{kind}.{kind}.f32 "
        "{$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};"
    )
    cons = ",".join(["=f"] * 4 + ["r"] * 6 + ["f"] * 4)
    args = [*a_regs, *b_regs, *c_regs]
    ftype = ir.FunctionType(ir.LiteralStructType([F32] * 4), [a.type for a in args])
    res = b.call(ir.InlineAsm(ftype, text, cons, False), args)
    return [b.extract_value(res, i) for i in range(4)]


def lower_mma(lw, op):
    b = lw.b
    a_type, b_type, c_type = (v.type for v in op.operands)
    acc = lw.get(op.operands[2])
    k = a_type.shape[-1]
    a_layout = dot_operand(acc.layout, 0, k=k)
    b_layout = dot_operand(acc.layout, 1, k=k)
    a = gather(lw, [lw.get(op.operands[0])], a_layout, a_type.element, lambda i: i)
    bt = gather(lw, [lw.get(op.operands[1])], b_layout, b_type.element, lambda i: i)
    kind = a_type.element.name
    a_at, b_at, c_at = _by_coords(a_layout), _by_coords(b_layout), _by_coords(acc.layout)
    out = list(acc.regs)
    # K outermost: only one K step's A and B fragments need to be live at a time
    for k0 in range(0, k, 16):
        for row, col in sorted(c_at):
            if row % 16 or col % 8:
                continue
            c_idx = [c_at[(row + dr, col + dc)] for dr, dc in C_FRAGMENT]
            a_halves = [to_bits(b, a.regs[a_at[(row + dr, k0 + dk)]], a.elem) for dr, dk in A_FRAGMENT]
            b_halves = [to_bits(b, bt.regs[b_at[(k0 + dk, col + dc)]], bt.elem) for dk, dc in B_FRAGMENT]
            c_regs = _mma(lw, kind, _pairs(b, a_halves), _pairs(b, b_halves), [out[i] for i in c_idx])
            for i, v in zip(c_idx, c_regs):
                out[i] = v
    lw.set(op.result, GTile(acc.layout, c_type.element, out))
