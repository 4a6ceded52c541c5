# ruff: noqa: E501  (the docstring example spells whole types)
"""Store host tensor descriptors' blocks with TMA (sm_90): the tile goes to shared memory, one thread copies it out.

Why: ``c_desc.store([m, n], tile)`` is a masked store of every element: each thread computes
an address and two bounds checks per element, and holds them in registers (the epilogue of a
persistent matmul: ~60 registers more than the loop needs). With TMA the tile is written to
a ``#nvmma_shared`` buffer (swizzled: the same layout the copy engine reads, one box per
swizzle-wide column block), fenced for the async proxy, and thread 0 copies each box to
global memory through the descriptor's tensor map, which clips what lies outside the array.
The copy's lowering waits until the buffer has been read; the barrier pass orders the
buffer's next writers after it. A store whose value arrives through a layout conversion is
stored from the value before it (the shared buffer is the conversion).

Applies to stores through a descriptor (``StoreOp.descriptor``) whose base, shape and strides
are kernel arguments or constants, and whose alignment the launch checked (a host descriptor) or
the specialization proves (``tma_copies.plan``), on sm_90 with ``CompileOptions.tma``; 2-D blocks
whose rows span 32 bytes or more (the narrowest swizzle), at most 256 rows, a multiple of 8.

before (arch=sm_90a, num_warps=4):
    tt.func @k(%c: !ptr<f16>, %m: i32, %n: i32, %s: i32, %pm: i32, %pn: i32) {
      %0 = arith.constant {value = 1} : i64
      %1 = arith.constant {value = 0.0} : tensor<64x64xf16, #blocked<sizePerThread=[1, 8], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      %2 = tt.splat %c : tensor<64x64x!ptr<f16>, #blocked<sizePerThread=[1, 8], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      tt.store %2, %1, %c, %m, %n, %s, %0, %pm, %pn {descriptor = 2, descriptor_checked = true} : tensor<64x64x!ptr<f16>, #blocked<sizePerThread=[1, 8], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      tt.return
    }

after:
    tt.func @k(%c: !ptr<f16>, %m: i32, %n: i32, %s: i32, %pm: i32, %pn: i32) {
      %0 = arith.constant {value = 1} : i64
      %1 = ttng.tensormap %c, %m, %n, %s, %0 {box = [64, 64], swizzle = 128, fill = "zero"} : i64
      %2 = arith.constant {value = 0.0} : tensor<64x64xf16, #blocked<sizePerThread=[1, 8], threadsPerWarp=[4, 8], warpsPerCTA=[4, 1], order=[1, 0]>>
      %3 = ttg.local_alloc : tensor<64x64xf16, #nvmma_shared<swizzle=128B, elemBytes=2, order=[1, 0]>>
      ttg.local_store %3, %2 : tensor<64x64xf16, #nvmma_shared<swizzle=128B, elemBytes=2, order=[1, 0]>>
      ttng.fence_async_shared
      ttng.async_tma_copy_local_to_global %3, %1, %pm, %pn : tensor<64x64xf16, #nvmma_shared<swizzle=128B, elemBytes=2, order=[1, 0]>>
      tt.return
    }
"""

from __future__ import annotations

from tilelab.compiler.ir.core import Module
from tilelab.compiler.ir.ops import ConvertLayoutOp, LocalAllocOp, LocalStoreOp, StoreOp
from tilelab.compiler.ir.ops.gpu import FenceAsyncSharedOp
from tilelab.compiler.ir.ops.tma import AsyncTMAStoreOp
from tilelab.compiler.ir.rewriter import Rewriter
from tilelab.compiler.layouts import nvmma_shared
from tilelab.compiler.options import options_of
from tilelab.compiler.passes.rematerialize import drop_unused
from tilelab.compiler.passes.tma_copies import TMA_ARCHS, plan, tensor_map

NAME = "tma-stores"


def _layout(op: StoreOp):
    """The ``#nvmma_shared`` buffer for ``op``'s tile: the widest swizzle its rows fill, or None."""
    t = op.value.type
    if len(t.shape) != 2:
        return None
    row_bytes = t.shape[1] * t.element.itemsize
    swizzle = next((s for s in (128, 64, 32) if row_bytes % s == 0), None)
    return nvmma_shared(list(t.shape), t.element.itemsize, swizzle, [1, 0]) if swizzle else None


def run(module: Module) -> bool:
    options = options_of(module)
    if not options.tma or options.arch not in TMA_ARCHS:
        return False
    changed = False
    for func in module.funcs:
        for op in [op for op in func.walk() if isinstance(op, StoreOp) and op.descriptor is not None]:
            layout = _layout(op)
            p = plan(op, layout, func) if layout is not None else None
            if p is None:
                continue
            value = op.value
            source = value.defining_op
            if isinstance(source, ConvertLayoutOp):
                value = source.src
            alloc = LocalAllocOp(value.type.with_layout(layout), loc=op.loc)
            tmap = tensor_map(func, p, op.loc)
            for new in (alloc, LocalStoreOp(alloc.result, value, loc=op.loc), FenceAsyncSharedOp(loc=op.loc)):
                Rewriter.insert_before(op, new)
            Rewriter.insert_before(op, AsyncTMAStoreOp(alloc.result, tmap, list(p.offsets), loc=op.loc))
            addresses = list(op.operands)
            Rewriter.erase(op)
            drop_unused(func, addresses)
            changed = True
    return changed
