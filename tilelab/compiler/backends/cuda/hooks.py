"""What the GPU lowering asks of the machine: NVVM's answers, behind one small object.

Why: the lowering of tiles (registers per thread, layouts, reductions through shuffles and
shared memory) is the same on any SIMT GPU; only a handful of leaves are not: how a thread
reads its index, how a warp exchanges registers, how a predicated load is spelled, which
barrier, which fast math. ``CudaLowering.hooks`` holds them; ``NvvmHooks`` (here) answers for
NVIDIA (NVVM intrinsics, inline PTX), ``tilelab.compiler.backends.amd.hooks.AmdgpuHooks`` for
AMD's gfx942 (AMDGPU intrinsics, 64-lane wavefronts). Every leaf takes the lowering ``lw``
(its builder ``lw.b``, its ``lw.function`` declarations)::

    tid = lw.hooks.thread_id(lw)                       # @llvm.nvvm.read.ptx.sreg.tid.x
    x = lw.hooks.shuffle_xor32(lw, x, 4)               # @llvm.nvvm.shfl.sync.bfly.i32(-1, x, 4, 31)
    words = lw.hooks.load(lw, addr, pred, None, 32, 4, 32, False)   # @p ld.global.v4.b32

Everything else (``lower_*.py``) reads only ``lw.hooks.warp_size`` and these methods.
"""

from __future__ import annotations

from llvmlite import ir

from ..common.scalars import intrinsic
from ..common.types import F32, I32
from .emit import DATALAYOUT, TRIPLE

#: The PTX register letter of each register width (inline-asm constraints).
_LETTER = {16: "h", 32: "r", 64: "l"}

LOG2E = 1.4426950408889634


def word_of_halves(lo: ir.Value, hi: ir.Value) -> ir.Value | None:
    """The 32-bit word that ``lo`` and ``hi`` were unpacked from (``trunc(w)``, ``shifted_half(w, 16)``), or None.

    The shift of ``shifted_half`` is opaque to LLVM, so LLVM no longer sees that re-packing the two
    halves gives the word back; packing code asks here first and takes the word as it was loaded.
    """
    if not all(isinstance(v, ir.CastInstr) and v.opname == "trunc" for v in (lo, hi)):
        return None
    word, shifted = lo.operands[0], hi.operands[0]
    if not (isinstance(shifted, ir.CallInstr) and isinstance(shifted.callee, ir.InlineAsm)):
        return None
    return word if shifted.callee.asm == "shr.u32 $0, $1, 16;" and shifted.args[0] is word else None


def pair_word(b, lo: ir.Value, hi: ir.Value) -> ir.Value:
    """Two 16-bit values as one 32-bit word, ``lo`` in the low half: the word they were loaded as, when they are
    its two halves (``word_of_halves``), else a ``<2 x i16>`` vector (``mov.b32 %r, {%rs0, %rs1}``; from f32,
    LLVM converts such a pair in one ``cvt.rn.f16x2.f32``).

    Every packing of 16-bit pairs asks here: a tile loaded from global memory and stored to shared memory
    (a dot operand, ``stmatrix``) or fed to an instruction whole then keeps its loaded words, where
    re-packing opaque halves cost a ``prmt`` and a shift per word and two registers live across them.
    """
    word = word_of_halves(lo, hi)
    if word is not None:
        return word
    i32 = ir.IntType(32)
    vec = b.insert_element(ir.Constant(ir.VectorType(ir.IntType(16), 2), None), lo, ir.Constant(i32, 0))
    return b.bitcast(b.insert_element(vec, hi, ir.Constant(i32, 1)), i32)


class NotOnTarget(Exception):
    """An op the target cannot lower (a math function without a library...): the kernel builder names the line."""


#: fp8 formats the GPU converts to (sm_89 on): (PTX type, the comparison and bound |x| keeps to round to a
#: finite value, the code past it, the code of NaN). The bound is the midpoint past the largest finite, which
#: rounds to even: to 448 for e4m3 (mantissa 110), to 2^16 for e5m2 (57344 has mantissa 11), so 464 is kept
#: and 61440 is not. The bit arithmetic of ``common/fp8.py`` is the reference.
_FP8 = {"fp8e4nv": ("e4m3x2", "<=", 464.0, 0x7F, 0x7F), "fp8e5": ("e5m2x2", "<", 61440.0, 0x7C, 0x7E)}


