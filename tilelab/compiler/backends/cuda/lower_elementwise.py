"""GPU lowering of indexing and elementwise ops: a scalar emitter mapped over each thread's registers.

Elementwise ops need no data movement: the layout pass gave their operands and
result one layout, so register ``r`` of the result is ``fn`` of registers ``r`` of
the operands. The scalar emitters of integer arithmetic, casts and comparisons are
the CPU backend's (LLVM IR is the same there); float math calls libdevice
(``__nv_expf`` ...), linked in by ``kernel.py``.

    %2 = arith.add %0, %1 : tensor<256xf32, #blocked<sizePerThread=[2], ...>>
    ->  two ``fadd float`` per thread
"""

from __future__ import annotations

from llvmlite import ir

from tilelab.compiler.ir.ops import (
    BinaryOp,
    BitcastOp,
    CastOp,
    CmpOp,
    ConstantOp,
    FmaOp,
    HintOp,
    InlineAsmOp,
    MakeRangeOp,
    NumProgramsOp,
    ProgramIdOp,
    SelectOp,
    SplatOp,
    UnaryOp,
)

from ..common import arith_constant, convert, float_predicate, from_arith, int_binary, int_unary, to_arith
from ..common.types import I32, I64
from .context import GTile, const_i32, gpu_type, lower, reg_indices
from .math import float_binary, float_unary


def map_regs(lw, op, fn, operands=None) -> None:
    """Define ``op``'s result as ``fn`` of the operands' registers, register by register."""
    vals = [lw.get(v) for v in (op.operands if operands is None else operands)]
    rtype = op.result.type
    if not rtype.is_tensor:
        lw.set(op.result, fn(*vals))
        return
    n = len(next(v for v in vals if isinstance(v, GTile)).regs)
    regs = [v.regs if isinstance(v, GTile) else [v] * n for v in vals]
    runs = constant_runs(lw, op.result, rtype.layout)
    done: dict = {}
    out = []
    for r, args in enumerate(zip(*regs)):
        key = runs[r] if runs is not None else r
        if key not in done:
            done[key] = fn(*args)
        out.append(done[key])
    lw.set(op.result, GTile(rtype.layout, rtype.element, out))


def constant_runs(lw, value, layout) -> list | None:
    """For each register of ``value``, the run of equal elements it lies in (axis info's constancy).

    Registers in one run hold one value, computed once (as Triton's elementwise lowering does):
    ``cols < N`` over 8 consecutive columns with ``N`` divisible by 16 is one comparison, not 8.
    With ``constancy[d] = k`` a run is the aligned block of ``k`` elements along ``d``; a register's
    coordinates are its thread's XOR its own, so two registers share a run when their own
    coordinates agree above the low ``log2 k`` bits. None when no run holds two registers.
    """
    info = lw.axis[value] if value in lw.axis else None
    if info is None or all(k <= 1 for k in info.constancy):
        return None
    shifts = [(k & -k).bit_length() - 1 for k in info.constancy]  # runs of the largest power of 2 dividing k
    keys = [tuple(c >> s for c, s in zip(layout.unflatten(i), shifts)) for i in reg_indices(layout)]
    return keys if len(set(keys)) < len(keys) else None


def splat_tile(t, value) -> GTile:
    """Every register of a tile of type ``t`` holding ``value``."""
    return GTile(t.layout, t.element, [value] * len(reg_indices(t.layout)))


# ------------------------------------------------------------------ indexing


@lower(ConstantOp)
def lower_constant(lw, op):
    t = op.result.type
    elem = t.element if t.is_tensor else t
    value = ir.Constant(gpu_type(elem), None) if elem.is_pointer else arith_constant(elem, op.value)
    lw.set(op.result, splat_tile(t, value) if t.is_tensor else value)


@lower(ProgramIdOp, NumProgramsOp)
def lower_program_id(lw, op):
    read = lw.hooks.program_id if isinstance(op, ProgramIdOp) else lw.hooks.num_programs
    lw.set(op.result, read(lw, op.attrs["axis"]))


@lower(MakeRangeOp)
def lower_make_range(lw, op):
    t = op.result.type
    base = lw.thread_index(t.layout)
    start = op.attrs["start"]
    regs = [lw.b.add(lw.b.xor(base, const_i32(r)), const_i32(start)) for r in reg_indices(t.layout)]
    lw.set(op.result, GTile(t.layout, t.element, regs))


