"""The state of lowering one kernel to NVPTX LLVM IR: tiles as per-thread register lists.

A tile with layout ``L`` is, in each thread, the list of elements ``L`` gives that
thread: register ``r`` holds the element at ``L(register=r) ^ L(lane=lane) ^ L(warp=warp)``.
Coordinates are handled as *row-major linear indices* (``L.flatten``): since every size
is a power of two and ``L`` is linear over GF(2), the index of register ``r`` is a
compile-time constant XOR a per-thread part computed once per kernel from ``%tid.x``::

    index(r) = REG[r] ^ thread_index        REG[r] = flatten(L(register=r))

``GTile(layout, elem, regs)`` holds those registers (llvmlite values); scalars are plain
llvmlite values. ``lower(OpClass)`` registers the per-op functions of ``lower_*.py`` in ``LOWERINGS``.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from tilelab._registry import Registry
from tilelab.compiler.ir import ops
from tilelab.compiler.ir.core import Block, Op, Value
from tilelab.compiler.ir.types import Type
from tilelab.compiler.layouts import LANE, REGISTER, WARP, LinearLayout

from ..common.types import I1, I8, I32, I64, register_type
from .hooks import NVVM

#: op class -> ``fn(lw, op)``, registered with ``@lower`` in the modules named here. The first
#: list loads with the first lookup (``kernel.py`` asks for it at import); each module of
#: ``on_demand`` the first time one of its ops is met: a vector add's first compile never loads
#: the dot, reduction, sort, shared-memory or wgmma lowerings (~15 ms of imports).
LOWERINGS = Registry(
    "CUDA lowering",
    __package__,
    modules=("lower_control", "lower_elementwise", "lower_memory", "lower_shape"),
    on_demand={
        "lower_dot": (ops.DotOp,),
        "lower_reduce": (ops.ReduceOp, ops.ScanOp),
        "lower_sort": (ops.SortOp,),
        "lower_histogram": (ops.HistogramOp,),
        "lower_shared": (ops.LocalAllocOp, ops.LocalStoreOp, ops.LocalLoadOp, ops.MemDescTransOp),
        "lower_async": (ops.MemDescIndexOp, ops.AsyncCopyGlobalToLocalOp, ops.AsyncCommitGroupOp, ops.AsyncWaitOp),
        "lower_wgmma": (ops.WarpGroupDotOp, ops.WarpGroupDotWaitOp, ops.FenceAsyncSharedOp),
        "lower_tma": (
            ops.TensorMapOp,
            ops.AsyncTMACopyOp,
            ops.AsyncTMAStoreOp,
            ops.InitBarriersOp,
            ops.InvalBarriersOp,
            ops.WaitBarrierOp,
        ),
    },
)
lower = LOWERINGS.register


SHARED = ir.PointerType(addrspace=3)
GLOBAL = ir.PointerType(addrspace=1)


def split_constant(b: ir.IRBuilder, v: ir.Value) -> tuple[ir.Value | None, int]:
    """``(x, c)`` with ``v == x + c`` (i32, wrapping): the constants of ``v``'s tree of ``add`` gathered into ``c``.

    ``x`` is None when ``v`` is a constant; a new ``add`` joins the two sides of an add whose both
    sides hold a constant (the old one is left to LLVM to drop).
    """
    if isinstance(v, ir.Constant) and isinstance(v.constant, int):
        return None, v.constant
    if isinstance(v, ir.Instruction) and v.opname == "add" and len(v.operands) == 2:
        (x0, c0), (x1, c1) = (split_constant(b, u) for u in v.operands)
        if c0 or c1:
            x = x0 if x1 is None else x1 if x0 is None else b.add(x0, x1)
            return x, c0 + c1
    return v, 0


class LoweringBug(Exception):
    """The GPU backend met something it cannot lower (a compiler limitation, not a user error)."""


def gpu_type(t: Type) -> ir.Type:
    """The LLVM type of one value of element type ``t`` on the GPU (pointers are global)."""
    return GLOBAL if t.is_pointer else register_type(t)


def memory_type(t: Type) -> ir.Type:
    """The LLVM type of one element in memory (``i8`` for bools)."""
    return I8 if (not t.is_pointer and t.is_bool) else gpu_type(t)


@dataclass
class GTile:
    """A tile in registers: ``regs[r]`` is the element ``layout`` gives register ``r`` of this thread."""

    layout: LinearLayout
    elem: Type
    regs: list


def reg_indices(layout: LinearLayout) -> list[int]:
    """``flatten(L(register=r))`` for every register ``r``: compile-time constants."""
    bases = [layout.flatten(v) for v in layout.in_bases(REGISTER)]
    out = [0]
    for v in bases:
        out += [x ^ v for x in out]
    return out


def broadcast_mask(layout: LinearLayout, in_dim: str) -> int:
    """The bits of ``in_dim`` whose basis vector is zero: threads differing there hold copies."""
    return sum(1 << i for i, v in enumerate(layout.in_bases(in_dim)) if not any(v))


class CudaLowering:
    """Lowers the ops of one kernel function into an llvmlite function (``b`` is the builder).

    ``hooks`` answer what differs between GPUs (``hooks.py``: thread indices, shuffles,
    predicated loads, barriers, fast math); NVVM's by default, AMDGPU's for gfx942.
    """

    #: LLVM's NVPTX and AMDGPU lowerings of ``fptosi.sat`` keep its NaN -> 0 (and ``native_float_to_int``
    #: selects it where ``cvt.rzi`` does not give it): no select after the conversion
    nan_to_int_is_zero = True

    def __init__(self, module: ir.Module, fn: ir.Function, num_warps: int, hooks=NVVM):
        self.module = module
        self.fn = fn
        self.num_warps = num_warps
        self.hooks = hooks
        self.warp_size = hooks.warp_size
        self.entry = ir.IRBuilder(fn.append_basic_block("entry"))
        self.body = fn.append_basic_block("body")
        self.b = ir.IRBuilder(self.body)
        self.values: dict[Value, object] = {}
        self.scratch_bytes = 0
        self.rotate_waited_loops = False  # ``lower_for``: loops whose wgmma accumulator is waited for after them
        self.scratch_barriers: set = set()  # barriers that order the scratch buffer only (``barrier``)
        self.private_base = 0  # the bytes before it belong to the buffers of ttg.local_alloc
        self._thread_index: dict[tuple, ir.Value] = {}
        self._structs: dict[tuple, ir.Type] = {}
        self._uniform_warp: ir.Value | None = None
        self.tid = hooks.thread_id(self)
        self.lane = self.entry.and_(self.tid, ir.Constant(I32, self.warp_size - 1), name="lane")
        self.warp = self.entry.lshr(self.tid, ir.Constant(I32, self.warp_size.bit_length() - 1), name="warp")

    @property
    def uniform_warp(self) -> ir.Value:
        """The warp index as ptxas sees it uniform (``hooks.warp_id``: a lane-0 broadcast), made once.

        ``warp`` (``tid >> 5``) lets LLVM fold lane and warp bits back into ``tid`` arithmetic;
        this one is for values ptxas should keep in uniform registers (wgmma descriptors).
        """
        if self._uniform_warp is None:
            self._uniform_warp = self.hooks.warp_id(self)
        return self._uniform_warp

    #: the GPU's compute capability as a number (90 for sm_90a); set by the kernel builder
    sm = 90

    def native_narrow(self, x: ir.Value, t: Type, rounding: str):
        """f32 -> bf16 bits in one instruction where the GPU has one (``hooks.native_narrow``); else None."""
        return self.hooks.native_narrow(self, x, t, rounding)

    def native_float_to_int(self, x: ir.Value, dst: ir.IntType, signed: bool):
        """``x`` to the integer type ``dst`` as ``fptosi.sat`` / ``fptoui.sat`` mean it, in the GPU's own
        conversion where it has one (``hooks.native_float_to_int``); else None."""
        return self.hooks.native_float_to_int(self, x, dst, signed)

    def native_bf16_mul(self, a: list, c: list, t: Type):
        """bf16 ``a[i] * c[i]`` for lists of bits, two at a time where the GPU can; else None."""
        return self.hooks.bf16_mul_pairs(self, a, c, t)

    def native_narrow_pairs(self, xs: list, t: Type, rounding: str):
        """f32 values to bf16 bits two at a time where the GPU can (``hooks.narrow_pairs``); else None."""
        return self.hooks.narrow_pairs(self, xs, t, rounding)

    def finish(self) -> None:
        """Close the entry block (per-thread indices computed there) with a jump to the body."""
        self.entry.branch(self.body)

    # ----------------------------------------------------------------- values
    def get(self, v: Value):
        try:
            return self.values[v]
        except KeyError:
            raise LoweringBug(f"value {v} used before it was lowered") from None

    def set(self, v: Value, x) -> None:
        self.values[v] = x

    def struct(self, elems: list) -> ir.Type:
        """The struct type of ``elems`` (an inline asm's outputs): literal when short, else named once per module.

        A wgmma's 64 or 128 outputs spelled out literally are ~1 KB of text in every ``extractvalue``
        and ``call``: over half of a matmul's LLVM IR, printed by llvmlite and parsed again by LLVM.
        A named type (``%"regs0" = type {...}``) is the same type to LLVM, written once.
        """
        if len(elems) <= 8:
            return ir.LiteralStructType(elems)
        key = tuple(elems)
        named = self._structs.get(key)
        if named is None:
            named = self.module.context.get_identified_type(f"regs{len(self._structs)}")
            named.set_body(*elems)
            self._structs[key] = named
        return named

    def function(self, name: str, ret: ir.Type, args: list[ir.Type], var_arg: bool = False) -> ir.Function:
        """An LLVM function (intrinsic, libdevice or runtime symbol) declared once per module."""
        existing = self.module.globals.get(name)
        if existing is not None:
            return existing
        return ir.Function(self.module, ir.FunctionType(ret, args, var_arg=var_arg), name)

    # ----------------------------------------------------------------- threads
    def thread_index(self, layout: LinearLayout) -> ir.Value:
        """``flatten(L(lane=lane) ^ L(warp=warp))`` as an i32, computed once per layout in the entry block."""
        key = (layout.bases, layout.out_dims)
        if key not in self._thread_index:
            sources = [(self.lane, layout.in_bases(LANE)), (self.warp, layout.in_bases(WARP))]
            self._thread_index[key] = xor_bits(self.entry, sources, layout)
        return self._thread_index[key]

    def is_owner(self, layout: LinearLayout | None) -> ir.Value:
        """True in the one thread that owns each element: copies in other lanes/warps stay idle."""
        b = self.b
        if layout is None:
            return b.icmp_unsigned("==", self.tid, ir.Constant(I32, 0))
        lane_bits, warp_bits = broadcast_mask(layout, LANE), broadcast_mask(layout, WARP)
        extra_warps = self.num_warps - 1 & ~((1 << len(layout.in_bases(WARP))) - 1)
        mask = b.or_(
            b.and_(self.lane, ir.Constant(I32, lane_bits)),
            b.and_(self.warp, ir.Constant(I32, warp_bits | extra_warps)),
        )
        return b.icmp_unsigned("==", mask, ir.Constant(I32, 0))

    # ----------------------------------------------------------------- shared memory
    def shared(self, elem: ir.Type, nbytes: int, private: bool = True) -> ir.GlobalVariable:
        """Reserve ``nbytes`` of the dynamic shared memory for the current use.

        A private scratch use (an op that moves data through shared memory by itself) gets
        the bytes after the allocated buffers (``private_base``), so it never clobbers them.
        """
        self.scratch_bytes = max(self.scratch_bytes, nbytes + (self.private_base if private else 0))
        g = self.module.globals.get("tilelab_smem")
        if g is None:
            g = ir.GlobalVariable(self.module, ir.ArrayType(I8, 0), "tilelab_smem", addrspace=3)
            g.linkage = "external"
            g.align = 16
        return g

    def smem_at(self, smem, byte: ir.Value, t: ir.Type, private: bool = True) -> ir.Value:
        """A pointer of type ``t`` to byte ``byte`` of the private scratch area (or of all shared memory)."""
        if private and self.private_base:
            byte = self.b.add(byte, ir.Constant(I32, self.private_base))
        p = self.b.gep(smem, [ir.Constant(I32, 0), byte])
        return self.b.bitcast(p, t.as_pointer(3))

    def smem_elem(self, smem, index: ir.Value, t: ir.Type, offset_bytes: int = 0, private: bool = True) -> ir.Value:
        """A pointer to element ``index`` of an array of ``t`` at ``offset_bytes`` in the scratch buffer.

        The constant terms of ``index`` (a register's place in a tile, a ring stage's start) are
        scaled apart from the rest, ``x * size + c * size``, not ``(x + c) * size``: the constant then
        becomes the immediate of the shared access (``[%r+4096]``), where LLVM cannot pull it out of
        a product whose sum other accesses share (a ring's ``stage + first``).
        """
        size = max(1, t.width // 8) if isinstance(t, ir.IntType) else 4
        x, c = split_constant(self.b, index)
        byte = ir.Constant(I32, (c * size + offset_bytes + 2**31) % 2**32 - 2**31)  # wraps as i32 does
        if x is not None:
            scaled = self.b.mul(x, ir.Constant(I32, size))
            byte = self.b.add(scaled, byte) if byte.constant else scaled
        return self.smem_at(smem, byte, t, private)

    def barrier(self, scratch: bool = True) -> None:
        """Every thread of the program waits here. A ``scratch`` one orders only the scratch buffer's
        accesses around it: where nothing touched shared memory since the previous barrier, ``barriers.py``
        drops it (the machine's hook returns the barrier it emitted when it can be dropped so)."""
        call = self.hooks.barrier(self)
        if scratch and call is not None:
            self.scratch_barriers.add(call)

    # ----------------------------------------------------------------- blocks
    def lower_block(self, block: Block) -> None:
        for op in block.ops:
            self.lower_op(op)

    def lower_op(self, op: Op) -> None:
        fn = LOWERINGS.get(type(op))
        if fn is None:
            raise LoweringBug(f"the CUDA backend cannot lower {op.name} yet (at {op.loc})")
        fn(self, op)


def xor_bits(b: ir.IRBuilder, sources, layout: LinearLayout) -> ir.Value:
    """XOR of ``flatten(basis[i])`` over the set bits ``i`` of each ``(index, basis vectors)`` source."""
    return xor_flat(b, [(index, [layout.flatten(v) for v in vectors]) for index, vectors in sources])


def xor_flat(b: ir.IRBuilder, sources) -> ir.Value:
    """XOR of ``ints[i]`` over the set bits ``i`` of each ``(index, ints)`` source.

    A run of index bits that land on consecutive single bits (bit ``i`` on ``2^p``, bit ``i + 1`` on
    ``2^(p + 1)``...) is one mask and one shift, not a test and a multiply per bit; terms whose bits
    cannot meet are joined by ``or``, the others by ``xor``, as a balanced tree. LLVM's known-bits
    analysis looks six operations deep: through a chain of one ``xor`` per bit it no longer saw that
    a thread's offset stays below the block, so a loop's ``i + offset`` (``i`` a multiple of the
    block) stayed an ``add``, which LLVM then reassociated into one loop-invariant register per element
    (``y - offset`` for ``i + offset == y``) instead of the ``or`` it is.

        lane bits 0..4 -> 8, 16, 32, 64, 128; warp bit 0 -> 256
        ->  or((lane & 31) << 3, (warp & 1) << 8)
    """
    terms = []  # (value, the bits it can have)
    for index, ints in sources:
        bit = 0
        while bit < len(ints):
            flat = ints[bit]
            if not flat:
                bit += 1
                continue
            if flat & (flat - 1):  # several bits: the index bit times the constant
                on = b.and_(b.lshr(index, ir.Constant(I32, bit)), ir.Constant(I32, 1))
                terms.append((b.mul(on, ir.Constant(I32, flat)), flat))
                bit += 1
                continue
            run = 1
            while bit + run < len(ints) and ints[bit + run] == flat << run:
                run += 1
            to = flat.bit_length() - 1
            term = b.and_(index, ir.Constant(I32, ((1 << run) - 1) << bit))
            if to > bit:
                term = b.shl(term, ir.Constant(I32, to - bit))
            elif to < bit:
                term = b.lshr(term, ir.Constant(I32, bit - to))
            terms.append((term, ((1 << run) - 1) << to))
            bit += run
    if not terms:
        return ir.Constant(I32, 0)
    while len(terms) > 1:
        joined = []
        for (x, x_bits), (y, y_bits) in zip(terms[::2], terms[1::2]):
            joined.append((b.xor(x, y) if x_bits & y_bits else b.or_(x, y), x_bits | y_bits))
        terms = joined + terms[len(joined) * 2 :]
    return terms[0][0]


def const_i32(n: int) -> ir.Constant:
    return ir.Constant(I32, int(n))


def const_i64(n: int) -> ir.Constant:
    return ir.Constant(I64, int(n))


__all__ = ["CudaLowering", "GTile", "lower", "LOWERINGS", "LoweringBug", "gpu_type", "memory_type", "I1"]
