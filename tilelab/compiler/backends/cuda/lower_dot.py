"""GPU lowering of ``tt.dot``: the FMA fallback, correct for every dtype.

``a`` and ``b`` go to shared memory (row-major); each thread then computes the outer
products of its accumulator's rows of ``a`` and columns of ``b``, one K step after another,
in the accumulator's type (f16/bf16 inputs widen to f32, i8 to i32; f32 inputs use full
f32 products, more precise than tf32: ``input_precision="ieee"``, ``allow_tf32=False``).
Tensor-core ``mma.sync`` and ``wgmma`` are ``accelerate-dot``'s; this path takes what they
cannot (f32 in ieee, f64, small tiles).

Per K step a thread loads each of its rows' ``a[m, k]`` and each of its columns' ``b[k, n]``
once, then does one FMA per accumulator register: a thread holding 8 rows x 4 columns
makes 32 FMAs from 8 + 4 loads, and the loads are vectors, four K steps of a row of
``a`` in one 16-byte load, four adjacent columns of ``b`` in another. K is unrolled in
chunks of ``CHUNK_FMAS`` products (a loop over the chunks: the code stays small, a cell's
compile quick), so every address is a per-thread base plus a constant::

    %d = tt.dot %a, %b, %c : tensor<64x64xf32, #blocked<sizePerThread=[1, 4], ...>>
    ->  per 4 k:  ld.shared.v4 a[row_i, k..k+3] (each row i);  per k: ld.shared.v4 b[k, col..col+3]
                  fma.rn.f32 acc[i][j], a_i, b_j  (each register)

Layouts whose registers and threads share index bits, shapes not powers of two, or
accumulators past ``ACCUMULATOR_WORDS`` registers keep a loop over K that loads both operands
per register.
"""

from __future__ import annotations

from llvmlite import ir

from tilelab.compiler.ir.ops import DotOp
from tilelab.compiler.layouts import LANE, REGISTER, WARP

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


#: the FMAs a thread's dot unrolls (accumulator registers x K steps); a longer K loops over such chunks
CHUNK_FMAS = 512
#: the most 32-bit accumulator registers a thread may hold for the unrolled dot: past it the accumulator
#: spills anyway, and the unrolled products would spill with it (a 1-warp 128x64 f32 tile: 352 bytes a
#: thread in the loop, 66,936 unrolled)
ACCUMULATOR_WORDS = 128


def _index_bits(layout, in_dims) -> int:
    """The flat-index bits that ``layout``'s bases along ``in_dims`` may set."""
    bits = 0
    for d in in_dims:
        for v in layout.in_bases(d):
            bits |= layout.flatten(v)
    return bits


