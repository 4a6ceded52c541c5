"""The AMDGPU answers to the GPU lowering's questions (``backends/cuda/hooks.py``), for gfx942 (MI300).

What differs from NVIDIA, leaf by leaf (NVIDIA first, then gfx942):

* lanes of a warp: 32; 64 (a *wavefront*);
* thread / program index: ``%tid.x``, ``%ctaid.x``; ``llvm.amdgcn.workitem.id.x``, ``llvm.amdgcn.workgroup.id.x``;
* number of programs: ``%nctaid.x``; ``hidden_block_count_x`` of the implicit kernel arguments;
* barrier: ``bar.sync 0``; ``fence syncscope("workgroup")`` around ``llvm.amdgcn.s.barrier`` (``s_barrier``);
* lane exchange: ``shfl.sync.bfly`` / ``.up``; ``llvm.amdgcn.ds.bpermute`` (``ds_bpermute_b32``);
* predicated load: inline ``@p ld.global.v4.b32``; a branch around ``load <4 x i32>``
  (``global_load_dwordx4`` under the exec mask);
* ``exp`` / ``/``: ``ex2.approx`` / ``div.full``; ``llvm.exp2`` (``v_exp_f32``) / ``fdiv afn arcp``
  (``v_rcp_f32`` and a multiply);
* other math: libdevice; the intrinsics LLVM's AMDGPU backend lowers itself (``sin``, ``log``,
  ``sqrt``...). There is no ocml: ``tanh``, ``pow``, ``atan2``... and f64 transcendentals are a
  compile error naming the line.

The kernel is an ``amdgpu_kernel`` function with ``"amdgpu-flat-work-group-size"="1,64*num_warps"``;
pointers are global (address space 1), shared memory is the LDS (address space 3).
"""

from __future__ import annotations

from llvmlite import ir

from tilelab.compiler.ir.ops import AssertOp, PrintOp

from ..common.types import F32, I8, I32
from ..cuda.hooks import LOG2E, NotOnTarget

TRIPLE = "amdgcn-amd-amdhsa"
#: LLVM's data layout of the amdgcn target (``TargetMachine.target_data`` of gfx942)
DATALAYOUT = (
    "e-m:e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-p7:160:256:256:32-p8:128:128:128:48"
    "-p9:192:256:256:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024"
    "-v2048:2048-n32:64-S32-A5-G1-ni:7:8:9"
)

#: Float math the AMDGPU code generator lowers by itself, by type (anything else would need ocml).
NATIVE = {
    "float": {"exp", "exp2", "log", "log2", "sin", "cos", "sqrt", "round"},
    "double": {"sqrt", "round"},
}
#: libdevice names (``math.py``'s) -> the LLVM intrinsic of the same function
_INTRINSIC_OF = {name: name for name in ("sqrt", "round", "exp", "exp2", "log", "log2", "sin", "cos")}

CONSTANT = ir.PointerType(addrspace=4)


