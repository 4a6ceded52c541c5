# ruff: noqa: E501  (the docstring example spells whole layouts)
"""Give every tile a GPU layout: which register of which lane of which warp holds each element.

Why: the tile IR says *what* a kernel computes on whole tiles; a GPU runs it as
``32 * num_warps`` threads, each holding a few elements. The layout, attached to each
tensor type, fixes that split, and everything after (coalescing, lowering) reads it.

How, in two walks:

1. backwards, each op states the layout it would like its operands to have, so that it
   needs no data movement: ``expand_dims`` wants a *slice* of its result's layout,
   ``broadcast`` wants its result's layout with the broadcast dims collapsed,
   elementwise ops pass their result's wish on to their operands, and a loop-carried tile
   wishes what its next value is computed from elementwise (``acc + tl.dot(a, b)``: the dot's
   layout), so that the loop carries it in that layout;
2. forwards, each result takes its layout: a reduction gives the slice of its operand's
   layout, ``expand_dims`` of a slice gives back the parent, elementwise ops take their
   operands' layout (a computed data operand's before a mask's: in ``tl.where(keep, qk, -inf)``
   the mask is an index tile, cheap to build again in ``qk``'s layout, ``qk`` is not); where
   an operand's layout differs, a ``ttg.convert_layout`` is inserted in front of the user;
   ``join`` pairs its operands in each thread's registers, ``split`` and ``reshape`` keep every
   element in the thread and register that holds it (``layouts.joined_layout``...), as Triton's do;
   ``gather``'s result takes its index's layout (each element read where its index is).
   Other tiles take the wished layout, or the default one for their shape (``tile_layout``:
   consecutive elements per thread along the last dim, lanes then warps row-major). A thread
   holds as many consecutive elements as every global access of that shape moves in one
   instruction (``access_vectors``: 16 bytes where addresses and masks allow, one element
   where they do not), so the lanes of a warp instruction always touch consecutive vectors.

``num_warps`` and the lanes of a warp come from the module's options (``options_of(module).num_warps``,
``.warp_size``: 64 on an AMD wavefront, where dots keep blocked layouts: no ``mma.sync``).

before:
    tt.func @k(%x: !ptr<i32>) {
      %0 = tt.make_range {start = 0, end = 256} : tensor<256xi32>
      %1 = tt.splat %x : tensor<256x!ptr<i32>>
      %2 = tt.addptr %1, %0 : tensor<256x!ptr<i32>>
      tt.store %2, %0 : tensor<256x!ptr<i32>>
      tt.return
    }
after:
    tt.func @k(%x: !ptr<i32>) {
      %0 = tt.make_range {start = 0, end = 256} : tensor<256xi32, #blocked<sizePerThread=[2], threadsPerWarp=[32], warpsPerCTA=[4], order=[0]>>
      %1 = tt.splat %x : tensor<256x!ptr<i32>, #blocked<sizePerThread=[2], threadsPerWarp=[32], warpsPerCTA=[4], order=[0]>>
      %2 = tt.addptr %1, %0 : tensor<256x!ptr<i32>, #blocked<sizePerThread=[2], threadsPerWarp=[32], warpsPerCTA=[4], order=[0]>>
      tt.store %2, %0 : tensor<256x!ptr<i32>, #blocked<sizePerThread=[2], threadsPerWarp=[32], warpsPerCTA=[4], order=[0]>>
      tt.return
    }
"""

from __future__ import annotations

