# ruff: noqa: E501  (the docstring example spells whole layouts)
"""Put every tensor-core dot on its instruction: ``mma.sync m16n8k16`` operands, or Hopper's ``wgmma``.

Why: ``mma.sync`` reads its A and B operands from registers in a fixed pattern (the
*dot-operand* layouts of the accumulator's mma layout: lane ``t`` holds rows ``t//4``
and ``t//4 + 8`` of A, ...). A loaded tile has a blocked layout made for coalesced
loads, so each operand needs one conversion; as an explicit ``ttg.convert_layout``
it is visible in the IR (and in the shared-memory view), and the backend's dot finds
its fragments already in place. The conversion sits right before the dot (kept in
registers across a loop, attention's converted ``q`` made ptxas spill); where its operand
is loop-invariant, ``convert-through-shared`` stores it before the loop and reads it in
the loop. An operand that is itself a conversion is converted from its source instead.

The accumulator's mma layout itself is chosen by ``assign-layouts`` (it propagates
backward to the ``tl.zeros`` and the loop-carried accumulator); this pass only
touches dots whose accumulator already has one.

before:
    tt.func @k() {
      %0 = arith.constant {value = 1.0} : tensor<32x16xf16, #blocked<sizePerThread=[1, 4], threadsPerWarp=[8, 4], warpsPerCTA=[4, 1], order=[1, 0]>>
      %1 = arith.constant {value = 1.0} : tensor<16x32xf16, #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      %2 = arith.constant {value = 0.0} : tensor<32x32xf32, #mma<m16n8k16, warpsPerCTA=[2, 2]>>
      %3 = tt.dot %0, %1, %2 : tensor<32x32xf32, #mma<m16n8k16, warpsPerCTA=[2, 2]>>
      tt.return
    }
after:
    tt.func @k() {
      %0 = arith.constant {value = 1.0} : tensor<32x16xf16, #blocked<sizePerThread=[1, 4], threadsPerWarp=[8, 4], warpsPerCTA=[4, 1], order=[1, 0]>>
      %1 = arith.constant {value = 1.0} : tensor<16x32xf16, #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      %2 = arith.constant {value = 0.0} : tensor<32x32xf32, #mma<m16n8k16, warpsPerCTA=[2, 2]>>
      %3 = ttg.convert_layout %0 : tensor<32x16xf16, #dot_op<opIdx=0, parent=#mma<m16n8k16, warpsPerCTA=[2, 2]>, kWidth=2>>
      %4 = ttg.convert_layout %1 : tensor<16x32xf16, #dot_op<opIdx=1, parent=#mma<m16n8k16, warpsPerCTA=[2, 2]>, kWidth=2>>
      %5 = tt.dot %3, %4, %2 : tensor<32x32xf32, #mma<m16n8k16, warpsPerCTA=[2, 2]>>
      tt.return
    }

Hopper (``options_of(module).arch == "sm_90a"``, the ``a`` unlocks wgmma; unless the
``wgmma`` option is off, ``TILELAB_CUDA_WGMMA=0``: see ``use_wgmma``): a warpgroup of four warps multiplies a 64
x N tile by reading A and B *straight from shared memory*, through 64-bit matrix
descriptors, at about twice mma.sync's rate. So for f16/bf16 dots with ``num_warps`` a
multiple of 4, M a multiple of 64 and N split into warpgroup tiles of 16 to 256 columns, the
accumulator's layout (and every value that shares it: the loop-carried accumulator, its
``tl.zeros``, the epilogue; slices of it) becomes ``#wgmma``; A is stored K-major and B
N-major (K-major where it was loaded K-contiguous) into ``#nvmma_shared`` buffers (the
swizzled layouts the descriptors can address); a ``ttng.fence_async_shared`` makes those
ordinary stores visible to the tensor cores' async proxy, and the dot becomes
``ttng.warp_group_dot``. A 16-bit A computed in registers from an accumulator (attention's
``p``) skips the buffer where it can: ``register_a_layout``. A tile that dots read both as is
and transposed (attention's backward: ``q`` and ``tl.trans(q)``) is stored once, the transposed
reads going through a ``ttg.memdesc_trans`` view (``operand_view``). On other architectures (sm_80,
sm_86, sm_89, plain sm_90) or shapes, the mma.sync path above stays.

before (arch=sm_90a, num_warps=4):
    tt.func @k() {
      %0 = arith.constant {value = 1.0} : tensor<64x32xf16, #blocked<sizePerThread=[1, 4], threadsPerWarp=[8, 4], warpsPerCTA=[4, 1], order=[1, 0]>>
      %1 = arith.constant {value = 1.0} : tensor<32x64xf16, #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      %2 = arith.constant {value = 0.0} : tensor<64x64xf32, #mma<m16n8k16, warpsPerCTA=[2, 2]>>
      %3 = tt.dot %0, %1, %2 : tensor<64x64xf32, #mma<m16n8k16, warpsPerCTA=[2, 2]>>
      tt.return
    }
after:
    tt.func @k() {
      %0 = arith.constant {value = 1.0} : tensor<64x32xf16, #blocked<sizePerThread=[1, 4], threadsPerWarp=[8, 4], warpsPerCTA=[4, 1], order=[1, 0]>>
      %1 = arith.constant {value = 1.0} : tensor<32x64xf16, #blocked<sizePerThread=[1, 4], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      %2 = arith.constant {value = 0.0} : tensor<64x64xf32, #wgmma<warpsPerCTA=[4, 1], instrShape=[64, 64, 16]>>
      %3 = ttg.local_alloc : tensor<64x32xf16, #nvmma_shared<swizzle=64B, elemBytes=2, order=[1, 0]>>
      ttg.local_store %3, %0 : tensor<64x32xf16, #nvmma_shared<swizzle=64B, elemBytes=2, order=[1, 0]>>
      %4 = ttg.local_alloc : tensor<32x64xf16, #nvmma_shared<swizzle=128B, elemBytes=2, order=[1, 0]>>
      ttg.local_store %4, %1 : tensor<32x64xf16, #nvmma_shared<swizzle=128B, elemBytes=2, order=[1, 0]>>
      ttng.fence_async_shared
      %5 = ttng.warp_group_dot %3, %4, %2 : tensor<64x64xf32, #wgmma<warpsPerCTA=[4, 1], instrShape=[64, 64, 16]>>
      tt.return
    }
"""