def _fp8_native(lw, t, rounding: str) -> bool:
    return lw.sm >= 89 and rounding != "rtz" and getattr(t, "name", None) in _FP8


def _fp8_pairs(lw, xs: list, name: str) -> list:
    """f32 values to fp8 bits, two per ``cvt.rn.satfinite.<e4m3x2|e5m2x2>.f32``, as the bit arithmetic rounds them.

    The instruction rounds to nearest even as ``common/fp8.py`` does, but saturates: past the largest
    finite it gives the largest finite, where the reference (ml_dtypes, the interpreter) gives NaN (e4m3)
    or infinity (e5m2). One compare of ``|x|`` with the bound of ``_FP8`` puts those codes back, NaN's too,
    with ``x``'s sign: bit for bit the reference, in ~4 instructions an element instead of ~25.
    """
    b = lw.b
    ptx, keeps, limit, over, nan = _FP8[name]
    i8, i16 = ir.IntType(8), ir.IntType(16)
    cvt = ir.InlineAsm(ir.FunctionType(i16, [F32, F32]), f"cvt.rn.satfinite.{ptx}.f32 $0, $1, $2;", "=h,f,f", False)
    fabs = lw.function("llvm.fabs.f32", F32, [F32])
    out = []
    for i in range(0, len(xs), 2):
        pair = xs[i : i + 2]
        high = pair[1] if len(pair) > 1 else ir.Constant(F32, 0.0)
        word = b.call(cvt, [high, pair[0]])  # the instruction's first operand becomes the high byte
        for k, x in enumerate(pair):
            code = b.trunc(b.lshr(word, ir.Constant(i16, 8)) if k else word, i8)
            sign = b.trunc(b.lshr(b.bitcast(x, I32), ir.Constant(I32, 24)), i8)
            sign = b.and_(sign, ir.Constant(i8, 0x80))
            finite = b.fcmp_ordered(keeps, b.call(fabs, [x]), ir.Constant(F32, limit))
            special = b.select(b.fcmp_unordered("uno", x, x), ir.Constant(i8, nan), ir.Constant(i8, over))
            out.append(b.select(finite, code, b.or_(special, sign)))
    return out


def _f16_pairs(lw, xs: list) -> list:
    """f32 values to f16, two per ``fptrunc <2 x float>`` (``cvt.rn.f16x2.f32``, sm_80 on), an odd last one alone.

    Narrowed one by one, LLVM pairs the ``fptrunc``s into ``cvt.rn.f16x2.f32`` only where they sit in
    the block that packs them; a loop's f32 accumulator converted after the loop is a ``phi`` whose
    ``fptrunc`` InstCombine moves into the loop's exit block, apart from the packing: then each half is
    converted alone and packed with a move (an attention backward's epilogue: 128 more PTX instructions than
    paired). A vector ``fptrunc`` is not moved and stays one instruction a pair.
    """
    b = lw.b
    f32x2, f16x2 = ir.VectorType(F32, 2), ir.VectorType(ir.HalfType(), 2)
    out = []
    for i in range(0, len(xs) - 1, 2):
        pair = b.insert_element(ir.Constant(f32x2, ir.Undefined), xs[i], ir.Constant(I32, 0))
        pair = b.fptrunc(b.insert_element(pair, xs[i + 1], ir.Constant(I32, 1)), f16x2)
        out += [b.extract_element(pair, ir.Constant(I32, k)) for k in range(2)]
    if len(xs) % 2:
        out.append(b.fptrunc(xs[-1], ir.HalfType()))
    return out