class AmdgpuHooks:
    """AMD gfx942's answers: AMDGPU intrinsics, 64-lane wavefronts, LDS in address space 3."""

    name = "amdgcn"
    warp_size = 64
    triple = TRIPLE
    data_layout = DATALAYOUT
    calling_convention = "amdgpu_kernel"

    def __init__(self, arch: str = "gfx942"):
        self.arch = arch
        self.target = f"amd:{arch}"

    # ------------------------------------------------------------------ the kernel
    def annotate(self, llmod: ir.Module, fn: ir.Function, num_warps: int, maxnreg: int | None = None) -> None:
        """Nothing in metadata: the work-group size is a function attribute (``kernel.py`` adds it to the text);
        no register cap (``maxnreg`` is NVIDIA's)."""

    def check_op(self, op) -> None:
        """``tl.device_print`` / ``tl.device_assert`` need a printf runtime this inspection target has not."""
        if isinstance(op, (PrintOp, AssertOp)):
            what = "tl.device_print" if isinstance(op, PrintOp) else "tl.device_assert"
            raise NotOnTarget(f"{what} is not supported on the inspection target {self.target} (no device runtime)")

    # ------------------------------------------------------------------ indices
    def thread_id(self, lw) -> ir.Value:
        return lw.entry.call(lw.function("llvm.amdgcn.workitem.id.x", I32, []), [], name="tid")

    def program_id(self, lw, axis: int) -> ir.Value:
        return lw.b.call(lw.function(f"llvm.amdgcn.workgroup.id.{'xyz'[axis]}", I32, []), [])

    def num_programs(self, lw, axis: int) -> ir.Value:
        """``hidden_block_count_{x,y,z}``: the first three i32 of the implicit kernel arguments (code object v5+)."""
        b = lw.b
        base = b.call(lw.function("llvm.amdgcn.implicitarg.ptr", CONSTANT, []), [])
        slot = b.gep(base, [ir.Constant(I32, 4 * axis)], source_etype=I8, inbounds=True)
        return b.load(slot, typ=I32, align=4)

    # ------------------------------------------------------------------ threads together
    def barrier(self, lw) -> None:
        """HIP's ``__syncthreads``: release the LDS writes, ``s_barrier``, acquire the others'.

        Returns nothing: the fences around it are not what ``barriers.py`` knows how to drop."""
        b = lw.b
        b.fence("release", "workgroup")
        b.call(lw.function("llvm.amdgcn.s.barrier", ir.VoidType(), []), [])
        b.fence("acquire", "workgroup")

    def _bpermute(self, lw, x: ir.Value, source_lane: ir.Value) -> ir.Value:
        """``x`` of lane ``source_lane`` (mod 64): ``ds_bpermute_b32`` takes a byte address, 4 per lane."""
        b = lw.b
        addr = b.shl(b.and_(source_lane, ir.Constant(I32, self.warp_size - 1)), ir.Constant(I32, 2))
        return b.call(lw.function("llvm.amdgcn.ds.bpermute", I32, [I32, I32]), [addr, x])

    def shuffle_xor32(self, lw, x: ir.Value, lane_mask: int) -> ir.Value:
        return self._bpermute(lw, x, lw.b.xor(lw.lane, ir.Constant(I32, lane_mask)))

    def shuffle_up32(self, lw, x: ir.Value, delta: int) -> ir.Value:
        return self._bpermute(lw, x, lw.b.sub(lw.lane, ir.Constant(I32, delta)))

    def shuffle_down32(self, lw, x: ir.Value, delta: int) -> ir.Value:
        return self._bpermute(lw, x, lw.b.add(lw.lane, ir.Constant(I32, delta)))

    def shuffle_idx32(self, lw, x: ir.Value, lane: ir.Value | int) -> ir.Value:
        lane = ir.Constant(I32, lane) if isinstance(lane, int) else lane
        return self._bpermute(lw, x, lane)

    # ------------------------------------------------------------------ global memory
    def load(self, lw, addr, pred, others, word: int, n: int, ptx: int, volatile: bool) -> list:
        """``n`` ``word``-bit registers from ``addr`` (one vector load), under a branch where ``pred`` is given."""
        b = lw.b
        wt = ir.IntType(word)

        def emit() -> list:
            if ptx < word:  # a lone byte, carried in a 16-bit register
                return [b.zext(b.load(addr, typ=ir.IntType(ptx), align=1), wt)]
            if n == 1:
                if volatile:
                    return [b.load_atomic(addr, "monotonic", align=word // 8, typ=wt)]
                return [b.load(addr, typ=wt, align=word // 8)]
            vec = b.load(addr, typ=ir.VectorType(wt, n), align=n * word // 8)
            return [b.extract_element(vec, ir.Constant(I32, i)) for i in range(n)]

        if pred is None:
            return emit()
        start = b.block
        with b.if_then(pred):
            loaded = emit()
            then = b.block
        out = []
        for i, value in enumerate(loaded):
            phi = b.phi(wt)
            phi.add_incoming(value, then)
            phi.add_incoming(others[i] if others else ir.Constant(wt, ir.Undefined), start)
            out.append(phi)
        return out

    def store(self, lw, addr, pred, words: list, word: int, ptx: int) -> None:
        """The ``word``-bit registers ``words`` to ``addr`` (one vector store) where ``pred`` holds."""
        b = lw.b
        with b.if_then(pred):
            if ptx < word:
                b.store(b.trunc(words[0], ir.IntType(ptx)), addr, align=1)
            elif len(words) == 1:
                b.store(words[0], addr, align=word // 8)
            else:
                vec = ir.Constant(ir.VectorType(ir.IntType(word), len(words)), ir.Undefined)
                for i, w in enumerate(words):
                    vec = b.insert_element(vec, w, ir.Constant(I32, i))
                b.store(vec, addr, align=len(words) * word // 8)

    # ------------------------------------------------------------------ atomics
    def atomic_form(self, lw, kind: str, elem) -> None:
        """Atomics go through LLVM's ``atomicrmw`` and ``cmpxchg`` (AMDGPU keeps their orderings)."""
        return None

    def shared_increment(self, lw, addr: ir.Value, pred: ir.Value) -> None:
        """Add one to the i32 at LDS pointer ``addr`` where ``pred`` holds (``atomicrmw`` under a branch)."""
        with lw.b.if_then(pred):
            lw.b.atomic_rmw("add", addr, ir.Constant(I32, 1), "monotonic")

    def atomic_cas(self, lw, addr, pred, cmp, val, sem: str, scope: str) -> None:
        return None

    # ------------------------------------------------------------------ math
    def shifted_half(self, lw, word: ir.Value, shift: int) -> ir.Value:
        """Bits ``shift`` .. ``shift + 15`` of ``word``: a shift and a ``trunc`` (NVIDIA's hook works around ptxas)."""
        return lw.b.trunc(lw.b.lshr(word, ir.Constant(word.type, shift)), ir.IntType(16))

    def bf16_mul_pairs(self, lw, a: list, c: list, t):
        return None  # the f32 multiply and a rounding: gfx942 has no packed bf16 multiply

    def narrow_pairs(self, lw, xs: list, t, rounding: str):
        return None

    def native_float_to_int(self, lw, x: ir.Value, dst: ir.IntType, signed: bool):
        """``fptosi.sat`` / ``fptoui.sat`` as LLVM lowers them for gfx942 (``v_cvt_i32_f32`` saturates)."""
        return None

    def native_narrow(self, lw, x: ir.Value, t, rounding: str):
        """gfx942 has no f32 -> bf16 instruction (gfx950 has): the integer rounding sequence."""
        return None

    def exp2_f32(self, lw, x: ir.Value) -> ir.Value:
        """``2**x`` as ``llvm.exp2.f32``: ``v_exp_f32`` (with denormal scaling)."""
        return lw.b.call(lw.function("llvm.exp2.f32", F32, [F32]), [x])

    def fast_div_f32(self, lw, a: ir.Value, c: ir.Value) -> ir.Value:
        """f32 ``a / c`` with ``afn arcp``: ``v_rcp_f32`` and a multiply (~1 ulp, like ``div.full``)."""
        return lw.b.fdiv(a, c, flags=("afn", "arcp"))

    def math_function(self, lw, name: str, *args: ir.Value) -> ir.Value:
        """``name`` as the LLVM intrinsic AMDGPU lowers itself, ``frem`` for ``fmod``; others: ``NotOnTarget``."""
        b, t = lw.b, args[0].type
        if name == "fmod":
            return b.frem(args[0], args[1])
        if name == "rsqrt" and str(t) == "float":
            return b.call(lw.function("llvm.amdgcn.rsq.f32", t, [t]), list(args))
        if name in NATIVE.get(str(t), ()):
            suffix = {"float": "f32", "double": "f64"}[str(t)]
            return b.call(lw.function(f"llvm.{_INTRINSIC_OF[name]}.{suffix}", t, [t]), list(args))
        kind = {"float": "f32", "double": "f64"}.get(str(t), str(t))
        raise NotOnTarget(
            f"math function {name} ({kind}) is not supported on the inspection target {self.target}: it needs "
            "AMD's math library (ocml), which is not linked; LLVM lowers only exp, exp2, log, log2, sin, cos, sqrt, "
            "rsqrt, round and fmod in f32 (sqrt, round, fmod in f64)"
        )


__all__ = ["AmdgpuHooks", "DATALAYOUT", "LOG2E", "NATIVE", "TRIPLE"]
