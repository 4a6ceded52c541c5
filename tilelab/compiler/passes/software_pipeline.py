# ruff: noqa: E501  (the docstring example spells whole types)
"""Software-pipeline the shared-memory operand loads of a loop: copy iteration i+S-1 while computing iteration i.

Why: in ``for k: a = load(ptrs(k)); store a to shared; ldmatrix; mma`` every iteration
waits for its own global loads, so the tensor cores idle for the whole memory latency.
With ``S = num_stages`` (module attr, or the loop's own ``num_stages``; >= 2 turns the pass
on, 3 by default), each such tile gets a *ring* of ``S`` shared buffers. The prologue
starts asynchronous copies (``cp.async``) for the first ``S - 1`` iterations, one commit
group each; every iteration then waits until its own group has landed
(``ttg.async_wait {num = S - 2}``), passes one barrier (which also makes the slot read by
the previous iteration free again), reads its stage, and starts the copy for iteration
``i + S - 1`` into that free slot. Slots are i32 loop-carried values wrapped with a
select. Copies past the loop's end are masked off (``iv < ub``), so the tail needs no
special case; after the loop ``async_wait {num = 0}`` drains them. When the rings and the
kernel's other shared buffers would not fit in the architecture's shared memory, the loop gets
the most stages that do fit (none below 2: it is left unpipelined), as Triton's configs expect.

A load is pipelined when it is a tile load directly in an ``scf.for`` body whose only
user is a ``ttg.local_store`` into a ``ttg.local_alloc`` of the same body, read only by
``ttg.local_load``s or ``ttng.warp_group_dot``s after the store, directly or through
``ttg.memdesc_trans`` views (convert-through-shared and accelerate-dot made these for dot
operands), with ``other`` absent or zero (the copy zero-fills), and when its pointers and
mask depend, inside the loop, only on the induction variable and on values from outside
(the slice is cloned for other iterations). The step must be a positive constant. A free
``tt.trans`` may come between the load and its store (``tl.dot(q, tl.trans(k))`` on the mma.sync
path): the copy then takes the transposed pointers and mask, which move no data.

A gather's tile (a paged KV cache's keys, ``tl.load(k + slot[:, None] * stride + d)`` with
``slot = tl.load(table + n)``) has an index load in its address slice. When nothing in the loop
writes global memory (so no iteration can change the indices a later one reads), the index load
is cloned with the slice, masked off past the loop's end like the copies; and so that no copy
waits for its indices, the loop carries them: the prologue loads those of iteration ``S - 1``,
and iteration ``i`` copies with the carried ones while it loads those of ``i + S``. A load
whose value reaches a ``warp_group_dot`` through register ops (a statistic such as
attention backward's ``lse``, or a tile scaled before it is stored for the dot) is first
staged to match: loaded in a compact layout, stored to a buffer of its own and read back
where it was used (``stage_loads_feeding_dots``; undone when the loop is not pipelined). So are
the loads of a loop where every operand goes through register ops (a tf32x3 dot's operands,
split in registers before they are stored for its three dots).
Other loads (a pointer carried from iteration to iteration, a volatile load) are left as they are.

On sm_90 (``CompileOptions.tma``) the tile of a host tensor descriptor's load is copied by the
Tensor Memory Accelerator instead (``tma_copies.plan`` says when): thread 0 issues one
``ttng.async_tma_copy_global_to_local`` per tile through the descriptor's ``ttng.tensormap``,
at the block offsets cloned for the iteration, and each stage has an mbarrier (initialized
before the loop, one arrival per TMA copy, invalidated after it) that the iteration waits on
(``ttng.wait_barrier``, in a phase that flips each time the read slot wraps) instead of
``async_wait``. A loop with both kinds of copies waits for both.

before:
    tt.func @k(%x: !ptr<f16>, %n: i32) {
      %0 = arith.constant {value = 0} : i32
      %1 = arith.constant {value = 8} : i32
      %2 = tt.splat %x : tensor<8x!ptr<f16>, #blocked<sizePerThread=[8], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      scf.for %i = %0 to %n step %1 {num_stages = 2} {
        %3 = tt.splat %i : tensor<8xi32, #blocked<sizePerThread=[8], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
        %4 = tt.addptr %2, %3 : tensor<8x!ptr<f16>, #blocked<sizePerThread=[8], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
        %5 = tt.load %4 : tensor<8xf16, #blocked<sizePerThread=[8], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
        %6 = ttg.local_alloc : tensor<8xf16, #swizzled_shared<vec=1, perPhase=1, maxPhase=1, order=[0]>>
        ttg.local_store %6, %5 : tensor<8xf16, #swizzled_shared<vec=1, perPhase=1, maxPhase=1, order=[0]>>
        %7 = ttg.local_load %6 : tensor<8xf16, #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
        scf.yield
      }
      tt.return
    }

after:
    tt.func @k(%x: !ptr<f16>, %n: i32) {
      %0 = arith.constant {value = 0} : i32
      %1 = arith.constant {value = 8} : i32
      %2 = tt.splat %x : tensor<8x!ptr<f16>, #blocked<sizePerThread=[8], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %3 = ttg.local_alloc {stages = 2} : tensor<8xf16, #swizzled_shared<vec=1, perPhase=1, maxPhase=1, order=[0]>>
      %4 = arith.cmp lt %0, %n : i1
      %5 = arith.constant {value = 0} : i32
      %6 = tt.splat %0 : tensor<8xi32, #blocked<sizePerThread=[8], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %7 = tt.addptr %2, %6 : tensor<8x!ptr<f16>, #blocked<sizePerThread=[8], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %8 = tt.splat %4 : tensor<8xi1, #blocked<sizePerThread=[8], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
      %9 = ttg.memdesc_index %3, %5 : tensor<8xf16, #swizzled_shared<vec=1, perPhase=1, maxPhase=1, order=[0]>>
      ttg.async_copy_global_to_local %9, %7, %8 : tensor<8xf16, #swizzled_shared<vec=1, perPhase=1, maxPhase=1, order=[0]>>
      ttg.async_commit_group
      %10 = arith.constant {value = 1} : i32
      %11, %12 = scf.for %i = %0 to %n step %1 iter_args(%arg = %5, %arg_1 = %10) -> (i32, i32) {num_stages = 2} {
        ttg.async_wait {num = 0}
        gpu.barrier
        %13 = ttg.memdesc_index %3, %arg : tensor<8xf16, #swizzled_shared<vec=1, perPhase=1, maxPhase=1, order=[0]>>
        %14 = arith.constant {value = 8} : i32
        %15 = arith.add %i, %14 : i32
        %16 = arith.cmp lt %15, %n : i1
        %17 = tt.splat %15 : tensor<8xi32, #blocked<sizePerThread=[8], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
        %18 = tt.addptr %2, %17 : tensor<8x!ptr<f16>, #blocked<sizePerThread=[8], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
        %19 = tt.splat %16 : tensor<8xi1, #blocked<sizePerThread=[8], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
        %20 = ttg.memdesc_index %3, %arg_1 : tensor<8xf16, #swizzled_shared<vec=1, perPhase=1, maxPhase=1, order=[0]>>
        ttg.async_copy_global_to_local %20, %18, %19 : tensor<8xf16, #swizzled_shared<vec=1, perPhase=1, maxPhase=1, order=[0]>>
        ttg.async_commit_group
        %21 = ttg.local_load %13 : tensor<8xf16, #blocked<sizePerThread=[1], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>>
        %22 = arith.constant {value = 1} : i32
        %23 = arith.constant {value = 2} : i32
        %24 = arith.add %arg, %22 : i32
        %25 = arith.cmp eq %24, %23 : i1
        %26 = arith.select %25, %5, %24 : i32
        %27 = arith.add %arg_1, %22 : i32
        %28 = arith.cmp eq %27, %23 : i1
        %29 = arith.select %28, %5, %27 : i32
        scf.yield %26, %29 : i32
      }
      ttg.async_wait {num = 0}
      tt.return
    }
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tilelab.compiler.analysis import axis_info
from tilelab.compiler.ir.core import UNKNOWN_LOC, Block, FuncOp, Loc, Module, Op, Value
from tilelab.compiler.ir.ops import (
    AddPtrOp,
    AsyncCommitGroupOp,
    AsyncCopyGlobalToLocalOp,
    AsyncWaitOp,
    BarrierOp,
    BinaryOp,
    CmpOp,
    ConstantOp,
    ForOp,
    LoadOp,
    LocalAllocOp,
    LocalLoadOp,
    LocalStoreOp,
    MemDescIndexOp,
    SelectOp,
    SplatOp,
    TransOp,
    i1,
    i32,
)
from tilelab.compiler.ir.ops.gpu import (
    FenceAsyncSharedOp,
    WarpGroupDotOp,
    WarpGroupDotWaitOp,
    shared_reads,
    shared_users,
)
from tilelab.compiler.ir.ops.tma import AsyncTMACopyOp, InitBarriersOp, InvalBarriersOp, WaitBarrierOp
from tilelab.compiler.ir.rewriter import Rewriter
from tilelab.compiler.ir.traits import MemoryWrite
from tilelab.compiler.ir.types import i64, tensor
from tilelab.compiler.layouts import LinearLayout, row_major_shared
from tilelab.compiler.options import options_of
from tilelab.compiler.passes.allocate_shared_memory import alloc_ranges, first_fit, shared_memory_limit
from tilelab.compiler.passes.assign_layouts import tile_layout
from tilelab.compiler.passes.coalesce import wanted_order
from tilelab.compiler.passes.convert_through_shared import permuted, stored_order
from tilelab.compiler.passes.rematerialize import Chain, drop_unused
from tilelab.compiler.passes.tma_copies import TMA_ARCHS, TmaPlan, plan, tensor_map

NAME = "software-pipeline"


@dataclass
class Candidate:
    """A pipelinable load: the load, its store into ``alloc``, and the pure ops of the loop its address needs.

    ``tma``: how the tile is copied with TMA (its ``slice`` then computes the coordinates), or None (``cp.async``).
    """

    load: LoadOp
    store: LocalStoreOp
    alloc: LocalAllocOp
    slice: list[Op]
    tma: TmaPlan | None = None
    trans: TransOp | None = None  # a free transpose between the load and its store: the copy's addresses go through it

    @property
    def gathers(self) -> list[LoadOp]:
        """The loads of the address slice (a gather's indices), in body order."""
        return [op for op in self.slice if isinstance(op, LoadOp)]


def _const(rw: Rewriter, value: int, type=i32, loc: Loc = UNKNOWN_LOC) -> Value:
    """An integer constant inserted at ``rw``'s insertion point."""
    return rw.add(ConstantOp(value, type, loc=loc))


# --------------------------------------------------------------------------- matching


def carried_steps(loop: ForOp) -> dict[Value, Op | None]:
    """Loop-carried values whose later values are known: body argument -> its ``addptr``/``add``, or None.

    ``a_ptrs += BK * stride`` (``tt.addptr %a_ptrs, %step`` yielded as the next ``%a_ptrs``,
    ``%step`` defined outside the loop) is worth ``init + i * step`` at iteration ``i``; a value
    yielded unchanged (None) is worth ``init`` throughout.
    """
    body = loop.body
    found: dict[Value, Op | None] = {}
    for arg, nxt in zip(body.args[1:], body.terminator.operands):
        op = nxt.defining_op
        is_add = isinstance(op, AddPtrOp) or (isinstance(op, BinaryOp) and op.kind == "add")
        if nxt is arg:
            found[arg] = None
        elif is_add and op.operands[0] is arg and op.parent is body and not _inside(op.operands[1], loop):
            found[arg] = op
    return found


def address_slice(loop: ForOp, roots: list[Value], gathers: bool = False) -> list[Op] | None:
    """The ops of ``loop``'s body that ``roots`` depend on, in body order; None if one is not clonable.

    Clonable: pure, without regions, fed only by the induction variable, by values
    advancing by a loop-invariant step (``carried_steps``), by values defined outside
    the loop, or by other ops of the slice. With ``gathers``, also a load of the body whose
    own address is such a slice (the index tile of a gather: ``tl.load(table + offs)``).
    """
    body = loop.body
    in_body = {op: i for i, op in enumerate(body.ops)}
    carried = carried_steps(loop)
    found: set[Op] = set()
    stack = list(roots)
    while stack:
        v = stack.pop()
        if v is loop.induction_var or v in carried:
            continue
        if v.owner is body:
            return None  # a loop-carried value whose next values are unknown here
        op = v.defining_op
        if op is None or op not in in_body:
            if _inside(v, loop):
                return None
            continue
        if op in found:
            continue
        if (not op.pure or op.regions) and not (gathers and _gatherable(loop, op)):
            return None
        found.add(op)
        stack.extend(op.operands)
    return sorted(found, key=in_body.__getitem__)


def _gatherable(loop: ForOp, op: Op) -> bool:
    """Whether ``op`` is a plain load of ``loop``'s body whose address and mask are a clonable slice."""
    if not isinstance(op, LoadOp) or op.attrs.get("volatile") or op.descriptor is not None:
        return False
    return address_slice(loop, [v for v in (op.ptr, op.mask, op.other) if v is not None]) is not None


def writes_global(loop: ForOp) -> bool:
    """Whether an op in ``loop`` may write global memory (a later iteration's load might read what it wrote)."""
    return any(op.has_trait(MemoryWrite) and not isinstance(op, LocalStoreOp) for op in loop.walk() if op is not loop)


def masked_load(rw: Rewriter, load: LoadOp, mapping: dict[Value, Value], pred: Value) -> Value:
    """``load`` with its operands through ``mapping``, masked off where ``pred`` (an i1 scalar) is false."""
    ptrs = mapping.get(load.ptr, load.ptr)
    mask = rw.add(SplatOp(pred, ptrs.type.with_element(i1), loc=load.loc)) if ptrs.type.is_tensor else pred
    if load.mask is not None:
        mask = rw.add(BinaryOp("and", mapping.get(load.mask, load.mask), mask, loc=load.loc))
    other = mapping.get(load.other, load.other) if load.other is not None else None
    a = load.attrs
    return rw.add(LoadOp(ptrs, load.result.type, mask, other, a["cache"], a["eviction"], a["volatile"], loc=load.loc))


def free_trans(op: Op) -> bool:
    """Whether ``op`` is a ``tt.trans`` that moves no data: its result's layout is its source's, permuted."""
    if not isinstance(op, TransOp) or op.src.type.layout is None or op.result.type.layout is None:
        return False
    return permuted(op.src.type.layout, op.attrs["order"]) == op.result.type.layout


def _inside(v: Value, loop: ForOp) -> bool:
    """Whether ``v`` is defined somewhere within ``loop``'s regions."""
    if v.defining_op is not None:
        return loop.is_ancestor_of(v.defining_op)
    holder = v.owner.parent_op  # the op whose region has this block argument
    return holder is loop or (holder is not None and loop.is_ancestor_of(holder))


def _is_zero(v: Value | None) -> bool:
    """Whether ``v`` is absent or a zero constant (what a masked-off async copy writes)."""
    op = v.defining_op if v is not None else None
    return v is None or (isinstance(op, ConstantOp) and op.value == 0)


def _candidate(loop: ForOp, load: LoadOp) -> Candidate | None:
    """The ``Candidate`` for ``load`` if it matches the pattern the module docstring states."""
    t = load.result.type
    if not t.is_tensor or t.layout is None or load.attrs.get("volatile") or not _is_zero(load.other):
        return None
    if not load.result.has_one_use():
        return None
    (store,) = load.result.users
    trans = None
    if free_trans(store) and store.result.has_one_use():  # k loaded, stored transposed for tl.dot(q, tl.trans(k))
        trans, (store,) = store, store.result.users
    if not isinstance(store, LocalStoreOp) or store.value is not (trans or load).result:
        return None
    alloc = store.buf.defining_op
    if not isinstance(alloc, LocalAllocOp) or alloc.parent is not loop.body or alloc.attrs.get("stages"):
        return None
    if alloc.stage_bytes % 16 or (load.mask is not None and load.mask.type != load.ptr.type.with_element(i1)):
        return None
    if against_the_grain(store.value.type, alloc):
        return None
    order = {op: i for i, op in enumerate(loop.body.ops)}
    for user in shared_users(alloc.result):
        if user is store:
            continue
        if alloc.result not in shared_reads(user) or order.get(_top(user, loop.body), -1) <= order[store]:
            return None  # every other user reads the buffer (local_load, warp_group_dot; or through a view) after the store
    roots = [load.ptr] + ([load.mask] if load.mask is not None else [])
    slice_ = address_slice(loop, roots, gathers=not writes_global(loop))
    return None if slice_ is None else Candidate(load, store, alloc, slice_, trans=trans)


def against_the_grain(t, alloc: LocalAllocOp) -> bool:
    """Whether copying a tile of type ``t`` into wgmma operand buffer ``alloc`` moves elements under 4 bytes one at a time.

    An 8-bit B contiguous along N (``x @ w`` of int8 or fp8 tensors), stored K-major because wgmma
    reads 8-bit B no other way: each element lands in another row of the buffer than its neighbour in
    memory, and ``cp.async`` copies 4, 8 or 16 bytes, so the copy would be one synchronous load and
    store per byte. Left in the loop, the tile is loaded 16 bytes a thread along its pointers and
    stored transposed (as Triton does); 4-byte elements (tf32) still go by ``cp.async``, one each.
    """
    params = alloc.result.type.layout.params
    order = params.get("order")
    if params.get("kind") != "nvmma_shared" or len(t.shape) != 2 or t.element.itemsize >= 4:
        return False
    return stored_order(t.layout)[0] != order[0]


def _top(op: Op, block: Block) -> Op | None:
    """The op of ``block`` that contains ``op`` (``op`` itself when it is in ``block``)."""
    while op is not None and op.parent is not block:
        op = op.parent_op
    return op


def candidates(loop: ForOp) -> list[Candidate]:
    """The loads of ``loop``'s body that the pass pipelines."""
    step = loop.operands[2].defining_op
    if loop.attrs.get("static") or not isinstance(step, ConstantOp) or not step.value > 0:
        return []
    found = [_candidate(loop, op) for op in loop.body.ops if isinstance(op, LoadOp)]
    return [c for c in found if c is not None]


# --------------------------------------------------------------------------- rewriting


def advance(rw: Rewriter, loop: ForOp, start: dict[Value, Value], ahead: int) -> dict[Value, Value]:
    """The induction variable and the stepping carried values ``ahead`` iterations after ``start``.

    ``start`` maps the induction variable and each value of ``carried_steps`` to its value
    at the iteration counted from; the result maps them to their values ``ahead`` later.
    """
    out = {}
    carried = carried_steps(loop)
    for leaf, base in start.items():
        if not ahead or (leaf in carried and carried[leaf] is None):
            out[leaf] = base
            continue
        step_op = carried.get(leaf)
        step = loop.operands[2] if step_op is None else step_op.operands[1]
        if step_op is None:
            offset = _const(rw, ahead * step.defining_op.value, base.type, loop.loc)
            out[leaf] = rw.add(BinaryOp("add", base, offset, loop.loc))
            continue
        times = rw.add(BinaryOp("mul", step, _const(rw, ahead, step.type, step_op.loc), loc=step_op.loc))
        out[leaf] = rw.add(Rewriter.clone(step_op, {step_op.operands[0]: base, step_op.operands[1]: times}))
    return out


def _leaves(loop: ForOp, cands: list[Candidate]) -> list[Value]:
    """The induction variable, then the stepping carried values the candidates' addresses use."""
    carried = carried_steps(loop)
    used = {v for c in cands for v in (c.load.ptr, c.load.mask)} | {
        v for c in cands for op in c.slice for v in op.operands
    }
    return [loop.induction_var] + [arg for arg in carried if arg in used]


def _needed(ops: list[Op], roots: list[Value], known: dict[Value, Value]) -> list[Op]:
    """The ops of ``ops`` that ``roots`` need, in order, given the values ``known`` already."""
    made = {r: op for op in ops for r in op.results}
    need: set[Op] = set()
    stack = list(roots)
    while stack:
        op = made.get(stack.pop())
        if op is None or op in need or op.results[0] in known:
            continue
        need.add(op)
        stack.extend(op.operands)
    return [op for op in ops if op in need]


def _roots(c: Candidate) -> list[Value]:
    if c.tma is not None:
        return list(c.tma.offsets)
    return [c.load.ptr] + ([c.load.mask] if c.load.mask is not None else [])


def _clone_slice(rw: Rewriter, ops: list[Op], mapping: dict[Value, Value], pred: Value) -> None:
    """Clone ``ops`` through ``mapping``; a gather's index load is masked off where ``pred`` is false."""
    for op in ops:
        if isinstance(op, LoadOp):
            mapping[op.result] = masked_load(rw, op, mapping, pred)
        else:
            rw.insert(Rewriter.clone(op, mapping))


def _issue_copy(
    rw: Rewriter, c: Candidate, mapping: dict[Value, Value], ring: Value, slot: Value, pred: Value, tma: Tma | None
) -> None:
    """Clone what ``c``'s address needs beyond ``mapping`` (old -> new: the leaves, and what is cloned already
    for this iteration) and copy its tile into ring stage ``slot``."""
    _clone_slice(rw, _needed(c.slice, _roots(c), mapping), mapping, pred)
    if c.tma is not None:
        coords = [mapping.get(v, v) for v in c.tma.offsets]
        view = rw.add(MemDescIndexOp(ring, slot, loc=c.load.loc))
        rw.insert(AsyncTMACopyOp(view, tma.maps[c.load], tma.bars, slot, pred, coords, loc=c.load.loc))
        return
    ptrs = mapping.get(c.load.ptr, c.load.ptr)
    mask = rw.add(SplatOp(pred, ptrs.type.with_element(i1), loc=c.load.loc))
    if c.load.mask is not None:
        mask = rw.add(BinaryOp("and", mapping.get(c.load.mask, c.load.mask), mask, loc=c.load.loc))
    if c.trans is not None:  # the copy writes the transposed tile: its addresses and mask, transposed (free)
        t, order = c.trans.result.type, c.trans.attrs["order"]
        ptrs = rw.add(TransOp(ptrs, t.with_element(ptrs.type.element), loc=c.trans.loc, order=order))
        mask = rw.add(TransOp(mask, t.with_element(i1), loc=c.trans.loc, order=order))
    view = rw.add(MemDescIndexOp(ring, slot, loc=c.load.loc))
    rw.insert(AsyncCopyGlobalToLocalOp(view, ptrs, mask, loc=c.load.loc))


@dataclass
class Tma:
    """The TMA copies of a loop: its mbarriers (one per stage) and each load's tensor map."""

    bars: Value
    maps: dict


def _gathers(cands: list[Candidate]) -> list[LoadOp]:
    """The index loads of the candidates' addresses, each once, in body order."""
    found: dict[LoadOp, None] = {}
    for c in cands:
        found.update(dict.fromkeys(c.gathers))
    return list(found)


def _gather_at(rw: Rewriter, loop: ForOp, load: LoadOp, at: dict[Value, Value], pred: Value) -> Value:
    """Index load ``load`` of the iteration whose leaves are ``at``, masked off where ``pred`` is false."""
    mapping = dict(at)
    roots = [v for v in (load.ptr, load.mask, load.other) if v is not None]
    _clone_slice(rw, address_slice(loop, roots), mapping, pred)
    return masked_load(rw, load, mapping, pred)


def _prologue(loop: ForOp, cands: list[Candidate], stages: int) -> tuple[list[Value], Value, Tma | None, list[Value]]:
    """Allocate the rings before ``loop``, start the copies of its first ``stages - 1`` iterations.

    Returns the rings, the i32 constant 0 (the first slot read), the TMA state (None: no TMA copy) and
    the index loads of iteration ``stages - 1``, which the loop carries (``_gathers``).
    """
    rw = Rewriter()
    rw.set_insertion_point_before(loop)
    rings = [rw.add(LocalAllocOp(c.alloc.result.type, stages=stages, loc=c.alloc.loc)) for c in cands]
    if not isinstance(loop.parent_op, FuncOp):
        rw.insert(BarrierOp(loc=loop.loc))  # an enclosing loop's last reads of the rings must be over
    tma = _init_tma(rw, loop, cands, stages)
    lb, ub = loop.operands[:2]
    inits = dict(zip(loop.body.args[1:], loop.init_args))
    start = {leaf: lb if leaf is loop.induction_var else inits[leaf] for leaf in _leaves(loop, cands)}
    slots = []
    for s in range(stages - 1):
        at = advance(rw, loop, start, s)
        pred = rw.add(CmpOp("lt", at[loop.induction_var], ub, loc=loop.loc))
        slots.append(_const(rw, s, loc=loop.loc))
        mapping = dict(at)  # one clone of each address op (and index load) for all of this iteration's copies
        for c, ring in zip(cands, rings):
            _issue_copy(rw, c, mapping, ring, slots[s], pred, tma)
        if _uses_cp_async(cands):
            rw.insert(AsyncCommitGroupOp(loc=loop.loc))
    ahead, gathers = [], _gathers(cands)
    if gathers:
        at = advance(rw, loop, start, stages - 1)
        pred = rw.add(CmpOp("lt", at[loop.induction_var], ub, loc=loop.loc))
        ahead = [_gather_at(rw, loop, g, at, pred) for g in gathers]
    return rings, slots[0], tma, ahead


def _uses_cp_async(cands: list[Candidate]) -> bool:
    return any(c.tma is None for c in cands)


def _init_tma(rw: Rewriter, loop: ForOp, cands: list[Candidate], stages: int) -> Tma | None:
    """The mbarriers of ``loop``'s TMA copies, initialized (one arrival per copy), and their tensor maps.

    Every thread waits on them, so a barrier follows the initialization.
    """
    copies = [c for c in cands if c.tma is not None]
    if not copies:
        return None
    func = _func_of(loop)
    maps = {c.load: tensor_map(func, c.tma, c.load.loc) for c in copies}
    size = 1 << (stages - 1).bit_length()  # a power of two, as shared layouts are
    bars = rw.add(LocalAllocOp(tensor([size], i64).with_layout(row_major_shared([size])), loc=loop.loc))
    rw.insert(InitBarriersOp(bars, stages, count=len(copies), loc=loop.loc))
    rw.insert(BarrierOp(loc=loop.loc))
    return Tma(bars, maps)


def _wrap_next(rw: Rewriter, slot: Value, one: Value, count: Value, zero: Value, loc) -> Value:
    """``slot + 1``, wrapped to 0 at ``count`` (no division)."""
    nxt = rw.add(BinaryOp("add", slot, one, loc=loc))
    wrap = rw.add(CmpOp("eq", nxt, count, loc=loc))
    return rw.add(SelectOp(wrap, zero, nxt, loc=loc))


def _rewrite_body(
    loop: ForOp,
    cands: list[Candidate],
    rings: list[Value],
    stages: int,
    zero: Value,
    last: Value,
    tma: Tma | None,
    ahead: list[Value],
):
    """Wait, barrier, read this iteration's stage, prefetch iteration ``i + S - 1``, advance the slots.

    TMA copies are waited for on the stage's mbarrier, in the phase that flips each time the
    read slot wraps around (a loop-carried 0/1). A gather's index loads come carried from the
    iteration before (``ahead``: their values for iteration ``i + S - 1``), which loads them for
    iteration ``i + S``, so no copy waits for its indices.
    """
    body, loc = loop.body, loop.loc
    read, write = loop.add_carried(zero), loop.add_carried(last)
    phase = loop.add_carried(zero) if tma is not None else None
    gathers = _gathers(cands)
    carried = [loop.add_carried(v, "indices") for v in ahead]
    rw = Rewriter()
    rw.set_insertion_point_to_start(body)
    if _uses_cp_async(cands):
        rw.insert(AsyncWaitOp(stages - 2, loc=loc))
    if tma is not None:
        rw.insert(WaitBarrierOp(tma.bars, read, phase, loc=loc))
    rw.insert(BarrierOp(loc=loc))
    views = [rw.add(MemDescIndexOp(ring, read, loc=c.alloc.loc)) for c, ring in zip(cands, rings)]
    leaves = {leaf: leaf for leaf in _leaves(loop, cands)}
    at = advance(rw, loop, leaves, stages - 1)
    pred = rw.add(CmpOp("lt", at[loop.induction_var], loop.operands[1], loc=loc))
    mapping = {**at, **{g.result: v for g, v in zip(gathers, carried)}}
    for c, ring in zip(cands, rings):
        _issue_copy(rw, c, mapping, ring, write, pred, tma)
    if _uses_cp_async(cands):
        rw.insert(AsyncCommitGroupOp(loc=loc))
    if gathers:
        at = advance(rw, loop, leaves, stages)
        pred = rw.add(CmpOp("lt", at[loop.induction_var], loop.operands[1], loc=loc))
        following = [_gather_at(rw, loop, g, at, pred) for g in gathers]
    for c, view in zip(cands, views):
        c.alloc.result.replace_all_uses_with(view)  # the buffer lives in the body: so do its users
        addresses = list(c.load.operands)
        for op in (c.store, c.trans, c.load, c.alloc):
            if op is not None:
                Rewriter.erase(op)
        if c.tma is not None:  # its pointers and mask were not cloned: nothing uses them now
            drop_unused(_func_of(loop), addresses)
    drop_dead_slice(loop, [op for c in cands for op in c.slice])
    yield_op = body.terminator
    rw.set_insertion_point_before(yield_op)
    one, count = _const(rw, 1, loc=loc), _const(rw, stages, loc=loc)
    yield_op.operands.extend([_wrap_next(rw, s, one, count, zero, loc) for s in (read, write)])
    if phase is not None:  # flipped when the read slot wraps to 0
        wrapped = rw.add(CmpOp("eq", yield_op.operands[-2], zero, loc=loc))
        flipped = rw.add(BinaryOp("xor", phase, one, loc=loc))
        yield_op.operands.append(rw.add(SelectOp(wrapped, flipped, phase, loc=loc)))
    if gathers:
        yield_op.operands.extend(following)


def drop_dead_slice(loop: ForOp, ops: list[Op]) -> None:
    """Remove the original address ops that nothing uses any more (latest first, so chains go too)."""
    for op in sorted({op for op in ops if op.parent is loop.body}, key=loop.body.ops.index, reverse=True):
        if not any(r.has_uses() for r in op.results):
            Rewriter.erase(op)


def pipeline_loop(loop: ForOp, stages: int, tma: bool = False) -> bool:
    """Pipeline the matching loads of ``loop`` over ``stages`` ring stages; whether any matched.

    ``tma``: copy the tiles of tensor descriptors with TMA where ``tma_copies.plan`` allows.
    """
    cands = candidates(loop)
    if not cands:
        return False
    if tma:
        cands = [_with_tma(loop, c) for c in cands]
    rings, zero, state, ahead = _prologue(loop, cands, stages)
    last = Rewriter.insert_before(loop, ConstantOp(stages - 1, i32, loc=loop.loc)).result
    _rewrite_body(loop, cands, rings, stages, zero, last, state, ahead)
    if state is not None:  # after every thread's last wait, before the bytes serve anything else
        Rewriter.insert_after(loop, InvalBarriersOp(state.bars, stages, loc=loop.loc))
        Rewriter.insert_after(loop, BarrierOp(loc=loop.loc))
    if _uses_cp_async(cands):
        Rewriter.insert_after(loop, AsyncWaitOp(0, loc=loop.loc))
    return True


def _tma_plan(loop: ForOp, c: Candidate) -> TmaPlan | None:
    """How ``c``'s tile is copied with TMA (its coordinates clonable for later iterations), or None."""
    p = plan(c.load, c.alloc.result.type.layout, _func_of(loop))
    return p if p is not None and address_slice(loop, list(p.offsets)) is not None else None


def _with_tma(loop: ForOp, c: Candidate) -> Candidate:
    """``c`` copied with TMA when its load reads a tensor descriptor's block that TMA can copy."""
    p = None if c.trans is not None or c.gathers else _tma_plan(loop, c)
    return c if p is None else replace(c, tma=p, slice=address_slice(loop, list(p.offsets)))


def _feeds_a_dot(load: LoadOp, body: Block) -> bool:
    """Whether ``load``'s value reaches a ``warp_group_dot`` of ``body`` through register ops (attention's ``lse``).

    Directly (an A operand in registers) or through the buffer a ``local_store`` writes it to.
    """
    work, seen = [load.result], set()
    while work:
        for user in work.pop().users:
            top = _top(user, body)
            if top is None or top in seen:
                continue
            seen.add(top)
            if isinstance(top, WarpGroupDotOp):
                return True
            if isinstance(top, LocalStoreOp) and any(isinstance(u, WarpGroupDotOp) for u in shared_users(top.buf)):
                return True
            if top.pure and not top.regions:
                work.extend(top.results)
    return False


def copy_layout(load: LoadOp, num_warps: int, warp_size: int, contiguity=None) -> LinearLayout:
    """The layout ``load``'s tile is copied in when staged: the default tile layout, one owner per element.

    The layout the load's user wants (a slice of a dot's accumulator) holds each element in
    several threads and several registers per thread; a copy in it would issue one
    ``cp.async`` per register in every thread. In the default layout each element has one
    owner, and the copy's lowering leaves the other threads idle. Its threads follow the
    pointers' most contiguous dim (``contiguity``, from axis info), as ``coalesce`` orders loads.
    """
    t = load.result.type
    order = wanted_order(contiguity) if contiguity is not None else None
    return tile_layout(t.shape, num_warps, vec=max(1, 16 // t.element.itemsize), order=order, warp_size=warp_size)


def stage_loads_feeding_dots(loop: ForOp, num_warps: int, warp_size: int) -> list[Staged]:
    """Route each register load of ``loop`` that feeds a dot through a shared buffer, so that it pipelines too.

    A row statistic the dots' inputs are computed from (attention backward's ``lse`` and ``delta``:
    ``p = exp2(qk - lse)``) was a plain global load in every iteration, its latency exposed before
    the dot that needs it. Loaded in a compact layout (``copy_layout``: its pointers and mask
    computed again in that layout), stored into a buffer and read back in the layout its users
    want, it matches the pipelined pattern, so its copy is issued iterations ahead with the
    operands', as Triton pipelines the loads on a dot's path. Returns what it changed, for
    ``unstage`` when the loop ends up not pipelined and ``finish_staging`` when it is.
    """
    staged, info = [], None
    for load in [op for op in loop.body.ops if isinstance(op, LoadOp)]:
        t = load.result.type
        if not t.is_tensor or t.layout is None or load.attrs.get("volatile") or not _is_zero(load.other):
            continue
        if any(isinstance(u, LocalStoreOp) for u in load.result.users) or not _feeds_a_dot(load, loop.body):
            continue
        roots = [load.ptr] + ([load.mask] if load.mask is not None else [])
        alloc = LocalAllocOp(t.with_layout(row_major_shared(list(t.shape))), loc=load.loc)
        if alloc.stage_bytes % 16 or address_slice(loop, roots) is None:
            continue
        if info is None:  # only for a loop with something to stage
            info = axis_info.analyze(_func_of(loop))
        layout = copy_layout(load, num_warps, warp_size, info[load.ptr].contiguity)
        chain = Chain({})
        operands = [chain.build(v, layout) if v.type.is_tensor else v for v in load.operands]
        if any(v is None for v in operands):
            chain.discard()
            continue
        chain.insert()
        copy = type(load).create(operands, [t.with_layout(layout)], dict(load.attrs), loc=load.loc)
        store = LocalStoreOp(alloc.result, copy.result, loc=load.loc)
        read = LocalLoadOp(alloc.result, t, loc=load.loc)
        for op in (copy, alloc, store, read):
            Rewriter.insert_before(load, op)
        load.result.replace_all_uses_with(read.result)
        staged.append(Staged(load, read, [copy, alloc, store, read]))
    return staged


@dataclass
class Staged:
    """A load ``stage_loads_feeding_dots`` replaced: the original (detached), the read replacing it, the new ops."""

    load: LoadOp
    read: LocalLoadOp
    added: list[Op]


def _func_of(op: Op) -> FuncOp:
    """The function ``op`` is in."""
    while not isinstance(op, FuncOp):
        op = op.parent_op
    return op


def unstage(func: FuncOp, staged: list[Staged]) -> None:
    """Undo ``stage_loads_feeding_dots`` (the loop was not pipelined): the original loads are used again."""
    for s in staged:
        s.read.result.replace_all_uses_with(s.load.result)
        operands = list(s.added[0].operands)
        for op in reversed(s.added):
            Rewriter.erase(op)
        drop_unused(func, operands)


def finish_staging(func: FuncOp, staged: list[Staged]) -> None:
    """Drop the original loads ``stage_loads_feeding_dots`` replaced, and their address chains once unused."""
    for s in staged:
        operands = list(s.load.operands)
        Rewriter.erase(s.load)
        drop_unused(func, operands)


def fitting_stages(func, loop: ForOp, stages: int, limit: int | None) -> int:
    """The most stages, up to ``stages``, whose rings fit in ``limit`` bytes of shared memory with
    every other buffer of ``func`` (1: no pipelining fits). A config asking for more stages than
    fit still compiles, with fewer (a 128x128 attention tile at 3 stages, say)."""
    cands = candidates(loop) if limit is not None else []
    if not cands:
        return stages
    moved = {c.alloc for c in cands}

    def planned(s):
        def resize(order):
            start, end = order[loop]
            return {a: (start, end, a.stage_bytes * s) for a in moved}

        return first_fit(alloc_ranges(func, resize)[1])[1]

    while stages >= 2 and planned(stages) > limit:
        stages -= 1
    return stages


def overlap_wgmma(func, loop: ForOp) -> bool:
    """Keep each iteration's wgmma running while the copies for a later iteration are issued.

    Applies to a pipelined loop whose one ``warp_group_dot`` accumulates into a carried value
    that nothing else in the loop reads (a matmul's ``acc``). The dot waits with ``pendings = 1``
    (only the previous iteration's wgmma must be done), then a barrier (every warpgroup's previous
    wgmma is done: its ring slot is free), then the copies into that slot start. After the loop,
    ``ttng.warp_group_dot_wait {pendings = 0}`` completes the accumulator before its readers.
    """
    body = loop.body
    dots = [op for op in body.ops if isinstance(op, WarpGroupDotOp)]
    copies = [op for op in body.ops if isinstance(op, _COPIES)]
    commits = [op for op in body.ops if isinstance(op, AsyncCommitGroupOp)]
    if len(dots) != 1 or not copies or len(commits) > 1 or dots[0].acc not in body.args[1:]:
        return False
    if dots[0].a_in_registers:  # its A registers would have to outlive the iteration
        return False
    dot, index = dots[0], body.args.index(dots[0].acc) - 1
    if dot.acc.users != [dot] or dot.result.users != [body.terminator]:
        return False
    if body.terminator.operands.index(dot.result) != index:
        return False
    _move_copies_after(body, dot, copies, commits, loop.loc)
    dot.attrs["pendings"] = 1
    _wait_after_loop(loop, index)
    return True


def _wait_after_loop(loop: ForOp, index: int) -> None:
    """A ``warp_group_dot_wait {pendings = 0}`` after ``loop`` that its result ``index``'s readers read through."""
    result = loop.results[index]
    wait = WarpGroupDotWaitOp(result, 0, loc=loop.loc)
    Rewriter.insert_after(loop, wait)
    result.replace_uses_if(wait.result, lambda user: user is not wait)


def overlap_last_wgmma(func, loop: ForOp) -> bool:
    """Keep a loop's last wgmma running into the next iteration, until its first wgmma's wait.

    Applies to a pipelined loop with several ``warp_group_dot``s (attention: ``qk = q @ k``,
    then ``acc = p @ v + acc * alpha``) whose last one accumulates into a carried value that the
    next iteration reads only after its first dot, and which reads shared memory only from ring
    slots (its A in registers, B pipelined). That first dot waits with ``pendings = 0``
    anyway (its result feeds the softmax), which also completes the previous iteration's last
    dot; so the last dot waits with ``pendings = 1`` (not at all: the group before it is done),
    and the carried value's readers read it through a ``ttng.warp_group_dot_wait {pendings = 0}``
    placed right after the first dot (the same wait for the hardware, and the point after which
    the compiler may read its registers). The copies into the ring slot that the previous
    iteration's dots read move after the last dot, behind a barrier: every warpgroup has passed
    its wait by then. After the loop a wait completes the result before its readers.
    """
    body = loop.body
    dots = [op for op in body.ops if isinstance(op, WarpGroupDotOp)]
    copies = [op for op in body.ops if isinstance(op, _COPIES)]
    commits = [op for op in body.ops if isinstance(op, AsyncCommitGroupOp)]
    if len(dots) < 2 or not copies or len(commits) > 1:
        return False
    first, last = dots[0], dots[-1]
    if last.result.users != [body.terminator] or body.terminator.operands.count(last.result) != 1:
        return False
    if not all(isinstance(v.defining_op, MemDescIndexOp) for v in shared_reads(last)):
        return False  # a buffer stored in the loop (p before it came from registers) could be overwritten in flight
    index = body.terminator.operands.index(last.result)
    carried = body.args[index + 1]
    order = {op: i for i, op in enumerate(body.ops)}
    readers = [_top_level(user, body) for user in carried.users]
    if any(r is None or order[r] <= order[first] for r in readers):
        return False
    if any(order[op] > order[first] for op in copies + commits):
        return False  # the pipeliner put the copies first; anything else is not this shape
    _move_copies_after(body, last, copies, commits, loop.loc)
    _fence_before_the_barrier(body, first)
    wait = WarpGroupDotWaitOp(carried, 0, loc=loop.loc)
    Rewriter.insert_after(first, wait)
    carried.replace_uses_if(wait.result, lambda user: user is not wait)
    last.attrs["pendings"] = 1
    _wait_after_loop(loop, index)
    return True


def _fence_before_the_barrier(body: Block, first: Op) -> None:
    """Move the first dot's proxy fence up between the loop's ``async_wait`` and its barrier.

    With the copies gone to the end of the body, nothing between that barrier and the dot
    writes shared memory: fenced before the barrier, the operands are ready for every
    warpgroup and the dot's lowering needs no second barrier (``lower_wgmma._after_barrier``).
    """
    at = body.ops.index(first)
    fence = body.ops[at - 1] if at > 0 else None
    if not isinstance(fence, FenceAsyncSharedOp) or len(body.ops) < 2:
        return
    waits = 0
    while waits < len(body.ops) and isinstance(body.ops[waits], (AsyncWaitOp, WaitBarrierOp)):
        waits += 1
    if not waits or waits >= at or not isinstance(body.ops[waits], BarrierOp):
        return
    between = body.ops[waits + 1 : at - 1]
    writes = (LocalStoreOp, *_COPIES, AsyncWaitOp, WaitBarrierOp, FenceAsyncSharedOp, BarrierOp)
    if any(isinstance(o, writes) for op in between for o in op.walk()):
        return
    body.remove(fence)
    body.insert(waits, fence)


def _top_level(op: Op, body: Block) -> Op | None:
    """The op of ``body`` that is ``op`` or holds it in a region (None: outside ``body``)."""
    while op is not None and op.parent is not body:
        region = op.parent.parent if op.parent is not None else None
        op = region.parent if region is not None else None
    return op


#: the ops that start a pipelined copy
_COPIES = (AsyncCopyGlobalToLocalOp, AsyncTMACopyOp)


def _move_copies_after(body: Block, anchor: Op, copies: list, commits: list, loc: Loc) -> None:
    """Move ``copies`` (with their slot views) and the ``commits`` right after ``anchor``, behind a barrier."""
    moved = []
    for copy in copies:
        view = copy.operands[0].defining_op
        if isinstance(view, MemDescIndexOp) and view.result.users == [copy]:
            moved.append(view)
        moved.append(copy)
    moved.extend(commits)
    for op in moved:
        body.remove(op)
    at = body.ops.index(anchor) + 1
    for i, op in enumerate([BarrierOp(loc=loc), *moved]):
        body.insert(at + i, op)


def run(module: Module) -> bool:
    options = options_of(module)
    default = options.num_stages
    warps, warp_size = options.num_warps, options.warp_size
    limit = shared_memory_limit(options.arch)
    tma = options.tma and options.arch in TMA_ARCHS
    changed = False
    for func in module.funcs:
        loops = [op for op in func.walk() if isinstance(op, ForOp)]
        for loop in loops:
            stages = loop.attrs.get("num_stages") or default
            staged = stage_loads_feeding_dots(loop, warps, warp_size) if stages >= 2 else []
            if stages >= 2:  # with room for the mbarriers of TMA copies, where there will be some
                bars = 64 if tma and limit is not None and any(_tma_plan(loop, c) for c in candidates(loop)) else 0
                stages = fitting_stages(func, loop, int(stages), limit - bars if limit is not None else None)
            if stages >= 2 and pipeline_loop(loop, int(stages), tma):
                changed = True
                finish_staging(func, staged)
                overlap_wgmma(func, loop) or overlap_last_wgmma(func, loop)
            else:
                unstage(func, staged)
    return changed