from tilelab.compiler.analysis import axis_info
from tilelab.compiler.analysis.memory_access import vector_width
from tilelab.compiler.ir.core import Block, Module, Op, Value
from tilelab.compiler.ir.ops import (
    BroadcastOp,
    ConditionOp,
    ConvertLayoutOp,
    DotOp,
    ExpandDimsOp,
    ForOp,
    GatherOp,
    HistogramOp,
    IfOp,
    JoinOp,
    LoadOp,
    ReduceOp,
    ReshapeOp,
    SplitOp,
    StoreOp,
    WhileOp,
    YieldOp,
)
from tilelab.compiler.ir.rewriter import Rewriter
from tilelab.compiler.ir.traits import LayoutFree, SameLayout, SameOperandsAndResultType, Uniform
from tilelab.compiler.layouts import (
    LANE,
    REGISTER,
    WARP,
    LinearLayout,
    blocked,
    joined_layout,
    mma_m16n8k16_accumulator,
    reshaped_layout,
    slice_layout,
    split_layout,
)
from tilelab.compiler.options import options_of

NAME = "assign-layouts"


def tile_layout(shape, num_warps: int, vec: int = 4, order=None, warp_size: int = 32) -> LinearLayout:
    """The default layout of a tile: blocked, up to ``vec`` consecutive elements per thread.

    ``order`` lists dims fastest first (row-major ``[rank-1, ..., 0]`` by default):
    a thread's elements, then lanes, then warps go along the fastest dim first.
    ``warp_size`` is the lanes of a warp (``CompileOptions.warp_size``: 64 for an AMD wavefront).

    >>> str(tile_layout([1024], 4))
    '#blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[4], order=[0]>'
    >>> str(tile_layout([1024], 4, warp_size=64))
    '#blocked<sizePerThread=[4], threadsPerWarp=[64], warpsPerCTA=[4], order=[0]>'
    """
    shape = [int(s) for s in shape]
    rank = len(shape)
    order = list(order) if order is not None else list(range(rank))[::-1]
    fast = order[0]
    numel = 1
    for s in shape:
        numel *= s
    spt = [1] * rank
    spt[fast] = max(1, min(vec, shape[fast], numel // (warp_size * num_warps)))
    tpw, wpc = [1] * rank, [1] * rank
    lanes, warps = warp_size, num_warps
    for d in order:
        tpw[d] = max(1, min(lanes, shape[d] // spt[d]))
        lanes //= tpw[d]
    tpw[fast] *= lanes  # lanes left over hold copies
    for d in reversed(order):
        wpc[d] = max(1, min(warps, shape[d] // (spt[d] * tpw[d])))
        warps //= wpc[d]
    wpc[order[-1]] *= warps
    return blocked(shape, spt, tpw, wpc, order)


def warp_split(m: int, n: int, num_warps: int) -> tuple[int, int]:
    """Warps along M and N for an ``m x n`` mma accumulator: double the side with more 16x16 blocks per warp.

    >>> warp_split(128, 128, 8)
    (4, 2)
    >>> warp_split(16, 128, 4)
    (1, 4)
    """
    wm, wn = 1, 1
    while wm * wn < num_warps:
        if m // (16 * wm) >= n // (16 * wn) and m >= 32 * wm:
            wm *= 2
        elif n >= 16 * wn:
            wn *= 2
        elif m >= 32 * wm:
            wm *= 2
        else:
            wn *= 2
    return wm, wn


def chained_dots(module: Module) -> set[DotOp]:
    """Dots whose result feeds (through pure ops of the same block) the A operand of another dot, and that dot.

    Attention's ``p = exp(q @ k - m)`` then ``p @ v`` is the example: when each warp owns
    whole rows of ``p``, its accumulator fragments become the next dot's A fragments
    without crossing warps, so such dots split warps along M only.
    """
    found: set[DotOp] = set()
    for op in module.walk():
        if not isinstance(op, DotOp):
            continue
        todo, seen = [op.operands[0]], set()
        while todo:
            d = todo.pop().defining_op
            if d is None or id(d) in seen or d.parent is not op.parent:
                continue
            seen.add(id(d))
            if isinstance(d, DotOp):
                found.update((d, op))
            elif d.pure and not d.regions:
                todo.extend(d.operands)
    return found


#: 8-bit float operands: only Hopper's wgmma multiplies them (``wgmma`` below)
FP8 = ("fp8e4nv", "fp8e5")


def reads_tf32(op: DotOp) -> bool:
    """Whether ``op`` multiplies f32 tiles in tf32 (``input_precision="tf32"``, ``tl.dot``'s default for f32)."""
    a = op.operands[0].type
    return a.element.name == "f32" and op.attrs.get("input_precision") == "tf32"


def mma_layout(op: DotOp, num_warps: int, chained: bool = False, wgmma: bool = False) -> LinearLayout | None:
    """The ``mma.sync`` accumulator layout for a 2-d or batched 3-d dot, or None where the dot stays an FMA loop.

    f16/bf16 into f32 (``m16n8k16``), f32 in tf32 (``m16n8k8``) and int8 into i32
    (``m16n8k32``): the accumulator's layout is the same for all three. Warps split the tile
    so each warp's own part stays close to square (``warp_split``): a warp reads
    ``K x (rows + columns)`` operand elements per dot, least for a square part. With
    ``wgmma`` (the target has it) an fp8 dot whose shape wgmma takes (M a multiple of 64, K of
    32, whole warpgroups) gets it too: ``accelerate-dot`` turns it into a wgmma (mma.sync has
    no fp8 form before sm_89, and this path does not use it).
    """
    a, b, c = (v.type for v in op.operands)
    integer = a.element.name == "i8" and c.element.name == "i32"
    if len(c.shape) not in (2, 3) or (c.element.name != "f32" and not integer) or a.element != b.element:
        return None
    if a.element.name in FP8:
        if not wgmma or num_warps % 4 or len(c.shape) != 2 or c.shape[0] % 64 or a.shape[-1] % 32:
            return None
    elif a.element.name not in ("f16", "bf16") and not reads_tf32(op) and not integer:
        return None
    *batch, m, n = c.shape
    k = a.shape[-1]
    wb = [min(num_warps, batch[0])] if batch else []  # a batched dot: warps take whole batches first
    wm, wn = warp_split(m, n, num_warps // (wb[0] if wb else 1))
    if chained and m >= 16 * wm * wn:
        wm, wn = wm * wn, 1
    if m < 16 * wm or n < 8 * wn or k < 32 // a.element.itemsize:  # one instruction's K: 32 bytes
        return None
    return mma_m16n8k16_accumulator(c.shape, [*wb, wm, wn])


def collapse(layout: LinearLayout, dims) -> LinearLayout:
    """``layout`` with the coordinates along ``dims`` dropped to size 1 (what a broadcast source holds).

    The threads keep the same rows: broadcasting the result back needs no data movement.
    """
    shape = [1 if d in dims else s for d, s in enumerate(layout.shape)]
    bases = {}
    for in_dim, vectors in layout.bases:
        kept = [[0 if d in dims else c for d, c in enumerate(v)] for v in vectors]
        bases[in_dim] = [v for v in kept if any(v)] if in_dim == REGISTER else kept
    return LinearLayout(bases, shape)


class _Assigner:
    def __init__(self, num_warps: int, vectors: dict, chained: set, wgmma: bool = False, warp_size: int = 32):
        self.num_warps = num_warps
        self.warp_size = warp_size
        self.wgmma = wgmma
        self.chained = chained
        self.vectors = vectors
        self.want: dict[Value, LinearLayout] = {}
        self.changed = False

    # ---------------------------------------------------------------- wishes (backwards)
    def wish(self, block: Block) -> None:
        for op in reversed(block.ops):
            for region in op.regions:
                for b in region.blocks:
                    self.wish(b)
            self.wish_op(op)

    def mma(self, op: DotOp) -> LinearLayout | None:
        """The mma accumulator layout of ``op`` (NVIDIA's 32-lane ``mma.sync`` only; None for other warp sizes)."""
        if self.warp_size != 32:
            return None
        return mma_layout(op, self.num_warps, op in self.chained, self.wgmma)

    def wanted(self, v: Value) -> LinearLayout:
        shape = tuple(v.type.shape)
        return self.want.get(v) or tile_layout(
            shape, self.num_warps, self.vectors.get(shape, 4), warp_size=self.warp_size
        )

    def wish_op(self, op: Op) -> None:
        if isinstance(op, DotOp):
            layout = self.mma(op)
            if layout is not None:
                self.want.setdefault(op.result, layout)
                self.want.setdefault(op.operands[2], layout)
        elif isinstance(op, ForOp):
            term = op.body.terminator
            for arg, init, out in zip(op.body.args[1:], op.init_args, term.operands if term else []):
                if arg not in self.want:  # carried as it is made: a dot's sum plus the carried value, say
                    layout = self.made_in(out)
                    if layout is not None:
                        self.want[arg] = layout
                if arg in self.want:
                    self.want.setdefault(init, self.want[arg])
        elif isinstance(op, ExpandDimsOp) and op.src.type.is_tensor:
            self.want.setdefault(op.src, slice_layout(self.wanted(op.result), op.attrs["axis"]))
        elif isinstance(op, BroadcastOp) and op.src.type.is_tensor:
            dims = [d for d, (a, b) in enumerate(zip(op.src.type.shape, op.result.type.shape)) if a != b]
            self.want.setdefault(op.src, collapse(self.wanted(op.result), dims))
        elif op.has_trait(SameLayout) and op.results and op.results[0] in self.want:
            result = op.results[0]
            for v in op.operands:
                if v.type.is_tensor and v.type.shape == result.type.shape:
                    self.want.setdefault(v, self.want[result])

    def made_in(self, v: Value) -> LinearLayout | None:
        """The layout wished for a tile that ``v`` is computed from through elementwise ops of its shape (the
        first found, None if none): in ``acc = acc + tl.dot(a, b)`` (a split dot's sums, a rescaled accumulator)
        the dot's, so that the loop carries ``acc`` in it instead of converting it twice an iteration."""
        todo, seen = [v], set()
        while todo:
            v = todo.pop()
            if v in self.want:
                return self.want[v]
            d = v.defining_op
            if d is None or id(d) in seen or not d.has_trait(SameLayout):
                continue
            seen.add(id(d))
            todo.extend(x for x in d.operands if x.type.is_tensor and x.type.shape == v.type.shape)
        return None

    # ---------------------------------------------------------------- layouts (forwards)
    def assign(self, block: Block) -> None:
        for op in list(block.ops):
            self.assign_op(block, op)

    def set(self, v: Value, layout: LinearLayout) -> None:
        if v.type.is_tensor and v.type.layout != layout:
            v.type = v.type.with_layout(layout)
            self.changed = True

    def fresh(self, v: Value) -> None:
        if v.type.is_tensor and v.type.layout is None:
            self.set(v, self.wanted(v))

    def assign_op(self, block: Block, op: Op) -> None:
        if isinstance(op, ForOp):
            self.carried(op, op.body, op.init_args, op.body.args[1:])
        elif isinstance(op, WhileOp):
            self.carried(op, op.before, op.operands, op.before.args)
        elif isinstance(op, IfOp):
            self.branches(block, op)
        elif isinstance(op, ReduceOp):
            self.reduce(block, op)
        elif isinstance(op, ExpandDimsOp):
            self.expand_dims(op)
        elif op.has_trait(SameLayout):
            self.elementwise(block, op)
        elif op.has_trait(SameOperandsAndResultType) and op.results and op.operands[0].type.is_tensor:
            for r in op.results:  # a flip, a sort: the result in its source's layout, as its type says
                self.set(r, op.operands[0].type.layout)
        elif isinstance(op, JoinOp) and op.operands[0].type.is_tensor:
            self.join(block, op)
        elif isinstance(op, (SplitOp, ReshapeOp)):
            self.shape_only(op)
        elif isinstance(op, GatherOp):  # each result element where its index is (the source goes through shared)
            self.set(op.result, op.index.type.layout or self.wanted(op.result))
        elif isinstance(op, HistogramOp):  # counted through shared memory: the mask beside each value
            self.fresh(op.result)
            if op.mask is not None:
                self.convert_operand(block, op, 1, op.src.type.layout)
        elif isinstance(op, DotOp):
            self.set(
                op.result,
                self.want.get(op.result) or self.mma(op) or self.wanted(op.result),
            )
            self.convert_operand(block, op, 2, op.result.type.layout)
        else:
            for r in op.results:
                self.fresh(r)

    def elementwise(self, block: Block, op: Op) -> None:
        tensors = [v for v in op.operands if v.type.is_tensor]
        if not tensors:
            return
        computed = [v for v in tensors if not v.defined_by(Uniform)]
        data = [v for v in computed if getattr(v.type.element, "name", "") != "i1"]
        lead = (data or computed or tensors)[0]  # a mask follows the data it selects, not the other way
        if op.results and op.results[0].type.is_tensor:
            layout = lead.type.layout or self.wanted(op.results[0])
            for r in op.results:
                self.set(r, layout)
        else:
            layout = lead.type.layout
        for i, v in enumerate(op.operands):
            if v.type.is_tensor:
                self.convert_operand(block, op, i, layout)

    def join(self, block: Block, op: JoinOp) -> None:
        """Both tiles in the first one's layout; the result pairs them in each thread's registers."""
        layout = op.operands[0].type.layout
        self.convert_operand(block, op, 1, layout)
        self.set(op.result, joined_layout(layout))

    def shape_only(self, op: Op) -> None:
        """``reshape`` and ``split`` leave each element in the thread and register that holds it, where they can.

        Not for a source made in any layout for free (``make_range``, constants, splats: ``LayoutFree``): the
        result takes the layout of its shape, as a fresh tile does.
        """
        layout = op.operands[0].type.layout
        if op.operands[0].defined_by(LayoutFree):
            layout = None
        if isinstance(op, ReshapeOp):
            derived = reshaped_layout(layout, op.result.type.shape) if layout is not None else None
        else:
            derived = split_layout(layout) if layout is not None else None
        for r in op.results:
            if derived is None:
                self.fresh(r)
            else:
                self.set(r, derived)

    def convert_operand(self, block: Block, op: Op, index: int, layout: LinearLayout) -> None:
        """Make operand ``index`` of ``op`` have ``layout``, through a convert_layout if needed."""
        v = op.operands[index]
        if v.type.layout == layout:
            return
        source = v.defining_op
        if v.defined_by(Uniform):  # cheaper to build again in the new layout
            conv = type(source).create(
                source.operands, [v.type.with_layout(layout)], dict(source.attrs), loc=source.loc
            )
        else:
            conv = ConvertLayoutOp(v, v.type.with_layout(layout), loc=op.loc)
        Rewriter.insert_before(op, conv)
        op.operands[index] = conv.result
        self.changed = True

    def reduce(self, block: Block, op: ReduceOp) -> None:
        axis = op.attrs["axis"]
        for i in range(1, len(op.operands)):  # the operands are reduced together: one layout
            self.convert_operand(block, op, i, op.operands[0].type.layout)
        for r, v in zip(op.results, op.operands):
            if r.type.is_tensor:
                self.set(r, slice_layout(v.type.layout, axis))
        self.assign(op.combine)

    def expand_dims(self, op: ExpandDimsOp) -> None:
        src = op.src.type.layout
        axis = op.attrs["axis"]
        if src is not None and src.params.get("kind") == "slice" and src.params.get("dim") == axis:
            parent = src.params["parent"]
            if tuple(parent.shape) == tuple(op.result.type.shape):
                self.set(op.result, parent)
                return
        self.fresh(op.result)

    def carried(self, op: Op, body: Block, inits, args) -> None:
        """Loop-carried values keep their initial layouts; the yielded values convert to them."""
        for arg, init, res in zip(args, inits, op.results):
            if init.type.is_tensor:
                self.set(arg, init.type.layout)
                self.set(res, init.type.layout)
        for region in op.regions:
            for b in region.blocks:
                self.assign(b)
        if isinstance(op, WhileOp):
            cond = op.before.terminator
            for arg, v, res in zip(op.after.args, cond.operands[1:], op.results):
                self.set(arg, v.type.layout) if v.type.is_tensor else None
                self.set(res, v.type.layout) if v.type.is_tensor else None
            self.assign(op.after)
            self.match_yield(op.after, op.before.args)
        else:
            self.match_yield(body, args)

    def match_yield(self, block: Block, targets) -> None:
        term = block.terminator
        if isinstance(term, (YieldOp, ConditionOp)):
            offset = 1 if isinstance(term, ConditionOp) else 0
            for i, t in enumerate(targets):
                if t.type.is_tensor:
                    self.convert_operand(block, term, i + offset, t.type.layout)

    def branches(self, block: Block, op: IfOp) -> None:
        self.assign(op.then_block)
        self.assign(op.else_block)
        then_yield = op.then_block.terminator
        for r, v in zip(op.results, then_yield.operands if then_yield else []):
            if r.type.is_tensor:
                self.set(r, v.type.layout)
        self.match_yield(op.else_block, op.results)
        self.match_yield(op.then_block, op.results)


def access_vectors(module: Module) -> dict[tuple, int]:
    """Per tile shape, the consecutive elements per thread that every global access of that shape moves at once.

    One access moves up to 16 bytes per thread, as far as its addresses allow: contiguous,
    aligned, and not split by its mask (axis info; ``memory_access.vector_width``, the width
    the lowering picks). A thread holding more consecutive elements than its access moves
    only spreads each warp instruction: ``x + row * stride + cols`` with ``stride`` not a
    multiple of 16 loads one f32 at a time, and with 4 elements per thread the 32 lanes of
    one ``ld.global.b32`` touch 32 x 16 bytes (16 sectors) instead of 128 bytes (4). So a
    shape takes the 16-byte vector of its narrowest type, cut to the width of any access
    that cannot move its own 16 bytes; gathers (no contiguous dim) cut nothing.
    """
    widths: dict[tuple, list[int]] = {}
    vectors: dict[tuple, int] = {}
    for func in module.funcs:
        info = axis_info.analyze(func)
        for op in func.walk():
            if not isinstance(op, (LoadOp, StoreOp)) or not op.ptr.type.is_tensor:
                continue
            shape = tuple(op.ptr.type.shape)
            elem = op.ptr.type.element.pointee
            size = 1 if elem.is_bool else elem.itemsize
            vectors[shape] = max(vectors.get(shape, 1), 16 // max(1, size))
            ptr = info[op.ptr]
            dim = max(range(len(shape)), key=lambda d: (ptr.contiguity[d], d))
            if ptr.contiguity[dim] > 1:
                mask = info[op.mask] if op.mask is not None else None
                width = vector_width(ptr, max(1, size), dim, mask)
                if width < 16 // max(1, size):  # an access short of its 16 bytes
                    widths.setdefault(shape, []).append(width)
    return {shape: min([v, *widths.get(shape, [])]) for shape, v in vectors.items()}


def run(module: Module) -> bool:
    """Attach a layout to every tensor type of the kernel (see the module docstring)."""
    options = options_of(module)
    wgmma = options.arch == "sm_90a" and options.wgmma
    assigner = _Assigner(options.num_warps, access_vectors(module), chained_dots(module), wgmma, options.warp_size)
    for func in module.funcs:
        for arg in func.args:
            assigner.fresh(arg)
        assigner.wish(func.body)
        assigner.assign(func.body)
    return assigner.changed


__all__ = ["NAME", "run", "tile_layout", "collapse", "LANE", "WARP"]