@lower(SplatOp)
def lower_splat(lw, op):
    lw.set(op.result, splat_tile(op.result.type, lw.get(op.src)))


@lower(HintOp)
def lower_hint(lw, op):
    lw.set(op.result, lw.get(op.operands[0]))


# ------------------------------------------------------------------ arithmetic


@lower(BinaryOp)
def lower_binary(lw, op):
    t = op.result.type.element if op.result.type.is_tensor else op.result.type
    if t.is_float and op.kind == "mul" and _native_mul(lw, op, t):
        return
    if t.is_float:

        def emit(a, c):
            exact = op.attrs.get("rounding") == "rn"
            r = float_binary(lw, op.kind, to_arith(lw, a, t), to_arith(lw, c, t), exact)
            return from_arith(lw, r, t)
    else:

        def emit(a, c):
            return int_binary(lw, op.kind, t, a, c)

    map_regs(lw, op, emit)


def _native_mul(lw, op, t) -> bool:
    """A bf16 product in ``mul.rn.bf16x2`` (``native_bf16_mul``), register pairs at a time; False where none."""
    vals = [lw.get(v) for v in op.operands]
    if not op.result.type.is_tensor:
        got = lw.native_bf16_mul([vals[0]], [vals[1]], t)
        if got is not None:
            lw.set(op.result, got[0])
        return got is not None
    n = len(next(v for v in vals if isinstance(v, GTile)).regs)
    a, c = (v.regs if isinstance(v, GTile) else [v] * n for v in vals)
    got = lw.native_bf16_mul(a, c, t)
    if got is not None:
        lw.set(op.result, GTile(op.result.type.layout, t, got))
    return got is not None


_PREDICATES = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


@lower(CmpOp)
def lower_cmp(lw, op):
    src = op.operands[0].type
    t = src.element if src.is_tensor else src
    pred = _PREDICATES[op.predicate]

    def emit(a, c):
        b = lw.b
        if t.is_pointer:
            return b.icmp_unsigned(pred, b.ptrtoint(a, I64), b.ptrtoint(c, I64))
        if t.is_float:
            a, c = to_arith(lw, a, t), to_arith(lw, c, t)
            return b.fcmp_unordered(pred, a, c) if pred == "!=" else b.fcmp_ordered(pred, a, c)
        return (b.icmp_signed if t.is_signed else b.icmp_unsigned)(pred, a, c)

    map_regs(lw, op, emit)


@lower(SelectOp)
def lower_select(lw, op):
    map_regs(lw, op, lambda c, a, d: lw.b.select(c, a, d))


@lower(FmaOp)
def lower_fma(lw, op):
    t = op.result.type.element if op.result.type.is_tensor else op.result.type

    def emit(a, c, d):
        b = lw.b
        x, y, z = (to_arith(lw, v, t) for v in (a, c, d))
        fma = lw.function(f"llvm.fma.{_suffix(x.type)}", x.type, [x.type] * 3)
        return from_arith(lw, b.call(fma, [x, y, z]), t)

    map_regs(lw, op, emit)


@lower(UnaryOp)
def lower_unary(lw, op):
    src = op.operands[0].type
    t = src.element if src.is_tensor else src
    rt = op.result.type.element if op.result.type.is_tensor else op.result.type

    def emit(x):
        if op.kind == "abs" and t.is_signed and not t.is_float and x.type.width < 32:
            return _narrow_abs(lw, x)
        if not t.is_float:
            return int_unary(lw, op.kind, t, x)
        xa = to_arith(lw, x, t)
        if op.kind in ("isnan", "isinf", "signbit"):
            return float_predicate(lw, op.kind, xa)
        return from_arith(lw, float_unary(lw, op.kind, xa), rt)

    map_regs(lw, op, emit)


def _narrow_abs(lw, x: ir.Value) -> ir.Value:
    """``|x|`` of an i8 / i16, wrapping at the minimum (``abs(int16(-32768)) == -32768``, as on the CPU).

    Why not ``llvm.abs.i16``: it becomes ``abs.s16``, whose 32-bit register then holds +32768, and a
    following ``cvt.s32.s16`` came out as +32768 on an H200 (the fuzzer's seed 621525). Computing in
    32 bits and keeping the low bits with a shift pair (which LLVM does not narrow back into
    ``abs.s16``) gives the wrapped value.
    """
    b, width = lw.b, x.type.width
    wide = b.sext(x, I32)
    neg = b.icmp_signed("<", wide, ir.Constant(I32, 0))
    magnitude = b.select(neg, b.sub(ir.Constant(I32, 0), wide), wide)
    shift = ir.Constant(I32, 32 - width)
    return b.trunc(b.ashr(b.shl(magnitude, shift), shift), x.type)