class NvvmHooks:
    """NVIDIA's answers: NVVM intrinsics and inline PTX (``warp_size`` 32)."""

    name = "nvptx"
    warp_size = 32
    triple = TRIPLE
    data_layout = DATALAYOUT
    calling_convention = "ptx_kernel"

    # ------------------------------------------------------------------ the kernel
    def annotate(self, llmod: ir.Module, fn: ir.Function, num_warps: int, maxnreg: int | None = None) -> None:
        """Mark ``fn`` a kernel of at most ``32 * num_warps`` threads (``nvvm.annotations``), of at most
        ``maxnreg`` registers a thread when given (``.maxnreg``)."""
        annotations = llmod.add_named_metadata("nvvm.annotations")
        annotations.add(llmod.add_metadata([fn, "kernel", ir.Constant(I32, 1)]))
        annotations.add(llmod.add_metadata([fn, "maxntidx", ir.Constant(I32, self.warp_size * num_warps)]))
        if maxnreg is not None:
            annotations.add(llmod.add_metadata([fn, "maxnreg", ir.Constant(I32, maxnreg)]))

    def check_op(self, op) -> None:
        """Raise ``NotOnTarget`` for an op this target cannot lower (NVIDIA lowers them all)."""

    # ------------------------------------------------------------------ indices
    def thread_id(self, lw) -> ir.Value:
        """The thread's index in its program (``%tid.x``), emitted in the entry block."""
        return lw.entry.call(lw.function("llvm.nvvm.read.ptx.sreg.tid.x", I32, []), [], name="tid")

    def warp_id(self, lw) -> ir.Value:
        """The thread's warp (``tid / 32``), broadcast from lane 0 with ``shfl.sync.idx`` in the entry block.

        The value is the same for the whole warp either way; the shuffle tells ptxas so. What
        depends only on the warp (a warpgroup's wgmma descriptors, a warp's shared offsets)
        then lives in uniform registers and is computed on the uniform datapath, instead of
        being moved into them (``R2UR``) before every wgmma (as Triton's warp id does).
        """
        warp = lw.entry.lshr(lw.tid, ir.Constant(I32, self.warp_size.bit_length() - 1))
        shfl = lw.function("llvm.nvvm.shfl.sync.idx.i32", I32, [I32, I32, I32, I32])
        args = [ir.Constant(I32, -1), warp, ir.Constant(I32, 0), ir.Constant(I32, 31)]
        return lw.entry.call(shfl, args, name="warp")

    def program_id(self, lw, axis: int) -> ir.Value:
        return lw.b.call(lw.function(f"llvm.nvvm.read.ptx.sreg.ctaid.{'xyz'[axis]}", I32, []), [])

    def num_programs(self, lw, axis: int) -> ir.Value:
        return lw.b.call(lw.function(f"llvm.nvvm.read.ptx.sreg.nctaid.{'xyz'[axis]}", I32, []), [])

    # ------------------------------------------------------------------ threads together
    def barrier(self, lw) -> ir.Instruction:
        """Every thread of the program waits here; shared memory written before is visible after.

        Returns the ``bar.sync`` call: a scratch barrier with no shared access since the previous one
        is dropped later (``barriers.py``)."""
        return lw.b.call(lw.function("llvm.nvvm.barrier0", ir.VoidType(), []), [])

    def shuffle_xor32(self, lw, x: ir.Value, lane_mask: int) -> ir.Value:
        """The i32 ``x`` of lane ``lane ^ lane_mask`` (a butterfly shuffle)."""
        shfl = lw.function("llvm.nvvm.shfl.sync.bfly.i32", I32, [I32, I32, I32, I32])
        return lw.b.call(shfl, [ir.Constant(I32, -1), x, ir.Constant(I32, lane_mask), ir.Constant(I32, 31)])

    def shuffle_up32(self, lw, x: ir.Value, delta: int) -> ir.Value:
        """The i32 ``x`` of lane ``lane - delta`` (lanes below ``delta`` get some lane's value: callers select)."""
        shfl = lw.function("llvm.nvvm.shfl.sync.up.i32", I32, [I32, I32, I32, I32])
        return lw.b.call(shfl, [ir.Constant(I32, -1), x, ir.Constant(I32, delta), ir.Constant(I32, 0)])

    def shuffle_down32(self, lw, x: ir.Value, delta: int) -> ir.Value:
        """The i32 ``x`` of lane ``lane + delta`` (lanes from ``32 - delta`` get some lane's value: callers select)."""
        shfl = lw.function("llvm.nvvm.shfl.sync.down.i32", I32, [I32, I32, I32, I32])
        return lw.b.call(shfl, [ir.Constant(I32, -1), x, ir.Constant(I32, delta), ir.Constant(I32, 31)])

    def shuffle_idx32(self, lw, x: ir.Value, lane: ir.Value | int) -> ir.Value:
        """The i32 ``x`` of lane ``lane`` (every lane reads the same one: a broadcast when it is a constant)."""
        shfl = lw.function("llvm.nvvm.shfl.sync.idx.i32", I32, [I32, I32, I32, I32])
        lane = ir.Constant(I32, lane) if isinstance(lane, int) else lane
        return lw.b.call(shfl, [ir.Constant(I32, -1), x, lane, ir.Constant(I32, 31)])

    # ------------------------------------------------------------------ global memory
    def load(self, lw, addr, pred, others, word: int, n: int, ptx: int, volatile: bool) -> list:
        """One (predicated) ``ld.global`` of ``n`` ``word``-bit registers; ``others`` are the masked-off values."""
        letter = _LETTER[word]
        outs = ", ".join(f"${i}" for i in range(n))
        vec = f".v{n}" if n > 1 else ""
        kind = ".volatile" if volatile else ""
        reg = f"{{{outs}}}" if n > 1 else "$0"
        lines, cons, args = [], [f"={letter}"] * n, []
        if pred is not None:
            lines += [f"mov.b{word} ${i}, ${n + 2 + i};" for i in range(n)] if others else []
            lines.append(f"@${n} ld{kind}.global{vec}.b{ptx} {reg}, [${n + 1}];")
            cons += ["b", "l"] + ([letter] * n if others else [])
            args += [pred, addr] + (others or [])
        else:
            lines.append(f"ld{kind}.global{vec}.b{ptx} {reg}, [${n}];")
            cons.append("l")
            args.append(addr)
        wt = ir.IntType(word)
        ret = wt if n == 1 else ir.LiteralStructType([wt] * n)
        asm = ir.InlineAsm(ir.FunctionType(ret, [a.type for a in args]), " ".join(lines), ",".join(cons), True)
        res = lw.b.call(asm, args)
        return [res] if n == 1 else [lw.b.extract_value(res, i) for i in range(n)]

    def store(self, lw, addr, pred, words: list, word: int, ptx: int) -> None:
        """One ``st.global`` of the ``word``-bit registers ``words`` where ``pred`` holds."""
        n = len(words)
        letter = _LETTER[word]
        vec = f".v{n}" if n > 1 else ""
        vals = ", ".join(f"${i + 2}" for i in range(n))
        src = f"{{{vals}}}" if n > 1 else "$2"
        text = f"@$0 st.global{vec}.b{ptx} [$1], {src};"
        args = [pred, addr, *words]
        cons = ",".join(["b", "l"] + [letter] * n)
        asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), [a.type for a in args]), text, cons, True)
        lw.b.call(asm, args)

    # ------------------------------------------------------------------ atomics
    def atomic_form(self, lw, kind: str, elem) -> tuple[str, int] | None:
        """``(PTX op and type, elements per instruction)`` of an ``atom`` doing ``kind`` on ``elem``, or ``None``.

        ``None`` sends the op to LLVM's ``atomicrmw``, which LLVM expands (a ``cmpxchg`` loop keeps the
        ordering). PTX spells what LLVM 22 drops: ``atomicrmw`` on NVPTX becomes a relaxed, device-scope
        ``atom`` whatever its ordering and scope, so a ``release`` exchange published nothing. Float adds
        take several elements at a time on sm_90, as consecutive addresses allow: 4 f32
        (``atom.add.v4.f32``), 8 f16 or bf16 (``atom.add.noftz.v8.f16``). A lone 16-bit float add has no
        instruction of its own: ptxas makes it a compare-and-swap loop on its 32-bit word.
        """
        if lw.sm < 70:
            return None
        bits = elem.itemsize * 8
        if kind == "fadd":
            name = {"f32": "f32", "f64": "f64", "f16": "noftz.f16", "bf16": "noftz.bf16"}.get(elem.name)
            if name is None or (elem.name == "bf16" and lw.sm < 90):
                return None
            return f"add.{name}", {"f32": 4, "f16": 8, "bf16": 8}.get(elem.name, 1) if lw.sm >= 90 else 1
        if bits not in (32, 64):
            return None
        if kind == "xchg":
            return f"exch.b{bits}", 1  # floats as their bits
        if not elem.is_int:
            return None  # float max and min: LLVM's cmpxchg loop
        if kind == "add":
            return f"add.u{bits}", 1
        if kind in ("max", "min"):
            return f"{kind}.s{bits}", 1
        if kind in ("umax", "umin"):
            return f"{kind[1:]}.u{bits}", 1
        if kind in ("and", "or", "xor"):
            return f"{kind}.b{bits}", 1
        return None

    def atomic_rmw(self, lw, form: str, addr, pred, words: list, sem: str, scope: str, returns: bool) -> list:
        """One ``@pred atom.<sem>.<scope>.global.<form>`` on ``len(words)`` consecutive elements at ``addr``.

        ``words`` are the operands as integers of the element's width; gives the old values the same way,
        or ``[]`` where ``returns`` is false: then ``red`` where it exists (not for exchanges) and its
        orderings allow (relaxed, release).
        """
        n, word = len(words), words[0].type.width
        letter, vec = _LETTER[word], f".v{n}" if n > 1 else ""
        op, _, typ = form.rpartition(".")
        reduce = not returns and sem in ("relaxed", "release") and op != "exch"  # ``red`` has no exchange
        outs = 0 if reduce else n
        srcs = ", ".join(f"${outs + 2 + i}" for i in range(n))
        src = f"{{{srcs}}}" if n > 1 else srcs
        head = f"@${outs} {'red' if reduce else 'atom'}.{sem}.{scope}.global.{op}{vec}.{typ}"
        dsts = ", ".join(f"${i}" for i in range(outs))
        dst = f"{{{dsts}}}, " if outs > 1 else f"{dsts}, " if outs else ""
        text = f"{head} {dst}[${outs + 1}], {src};"
        args = [pred, addr, *words]
        cons = [f"={letter}"] * outs + ["b", "l"] + [letter] * n
        wt = ir.IntType(word)
        ret = ir.VoidType() if reduce else wt if n == 1 else ir.LiteralStructType([wt] * n)
        asm = ir.InlineAsm(ir.FunctionType(ret, [a.type for a in args]), text, ",".join(cons), True)
        res = lw.b.call(asm, args)
        if reduce:
            return []
        return [res] if n == 1 else [lw.b.extract_value(res, i) for i in range(n)]

    def shared_increment(self, lw, addr: ir.Value, pred: ir.Value) -> None:
        """Add one to the i32 at shared-memory pointer ``addr`` where ``pred`` holds: one predicated
        ``red.shared.add.u32`` (ptxas makes it ``ATOMS.POPC.INC``: a warp's increments of one address in one
        update), no branch around it."""
        text = "@$0 red.shared.add.u32 [$1], 1;"
        args = [pred, lw.b.ptrtoint(addr, I32)]
        asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), [a.type for a in args]), text, "b,r", True)
        lw.b.call(asm, args)

    def atomic_cas(self, lw, addr, pred, cmp: ir.Value, val: ir.Value, sem: str, scope: str) -> ir.Value | None:
        """``@pred atom.<sem>.<scope>.global.cas`` of 16-, 32- or 64-bit words; the old word (``None``: use LLVM)."""
        word = cmp.type.width
        if lw.sm < 70 or word not in _LETTER:
            return None
        letter = _LETTER[word]
        text = f"@$1 atom.{sem}.{scope}.global.cas.b{word} $0, [$2], $3, $4;"
        args = [pred, addr, cmp, val]
        cons = f"={letter},b,l,{letter},{letter}"
        asm = ir.InlineAsm(ir.FunctionType(cmp.type, [a.type for a in args]), text, cons, True)
        return lw.b.call(asm, args)

    # ------------------------------------------------------------------ math
    def shifted_half(self, lw, word: ir.Value, shift: int) -> ir.Value:
        """Bits ``shift`` .. ``shift + 15`` of ``word`` (an upper half of a loaded word), the shift kept opaque.

        Why: left to itself LLVM selects ``trunc(lshr(w, 16))`` as the unpack ``mov.b32 {_, %rs}, %r``,
        and ptxas 13.0 turned that into a byte permute that took the word's *low* half when the value
        then met a select folded into a predicated conversion (an f16 pair loaded under one ``if``
        branch and converted under the other: every odd element read its even neighbour; the fuzzer's
        seed 602254). An inline ``shr`` and LLVM's ``trunc`` give ``shr.u32`` + ``cvt.u16.u32`` (in the
        machine code ``SHF.R.U32.HI``, which is right), and LLVM still folds the ``trunc`` into later
        widening (a bf16 upper half widened to f32 stays two shifts).
        """
        width = word.type.width
        shr = ir.InlineAsm(ir.FunctionType(word.type, [word.type]), f"shr.u{width} $0, $1, {shift};",
                           f"={_LETTER[width]},{_LETTER[width]}")  # fmt: skip
        return lw.b.trunc(lw.b.call(shr, [word]), ir.IntType(16))

    def native_narrow(self, lw, x: ir.Value, t, rounding: str):
        """f32 -> bf16 bits with ``cvt.rn.bf16.f32`` (sm_80 on), instead of ~8 integer ops; fp8 bits as
        ``fp8_pairs`` makes them (sm_89 on); else None."""
        if _fp8_native(lw, t, rounding):
            return _fp8_pairs(lw, [x], t.name)[0]
        if lw.sm < 80 or rounding == "rtz" or getattr(t, "name", None) != "bf16":
            return None
        asm = ir.InlineAsm(ir.FunctionType(ir.IntType(16), [F32]), "cvt.rn.bf16.f32 $0, $1;", "=h,f", False)
        return lw.b.call(asm, [x])

    def native_float_to_int(self, lw, x: ir.Value, dst: ir.IntType, signed: bool):
        """f32 / f64 ``x`` to ``dst`` with ``cvt.rzi`` (``llvm.nvvm.f2i.rz`` and kin): toward zero, saturating,
        NaN to 0, as ``fptosi.sat`` / ``fptoui.sat`` define it, where LLVM expands those to seven instructions
        (the conversion, then three compares and selects). ``cvt.rzi`` saturates; it gives 0 for NaN only from
        f32 to 32 bits (from f64, or to 64 bits, the most negative integer, on an H100), so those add the NaN
        select. An 8- or 16-bit ``dst`` clamps the 32-bit result into its range (``min`` / ``max``). Other
        sources (f16): None."""
        src = {"float": "f", "double": "d"}.get(str(x.type))
        if src is None or dst.width not in (8, 16, 32, 64):
            return None
        b, wide = lw.b, ir.IntType(64 if dst.width == 64 else 32)
        name = f"llvm.nvvm.{src}2{'' if signed else 'u'}{'ll' if wide.width == 64 else 'i'}.rz"
        y = b.call(lw.function(name, wide, [x.type]), [x])
        if src == "d" or wide.width == 64:
            y = b.select(b.fcmp_unordered("uno", x, x), ir.Constant(wide, 0), y)
        if dst.width < 32:
            if signed:
                top, bottom = ir.Constant(I32, (1 << (dst.width - 1)) - 1), ir.Constant(I32, -(1 << (dst.width - 1)))
                y = intrinsic(lw, "smax", intrinsic(lw, "smin", y, top), bottom)
            else:
                y = intrinsic(lw, "umin", y, ir.Constant(I32, (1 << dst.width) - 1))
            y = b.trunc(y, dst)
        return y

    def bf16_mul_pairs(self, lw, a: list, c: list, t):
        """bf16 ``a[i] * c[i]`` for lists of bits, two at a time in ``mul.rn.bf16x2`` (sm_90 on), else None.

        The product of two bf16 values is exact in f32, so rounding it once to bf16 gives what
        the f32 multiply and ``cvt.rn.bf16.f32`` give (but for products below f32's normal
        range), without widening both operands and narrowing the result. Pairs of neighbouring
        registers travel as one 32-bit word, as a vector load packed them and a store packs them.
        """
        if lw.sm < 90 or getattr(t, "name", None) != "bf16":
            return None
        b, i16, i32 = lw.b, ir.IntType(16), ir.IntType(32)
        pair = ir.VectorType(i16, 2)
        mul2 = ir.InlineAsm(ir.FunctionType(i32, [i32, i32]), "mul.rn.bf16x2 $0, $1, $2;", "=r,r,r", False)
        mul1 = ir.InlineAsm(ir.FunctionType(i16, [i16, i16]), "mul.rn.bf16 $0, $1, $2;", "=h,h,h", False)
        out = []
        for i in range(0, len(a) - 1, 2):
            word = b.bitcast(b.call(mul2, [pair_word(b, a[i], a[i + 1]), pair_word(b, c[i], c[i + 1])]), pair)
            out += [b.extract_element(word, ir.Constant(i32, k)) for k in range(2)]
        if len(a) % 2:
            out.append(b.call(mul1, [a[-1], c[-1]]))
        return out

    def narrow_pairs(self, lw, xs: list, t, rounding: str):
        """f32 values to bf16 bits two at a time with ``cvt.rn.bf16x2.f32`` (sm_80 on), to fp8 with
        ``fp8_pairs`` (sm_89 on), else None.

        The pair comes out as the 32-bit word a store packs (no 16-bit registers in between).
        """
        if _fp8_native(lw, t, rounding):
            return _fp8_pairs(lw, xs, t.name)
        if lw.sm < 80 or rounding == "rtz" or len(xs) < 2:
            return None
        if getattr(t, "name", None) == "f16":
            return _f16_pairs(lw, xs)
        if getattr(t, "name", None) != "bf16":
            return None
        b, i32 = lw.b, ir.IntType(32)
        pair = ir.VectorType(ir.IntType(16), 2)
        cvt2 = ir.InlineAsm(ir.FunctionType(i32, [F32, F32]), "cvt.rn.bf16x2.f32 $0, $1, $2;", "=r,f,f", False)
        out = []
        for i in range(0, len(xs) - 1, 2):  # the first operand goes to the upper half
            word = b.bitcast(b.call(cvt2, [xs[i + 1], xs[i]]), pair)
            out += [b.extract_element(word, ir.Constant(i32, k)) for k in range(2)]
        if len(xs) % 2:
            out.append(self.native_narrow(lw, xs[-1], t, rounding))
        return out

    def exp2_f32(self, lw, x: ir.Value) -> ir.Value:
        """``2**x`` on the special-function unit (``ex2.approx.f32``, ~2 ulp)."""
        return lw.b.call(lw.function("llvm.nvvm.ex2.approx.f", F32, [F32]), [x])

    def fast_div_f32(self, lw, a: ir.Value, c: ir.Value) -> ir.Value:
        """f32 ``a / c`` as ``div.full.f32``: correct to 2 ulp, branch-free (Triton's default for ``/``)."""
        asm = ir.InlineAsm(ir.FunctionType(F32, [F32, F32]), "div.full.f32 $0, $1, $2;", "=r,r,r", False)
        return lw.b.call(asm, [a, c])

    def math_function(self, lw, name: str, *args: ir.Value) -> ir.Value:
        """A math-library function of f32/f64 ``args``: libdevice's ``__nv_<name>f`` / ``__nv_<name>``."""
        t = args[0].type
        symbol = f"__nv_{name}" + ("f" if str(t) == "float" else "")
        lw.uses_libdevice = True
        return lw.b.call(lw.function(symbol, t, [t] * len(args)), list(args))


#: The hooks of a lowering made without any (the CUDA backend's).
NVVM = NvvmHooks()

__all__ = ["NVVM", "NvvmHooks", "NotOnTarget", "LOG2E"]