from __future__ import annotations

from tilelab.compiler.ir.core import Block, FuncOp, Module, Op, Value
from tilelab.compiler.ir.ops import (
    ConvertLayoutOp,
    DotOp,
    FenceAsyncSharedOp,
    ForOp,
    LocalAllocOp,
    LocalStoreOp,
    MemDescTransOp,
    TransOp,
)
from tilelab.compiler.ir.ops.gpu import WarpGroupDotOp
from tilelab.compiler.ir.rewriter import Rewriter
from tilelab.compiler.layouts import (
    WARP,
    LinearLayout,
    dot_operand,
    mma_k_width,
    needed_indices,
    nvmma_shared,
    registers_holding,
    slice_layout,
)
from tilelab.compiler.layouts.distributed import wgmma_accumulator
from tilelab.compiler.options import options_of
from tilelab.compiler.passes.assign_layouts import FP8, collapse, reads_tf32
from tilelab.compiler.passes.convert_through_shared import permuted, stored_order

NAME = "accelerate-dot"


def operand_layouts(op: DotOp) -> tuple[LinearLayout, LinearLayout] | None:
    """The A and B fragment layouts ``op`` needs, or None when its accumulator is not an mma layout."""
    acc = op.operands[2].type.layout
    if acc is None or acc.params.get("kind") != "mma" or acc.params.get("version") == 3:
        return None
    a = op.operands[0].type
    k, kw = a.shape[-1], mma_k_width(a.element.itemsize)
    return dot_operand(acc, 0, kw, k=k), dot_operand(acc, 1, kw, k=k)