@lower(CastOp)
def lower_cast(lw, op):
    src, dst = (v.type.element if v.type.is_tensor else v.type for v in (op.operands[0], op.result))
    rounding = op.attrs.get("rounding", "rtne")
    x = lw.get(op.operands[0])
    if op.result.type.is_tensor and getattr(src, "name", None) == "f32" and isinstance(x, GTile):
        pairs = lw.native_narrow_pairs(x.regs, dst, rounding)
        if pairs is not None:
            lw.set(op.result, GTile(op.result.type.layout, dst, pairs))
            return

    def emit(x):
        if dst.is_pointer and not src.is_pointer:
            wide = lw.b.zext(x, I64) if x.type.width < 64 else x
            return lw.b.inttoptr(wide, gpu_type(dst))
        return convert(lw, x, src, dst, rounding)

    map_regs(lw, op, emit)


@lower(BitcastOp)
def lower_bitcast(lw, op):
    rt = op.result.type
    target = gpu_type(rt.element if rt.is_tensor else rt)
    map_regs(lw, op, lambda x: x if x.type == target else lw.b.bitcast(x, target))


def _suffix(t: ir.Type) -> str:
    return {"half": "f16", "float": "f32", "double": "f64"}.get(str(t), str(t))


@lower(InlineAsmOp)
def lower_inline_asm(lw, op):
    """One ``asm`` call per ``pack`` registers of the thread, as Triton makes them.

    Each operand's ``pack`` elements are ``pack`` registers, or, narrower than 32 bits, packed into
    32-bit registers (``<2 x half>``, ``<4 x i8>`` as ``i32``); results come back the same way and
    are unpacked. A thread's register count not a multiple of ``pack`` is padded with undef.
    """
    b, pack = lw.b, op.attrs["pack"]
    first = op.results[0].type
    values = [lw.get(v) for v in op.operands]
    columns = [v.regs for v in values] if first.is_tensor else [[v] for v in values]
    n = len(reg_indices(first.layout)) if first.is_tensor else 1
    padded = n + (-n) % pack
    columns = [c + [ir.Constant(c[0].type, ir.Undefined)] * (padded - n) for c in columns]
    out_types = []
    for r in op.results:
        k, bits = InlineAsmOp.packing(r.type.element, pack)
        out_types += [gpu_type(r.type.element) if k == 1 else ir.IntType(k * bits)] * (pack // k)
    ret = out_types[0] if len(out_types) == 1 else ir.LiteralStructType(out_types)
    results = [[] for _ in op.results]
    for start in range(0, padded, pack):
        args = []
        for column, v in zip(columns, op.operands):
            k, bits = InlineAsmOp.packing(v.type.element, pack)
            for j in range(start, start + pack, k):
                if k == 1:
                    args.append(column[j])
                    continue
                vec = ir.Constant(ir.VectorType(column[j].type, k), ir.Undefined)
                for q in range(k):
                    vec = b.insert_element(vec, column[j + q], const_i32(q))
                args.append(b.bitcast(vec, ir.IntType(k * bits)))
        fnty = ir.FunctionType(ret, [a.type for a in args])
        call = b.call(ir.InlineAsm(fnty, op.attrs["asm"], op.attrs["constraints"], not op.pure), args)
        slot = 0
        for out, r in zip(results, op.results):
            k, _ = InlineAsmOp.packing(r.type.element, pack)
            for _ in range(pack // k):
                got = call if len(out_types) == 1 else b.extract_value(call, slot)
                slot += 1
                if k == 1:
                    out.append(got)
                    continue
                vec = b.bitcast(got, ir.VectorType(gpu_type(r.type.element), k))
                out += [b.extract_element(vec, const_i32(q)) for q in range(k)]
    for r, out in zip(op.results, results):
        lw.set(r, GTile(r.type.layout, r.type.element, out[:n]) if first.is_tensor else out[0])