def _vector_width(elem_bits: int, limit: int, align_bytes: int) -> int:
    """The widest power-of-two run of elements (16 bytes at most) that divides ``limit`` and the alignment."""
    v = 128 // elem_bits
    while v > 1 and (limit % v or align_bytes % (v * elem_bits // 8)):
        v //= 2
    return max(1, v)


def _load_run(lw, smem, index, elem, v: int, offset_bytes: int) -> list:
    """``v`` elements of ``elem`` from shared index ``index`` on (one vector load when ``v > 1``)."""
    b = lw.b
    it = ir.IntType(memory_bits(elem))
    p = lw.smem_elem(smem, index, it, offset_bytes)
    if v == 1:
        return [from_bits(b, b.load(p), elem)]
    vec = b.load(b.bitcast(p, ir.VectorType(it, v).as_pointer(3)), align=v * it.width // 8)
    return [from_bits(b, b.extract_element(vec, const_i32(j)), elem) for j in range(v)]


def _outer_products(lw, op, smem, b_offset: int) -> list | None:
    """The accumulator after ``op`` as unrolled outer products (see the module docstring), or None where the
    layout or the sizes do not allow it (registers and threads sharing index bits, sizes not powers of two)."""
    b = lw.b
    a, bt, acc = (lw.get(v) for v in op.operands)
    *batch, m, k = op.operands[0].type.shape
    n = op.operands[1].type.shape[-1]
    layout, elem = acc.layout, op.operands[2].type.element
    words = len(acc.regs) * max(1, memory_bits(elem) // 32)
    if any(x & (x - 1) for x in (m, n, k)) or words > ACCUMULATOR_WORDS:
        return None
    threads = _index_bits(layout, (LANE, WARP))
    if threads & _index_bits(layout, (REGISTER,)):
        return None  # flat index = thread part + register part only where their bits are apart
    lg_n, lg_mn = n.bit_length() - 1, (m * n).bit_length() - 1
    base = lw.thread_index(layout)
    a_thread = b.mul(b.lshr(base, const_i32(lg_n)), const_i32(k))  # (batch * m + row) * k
    b_thread = b.add(b.mul(b.lshr(base, const_i32(lg_mn)), const_i32(k * n)), b.and_(base, const_i32(n - 1)))
    offsets = reg_indices(layout)
    rows = [o >> lg_n for o in offsets]  # the register's (batch * m + row) past the thread's
    cols = [((o >> lg_mn) * k * n, o & (n - 1)) for o in offsets]  # (its batch's first element of b, column)
    scratch = lw.private_base or 16
    va = _vector_width(memory_bits(a.elem), k, scratch)
    vb = _vector_width(memory_bits(bt.elem), n, scratch + b_offset)
    held = set(cols)
    while vb > 1 and (threads & (vb - 1) or any((f, c - c % vb + j) not in held for f, c in held for j in range(vb))):
        vb //= 2  # a vector of b's columns: the thread's own columns, aligned, every one of them held
    a_rows, b_runs = sorted(set(rows)), sorted({(first, c - c % vb) for first, c in held})

    def steps(out: list, kk, count: int) -> list:
        """The products of K steps ``kk .. kk + count - 1`` (``kk`` an i32), unrolled."""
        out = list(out)
        for k0 in range(0, count, va):
            a_vals = {}
            for r in a_rows:
                loaded = _load_run(lw, smem, b.add(b.add(a_thread, kk), const_i32(r * k + k0)), a.elem, va, 0)
                a_vals[r] = [convert(lw, x, a.elem, elem) for x in loaded]
            for dk in range(va):
                b_vals = {}
                for first, c in b_runs:
                    index = b.add(b_row, const_i32(first + (k0 + dk) * n + c))
                    for j, x in enumerate(_load_run(lw, smem, index, bt.elem, vb, b_offset)):
                        b_vals[(first, c + j)] = convert(lw, x, bt.elem, elem)
                for i, (r, col) in enumerate(zip(rows, cols)):
                    out[i] = _mul_add(lw, a_vals[r][dk], b_vals[col], out[i], elem)
        return out

    chunk = max(va, min(k, CHUNK_FMAS // len(acc.regs)))  # K steps unrolled per trip (powers of two)
    if chunk >= k:
        b_row = b_thread
        return steps(acc.regs, const_i32(0), k)
    pre = b.block
    loop, done = b.append_basic_block("dot.k"), b.append_basic_block("dot.done")
    b.branch(loop)
    b.position_at_end(loop)
    kk = b.phi(I32)
    kk.add_incoming(const_i32(0), pre)
    phis = [b.phi(v.type) for v in acc.regs]
    for phi, v in zip(phis, acc.regs):
        phi.add_incoming(v, pre)
    b_row = b.add(b_thread, b.mul(kk, const_i32(n)))
    out = steps(phis, kk, chunk)
    nxt = b.add(kk, const_i32(chunk))
    kk.add_incoming(nxt, b.block)
    for phi, v in zip(phis, out):
        phi.add_incoming(v, b.block)
    b.cbranch(b.icmp_unsigned("<", nxt, const_i32(k)), loop, done)
    b.position_at_end(done)
    return out


def lower_dot_fma(lw, op):
    """The FMA dot (see the module docstring): unrolled outer products, or a loop over K."""
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
    b_offset = a.layout.num_elements * wa
    out = _outer_products(lw, op, smem, b_offset)
    if out is not None:
        lw.barrier()
        lw.set(op.result, GTile(acc.layout, elem, out))
        return
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
