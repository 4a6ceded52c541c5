"""GPU lowering of ``tt.dot``: the FMA fallback, correct for every dtype.

``a`` and ``b`` go to shared memory (row-major); then each thread, for each of its
accumulator registers at ``(m, n)``, runs ``acc += a[m, k] * b[k, n]`` over ``k`` in a
loop, in the accumulator's type (f16/bf16 inputs widen to f32, i8 to i32; f32
inputs use full f32 products, more precise than tf32). Tensor-core ``mma.sync`` is
the next step (``accelerate-dot``).

    %d = tt.dot %a, %b, %c : tensor<64x64xf32, #blocked<...>>
    ->  loop k: fma(a[m*K + k], b[k*N + n], acc_r) for every register r
"""

from __future__ import annotations

from llvmlite import ir

from tilelab.compiler.ir.ops import DotOp

from ..common import convert
from ..common.types import I32
from .context import GTile, const_i32, lower, reg_indices
from .lower_memory import from_bits, memory_bits, to_bits
from .lower_mma import lower_mma


def _stage(lw, tile, offset_bytes, smem):
    """Write a tile at its row-major indices, ``offset_bytes`` into shared memory."""
    b = lw.b
    w = memory_bits(tile.elem)
    base = lw.thread_index(tile.layout)
    for r, value in zip(reg_indices(tile.layout), tile.regs):
        index = b.xor(base, const_i32(r))
        b.store(to_bits(b, value, tile.elem), lw.smem_elem(smem, index, ir.IntType(w), offset_bytes))


def _read(lw, smem, offset_bytes, elem, index):
    b = lw.b
    w = memory_bits(elem)
    return from_bits(b, b.load(lw.smem_elem(smem, index, ir.IntType(w), offset_bytes)), elem)


def _mul_add(lw, a, c, acc, elem):
    b = lw.b
    if elem.is_float:
        fma = lw.function(f"llvm.fma.{_suffix(acc.type)}", acc.type, [acc.type] * 3)
        return b.call(fma, [a, c, acc])
    return b.add(b.mul(a, c), acc)


def _suffix(t) -> str:
    return {"half": "f16", "float": "f32", "double": "f64"}.get(str(t), str(t))


@lower(DotOp)
def lower_dot(lw, op):
    acc_layout = op.operands[2].type.layout
    if acc_layout.params.get("kind") == "mma" and acc_layout.params.get("version") != 3:
        lower_mma(lw, op)
        return
    lower_dot_fma(lw, op)


def lower_dot_fma(lw, op):
    """The FMA loop over K (see the module docstring)."""
    b = lw.b
    a, bt, acc = (lw.get(v) for v in op.operands)
    at, btt, ct = (v.type for v in op.operands)
    *batch, m, k = at.shape
    n = btt.shape[-1]
    elem = ct.element
    wa, wb = memory_bits(a.elem) // 8, memory_bits(bt.elem) // 8
    smem = lw.shared(ir.IntType(8), a.layout.num_elements * wa + bt.layout.num_elements * wb)
    lw.barrier()
    _stage(lw, a, 0, smem)
    _stage(lw, bt, a.layout.num_elements * wa, smem)
    lw.barrier()
    base = lw.thread_index(acc.layout)
    rows, cols = [], []
    for r in reg_indices(acc.layout):
        lin = b.xor(base, const_i32(r))
        batch_i = b.udiv(lin, const_i32(m * n)) if batch else const_i32(0)
        rows.append(b.add(b.mul(batch_i, const_i32(m)), b.and_(b.udiv(lin, const_i32(n)), const_i32(m - 1))))
        cols.append(b.add(b.mul(batch_i, const_i32(k * n)), b.and_(lin, const_i32(n - 1))))
    pre = b.block
    loop = b.append_basic_block("dot.k")
    done = b.append_basic_block("dot.done")
    b.branch(loop)
    b.position_at_end(loop)
    kk = b.phi(I32)
    kk.add_incoming(const_i32(0), pre)
    phis = []
    for v in acc.regs:
        phi = b.phi(v.type)
        phi.add_incoming(v, pre)
        phis.append(phi)
    b_offset = a.layout.num_elements * wa
    out = []
    for phi, row, col in zip(phis, rows, cols):
        x = _read(lw, smem, 0, a.elem, b.add(b.mul(row, const_i32(k)), kk))
        y = _read(lw, smem, b_offset, bt.elem, b.add(b.mul(kk, const_i32(n)), col))
        x, y = convert(lw, x, a.elem, elem), convert(lw, y, bt.elem, elem)
        out.append(_mul_add(lw, x, y, phi, elem))
    nxt = b.add(kk, const_i32(1))
    kk.add_incoming(nxt, b.block)
    for phi, v in zip(phis, out):
        phi.add_incoming(v, b.block)
    b.cbranch(b.icmp_unsigned("<", nxt, const_i32(k)), loop, done)
    b.position_at_end(done)
    lw.barrier()
    lw.set(op.result, GTile(acc.layout, elem, out))