def insert_conversion(dot: DotOp, v, layout: LinearLayout):
    """A ``convert_layout`` of ``v`` to ``layout``, inserted right before ``dot``.

    When ``v`` is itself a conversion (``assign-layouts`` gave the operand the dot's blocked
    wish, away from its load's coalesced layout), the new one converts its source instead:
    one trip through shared memory, not two (``run`` drops the skipped one when unused).
    """
    if isinstance(v.defining_op, ConvertLayoutOp):
        v = v.defining_op.src
    return Rewriter.insert_before(dot, ConvertLayoutOp(v, v.type.with_layout(layout), loc=dot.loc)).result


def drop_unused_conversions(module: Module) -> None:
    """Remove the ``convert_layout`` (and ``tt.trans``) ops nothing reads any more, last ones first."""
    for op in reversed([op for op in module.walk() if isinstance(op, (ConvertLayoutOp, TransOp))]):
        if not op.result.has_uses():
            Rewriter.erase(op)


#: architectures with ``wgmma.mma_async`` (PTX requires the arch-specific ``sm_90a`` target)
WGMMA_ARCHS = ("sm_90a",)


def operands_fit(op: DotOp) -> bool:
    """Whether wgmma can read ``op``'s operands: 2-d tiles of one 16- or 8-bit type, or f32 in tf32."""
    a, b = op.operands[0].type, op.operands[1].type
    types = ("f16", "bf16", "i8", *FP8)
    fits = a.element.name in types or reads_tf32(op)
    return a.element == b.element and fits and len(op.operands[2].type.shape) == 2


def wgmma_layout(op: DotOp, arch: str | None) -> LinearLayout | None:
    """The ``#wgmma`` accumulator for ``op`` on ``arch``, or None where mma.sync stays.

    Warpgroups stack along M while M splits into 64-row tiles for each, the rest go along N;
    one instruction covers up to 256 columns (wider tiles repeat it).
    """
    acc = op.operands[2].type.layout
    if arch not in WGMMA_ARCHS or acc is None or acc.params.get("kind") != "mma" or not operands_fit(op):
        return None
    if acc.params.get("version") == 3:
        return acc  # another dot with the same accumulator layout was converted first
    (m, n), k = acc.shape, op.operands[0].type.shape[-1]
    num_warps = 1 << len(acc.in_bases(WARP))
    if num_warps % 4 or m % 64 or k % (32 // op.operands[0].type.element.itemsize):  # an instruction's K
        return None
    groups_m = num_warps // 4
    while groups_m > 1 and m % (64 * groups_m):
        groups_m //= 2
    groups_n = num_warps // 4 // groups_m
    instr_n = min(256, n // groups_n)
    if instr_n < 16:
        return None
    return wgmma_accumulator([m, n], [4 * groups_m, groups_n], instr_n)


def operand_shared(t, instr_n: int | None = None) -> LinearLayout:
    """The ``#nvmma_shared`` buffer of a wgmma operand: A K-major; B N-major, or K-major when loaded so.

    A is stored row-major (a row holds K). B is stored row-major (N-major) unless its tile
    is laid out with K fastest (``stored_order`` ``(0, 1)``: ``k`` of attention's ``q @ k``
    loaded K-contiguous, ``x @ w.T``): then column-major, K-major, so that its stores (or the
    pipeline's ``cp.async``) write 16 contiguous bytes and the instruction reads it with
    ``imm-trans-b = 0``. The swizzle is the widest (up to 128 bytes) whose atom fits the
    stored row; for an N-major B it must also fit one instruction's N (``instr_n``), so that
    every instruction starts on an atom.
    """
    elem_bytes = t.element.itemsize
    k_major = t.layout is not None and stored_order(t.layout) == (0, 1)
    if instr_n is not None and (k_major or elem_bytes != 2):  # 8- and 32-bit B: wgmma reads it K-major only
        return nvmma_shared(t.shape, elem_bytes, min(128, t.shape[0] * elem_bytes), [0, 1])
    width = t.shape[1] if instr_n is None else min(t.shape[1], instr_n)
    return nvmma_shared(t.shape, elem_bytes, min(128, width * elem_bytes), [1, 0])


def retype(func: FuncOp, old: LinearLayout, new: LinearLayout) -> None:
    """Give every value of ``func`` laid out as ``old`` the layout ``new``; likewise for their slices and broadcasts.

    Layouts compare as maps: a row statistic of the accumulator (``tl.max(s, 1)``) has the
    slice of ``old``, and its ``[:, None]`` the collapse of ``old`` along N, whatever their names.
    """
    pairs = [(old, new)]
    for dim in range(old.rank):
        pairs += [(slice_layout(old, dim), slice_layout(new, dim)), (collapse(old, [dim]), collapse(new, [dim]))]

    def mapped(layout):
        return next((n for o, n in pairs if layout is not None and layout == o), None)

    for op in func.walk():
        values = list(op.results) + [a for r in op.regions for blk in r.blocks for a in blk.args]
        for v in values:
            layout = mapped(v.type.layout) if v.type.is_tensor else None
            if layout is not None:
                v.type = v.type.with_layout(layout)


def outermost_invariant_loop(op: Op, v: Value) -> ForOp | None:
    """The outermost loop around ``op`` that ``v`` is defined outside of (None: no such loop)."""
    found, loop = None, _enclosing_op(op.parent)
    while isinstance(loop, ForOp) and not _defined_inside(v, loop):
        found, loop = loop, _enclosing_op(loop.parent)
    return found


def _enclosing_op(block: Block | None) -> Op | None:
    """The op whose region holds ``block`` (None at a function's body)."""
    region = block.parent if block is not None else None
    return region.parent if region is not None else None


def _defined_inside(v: Value, loop: ForOp) -> bool:
    block = v.owner if isinstance(v.owner, Block) else v.owner.parent
    while block is not None:
        if block is loop.body:
            return True
        op = _enclosing_op(block)
        block = op.parent if op is not None else None
    return False


def _unconverted(v: Value) -> Value:
    """``v`` with the ``convert_layout`` ops that produce it skipped (they move elements, not values)."""
    while isinstance(v.defining_op, ConvertLayoutOp):
        v = v.defining_op.src
    return v


def stored_value(v: Value, is_a: bool = False) -> Value:
    """The registers to store for the wgmma operand ``v``: its source before conversions and transposes.

    A conversion is skipped (the store into shared memory converts anyway). A ``tt.trans``
    (``dq += ds @ tl.trans(k)``) whose source sits in another layout becomes a *free* one: a
    new ``tt.trans`` of the unconverted source, laid out as that source's layout with the dims
    permuted (every thread keeps its elements). Stored as is, the transposed tile took a trip
    through a shared buffer and then 2-byte stores into the operand buffer (its registers ran
    along the wrong dim); the free transpose keeps the loaded tile's 16-byte runs, and
    ``operand_shared`` picks the buffer order they write whole. A is always stored K-major, so
    an A whose free transpose runs along M keeps the conversion.
    """
    v = _unconverted(v)
    trans = v.defining_op
    if not isinstance(trans, TransOp):
        return v
    src = _unconverted(trans.src)
    if src.type.layout is None:
        return v
    free = permuted(src.type.layout, trans.attrs["order"])
    if (src is trans.src and free == v.type.layout) or (is_a and stored_order(free) != (1, 0)):
        return v  # already free, or A that would be written element by element
    new = TransOp(src, v.type.with_layout(free), loc=trans.loc, **trans.attrs)
    return Rewriter.insert_before(trans, new).result


def register_a_layout(dot: DotOp) -> LinearLayout | None:
    """The A fragment layout when wgmma can read ``dot``'s A from registers, else None.

    wgmma takes a 16-bit A either through a shared-memory descriptor or as four 32-bit
    registers per thread. Registers pay where A is computed in registers from an mma
    accumulator (attention's ``p = exp2(qk - m)``, a chained ``(x @ w1) @ w2``): its
    ``#wgmma`` pattern is the A fragment's (``layouts.wgmma_a_fragment``), so the conversion
    moves nothing between threads, where shared memory costs a store, a fence and a barrier
    per iteration. It applies only when that conversion stays in every thread's registers
    (the source's warpgroups do not split its columns); a loaded A keeps its shared buffer
    (and its asynchronous copies).
    """
    a = dot.operands[0]
    if isinstance(a.defining_op, ConvertLayoutOp):
        a = a.defining_op.src
    src, acc = a.type.layout, dot.operands[2].type.layout
    if src is None or src.params.get("kind") != "mma" or a.type.element.itemsize != 2:
        return None
    fragment = dot_operand(acc, 0, k=a.type.shape[-1])
    num_warps = 1 << len(acc.in_bases(WARP))
    if (1 << len(src.in_bases(WARP))) != num_warps:
        return None
    needed = needed_indices(fragment, num_warps, lambda i: i)
    return fragment if registers_holding(src, needed, num_warps) is not None else None


def untransposed_shared(view: LinearLayout, order, shape, elem_bytes: int) -> LinearLayout | None:
    """The ``#nvmma_shared`` buffer of shape ``shape`` whose ``memdesc_trans`` by ``order`` is ``view``, or None.

    The view's bytes are the buffer's: its fastest dim is the buffer's dim ``order[...]`` of the same
    extent, with the same swizzle. None when no such buffer maps the bytes alike (checked as maps).
    """
    p = view.params
    if p.get("kind") != "nvmma_shared":
        return None
    back = [int(order[d]) for d in p["order"]]
    try:
        layout = nvmma_shared(list(shape), elem_bytes, int(p["swizzle_bytes"]), back)
    except ValueError:
        return None
    return layout if permuted(layout, order) == view else None


class OperandBuffers:
    """The operand buffers ``accelerate-dot`` made in one function: a tile two dots read is stored once.

    Keyed by the stored value and its buffer layout; a buffer is shared when the new user's store
    would go in the same block (a dot later in that block, or a dot of the same loop hoisting it).
    """

    def __init__(self):
        self.made: list[tuple[Value, LinearLayout, Block, Value]] = []

    def get(self, dot: DotOp, value: Value, layout: LinearLayout) -> tuple[Value, list[Op]]:
        """The buffer holding ``value`` laid out as ``layout``, and the ops to insert before ``dot`` (if new)."""
        outside = outermost_invariant_loop(dot, value)
        block = dot.parent if outside is None else outside.parent
        for v, lay, blk, buf in self.made:
            if v is value and blk is block and lay == layout:
                return buf, []
        alloc = LocalAllocOp(value.type.with_layout(layout), loc=dot.loc)
        store = LocalStoreOp(alloc.result, value, loc=dot.loc)
        self.made.append((value, layout, block, alloc.result))
        if outside is None:
            return alloc.result, [alloc, store]
        at = outside.parent.ops.index(outside)  # attention's q: stored once before the loop, not in every iteration
        outside.parent.insert(at, alloc)
        outside.parent.insert(at + 1, store)
        return alloc.result, []


def operand_view(dot: DotOp, v: Value, layout: LinearLayout, buffers: OperandBuffers) -> tuple[Value, list[Op]]:
    """The shared operand holding ``v`` laid out as ``layout``, and the ops to insert before ``dot``.

    A free transpose (``tl.trans(q)`` of a tile another dot reads as ``q``) is not stored on its
    own: its source is stored (in the buffer whose transpose is ``layout``) and read through a
    ``ttg.memdesc_trans`` view. The two dots then share one buffer, and a loaded source whose only
    user is that store can be copied asynchronously by ``software-pipeline``.
    """
    trans = v.defining_op
    if isinstance(trans, TransOp) and trans.src.type.layout is not None:
        order = trans.attrs["order"]
        if permuted(trans.src.type.layout, order) == v.type.layout:
            back = untransposed_shared(layout, order, trans.src.type.shape, v.type.element.itemsize)
            if back is not None:
                buf, new = buffers.get(dot, trans.src, back)
                view = MemDescTransOp(buf, v.type.with_layout(layout), order, loc=dot.loc)
                return view.result, [*new, view]
    return buffers.get(dot, v, layout)


def to_warp_group_dot(func: FuncOp, dot: DotOp, buffers: OperandBuffers | None = None) -> WarpGroupDotOp:
    """Replace ``dot`` by operand buffers, a proxy fence and a ``ttng.warp_group_dot``.

    An operand that is a ``convert_layout`` is stored from its source: the store into shared
    memory converts anyway, and the source's layout (a load's, made for its addresses) picks
    the buffer's order (``operand_shared``). The conversion, unused, is dropped by ``run``.
    A transposed operand is stored from a free transpose of its source (``stored_value``), or
    read through a transposed view of its source's buffer (``operand_view``).
    An A that ``register_a_layout`` accepts is converted to the A fragment instead, no buffer.
    """
    buffers = OperandBuffers() if buffers is None else buffers
    loc = dot.loc
    instr_n = dot.operands[2].type.layout.params["instr_shape"][1]
    operands: list[Value] = []
    new_ops = []
    a_fragment = register_a_layout(dot)
    if a_fragment is not None:  # attention's p: straight from the registers it was computed in
        operands.append(insert_conversion(dot, dot.operands[0], a_fragment))
    for v, n in ((dot.operands[0], None), (dot.operands[1], instr_n))[len(operands) :]:
        v = stored_value(v, is_a=n is None)
        buf, ops = operand_view(dot, v, operand_shared(v.type, n), buffers)
        new_ops += ops
        operands.append(buf)
    wgd = WarpGroupDotOp(*operands, dot.operands[2], dot.clone_attrs(), loc=loc)
    new_ops += [FenceAsyncSharedOp(loc=loc), wgd]
    for new in new_ops:
        Rewriter.insert_before(dot, new)
    Rewriter.replace_op(dot, wgd)
    return wgd


def use_wgmma(module: Module) -> bool:
    """Turn every dot that fits into a ``ttng.warp_group_dot`` (Hopper; see the module docstring).

    The ``wgmma`` option (on unless ``TILELAB_CUDA_WGMMA=0``) keeps mma.sync at hand to compare:
    on an H200 wgmma takes the 4096^3 f16 matmul from 336 to 479 TFLOP/s and attention from
    259 to 300 (``benchmarks/gpu.py``).
    """
    changed = False
    options = options_of(module)
    arch = options.arch if options.wgmma else None
    for func in module.funcs:
        buffers = OperandBuffers()
        for op in [op for op in func.walk() if isinstance(op, DotOp)]:
            layout = wgmma_layout(op, arch)
            if layout is None:
                continue
            if op.operands[2].type.layout.params.get("version") != 3:
                retype(func, op.operands[2].type.layout, layout)
            to_warp_group_dot(func, op, buffers)
            changed = True
    return changed


def run(module: Module) -> bool:
    """Hopper dots become ``warp_group_dot``; the other mma dots get their A and B fragment layouts."""
    changed = use_wgmma(module)
    for op in [op for op in module.walk() if isinstance(op, DotOp)]:
        wanted = operand_layouts(op)
        if wanted is None:
            continue
        for index, layout in enumerate(wanted):
            v = op.operands[index]
            if v.type.layout == layout:
                continue
            op.operands[index] = insert_conversion(op, v, layout)
            changed = True
    if changed:
        drop_unused_conversions(module)
    return changed
