"""Give every shared buffer its offset: buffers whose live ranges do not overlap share bytes.

Why: a program's shared memory is one array; its size limits how many programs fit on an
SM. Each ``ttg.local_alloc`` is live from its definition to its last use (a use inside a
loop or branch keeps it live to the end of that op, so a loop never sees its buffer
reused mid-iteration; a software-pipelined ring, allocated before its loop and used in it,
lives across the whole loop and takes ``stages`` times its tile's bytes). Buffers are placed
first-fit, in program order, at offsets aligned to 16 bytes (the widest ``ld.shared``; a wgmma
``#nvmma_shared`` buffer to its swizzle repeat, 1024 bytes for 128B: see ``alignment``);
``module.attrs["shared_bytes"]`` gets the total, which the backend reports as the kernel's
``shared`` bytes. A total over the architecture's limit (the options' ``arch``: 232448 bytes
on sm_90) raises ``OutOfResources(total, limit, "shared memory")``, as Triton does, rather than
leaving the driver to refuse the launch.

before:
    tt.func @k(%x: !ptr<f32>) {
      %0 = arith.constant {value = 1.0} : tensor<64xf32>
      %1 = ttg.local_alloc : tensor<64xf32>
      ttg.local_store %1, %0 : tensor<64xf32>
      %2 = ttg.local_load %1 : tensor<64xf32>
      %3 = ttg.local_alloc : tensor<64xf32>
      ttg.local_store %3, %2 : tensor<64xf32>
      %4 = ttg.local_alloc : tensor<64xf32>
      ttg.local_store %4, %0 : tensor<64xf32>
      %5 = ttg.local_load %3 : tensor<64xf32>
      %6 = ttg.local_load %4 : tensor<64xf32>
      tt.return
    }

after:
    tt.func @k(%x: !ptr<f32>) {
      %0 = arith.constant {value = 1.0} : tensor<64xf32>
      %1 = ttg.local_alloc {offset = 0} : tensor<64xf32>
      ttg.local_store %1, %0 : tensor<64xf32>
      %2 = ttg.local_load %1 : tensor<64xf32>
      %3 = ttg.local_alloc {offset = 0} : tensor<64xf32>
      ttg.local_store %3, %2 : tensor<64xf32>
      %4 = ttg.local_alloc {offset = 256} : tensor<64xf32>
      ttg.local_store %4, %0 : tensor<64xf32>
      %5 = ttg.local_load %3 : tensor<64xf32>
      %6 = ttg.local_load %4 : tensor<64xf32>
      tt.return
    }
"""

from __future__ import annotations

from tilelab.compiler.ir.core import Block, Module, Op
from tilelab.compiler.ir.ops import LocalAllocOp
from tilelab.compiler.ir.ops.gpu import shared_users
from tilelab.compiler.options import options_of
from tilelab.errors import OutOfResources

NAME = "allocate-shared-memory"
ALIGN = 16

#: Most shared memory one program may take (bytes, dynamic included), by compute capability major.minor.
SHARED_LIMITS = {(9, 0): 232448, (8, 0): 166912, (8, 7): 166912, (8, 6): 101376, (8, 9): 101376, (7, 5): 65536}


#: The LDS one workgroup may take on AMD CDNA3 (gfx942): 64 KiB.
AMD_LDS_LIMIT = 65536


def shared_memory_limit(arch: str | None) -> int | None:
    """The per-program shared-memory limit of ``arch`` (``"sm_90a"`` -> 232448, an AMD ``gfx9..`` 65536 bytes of LDS).

    ``None`` off the GPU.
    """
    if arch and arch.startswith("gfx"):
        return AMD_LDS_LIMIT
    if not arch or not arch.startswith("sm_"):
        return None
    digits = "".join(ch for ch in arch[3:] if ch.isdigit())
    major, minor = int(digits[:-1] or 0), int(digits[-1:] or 0)
    return SHARED_LIMITS.get((major, minor), 232448 if major >= 9 else 49152)


def number_ops(block: Block, order: dict | None = None, pos: int = 0) -> dict[Op, tuple[int, int]]:
    """Each op's ``(first, last)`` position in a pre-order walk (``last`` covers its regions)."""
    order = {} if order is None else order
    _number(block, order, pos)
    return order


def _number(block: Block, order: dict, pos: int) -> int:
    for op in block.ops:
        first = pos
        pos += 1
        for region in op.regions:
            for inner in region.blocks:
                pos = _number(inner, order, pos)
        order[op] = (first, pos - 1)
    return pos


def live_range(alloc: LocalAllocOp, order: dict, uses: list[Op]) -> tuple[int, int]:
    """From the allocation to its last use, a use nested in an op counting as that whole op."""
    end = order[alloc][0]
    for use in uses:
        while use.parent is not alloc.parent and use.parent is not None:
            use = use.parent_op
        end = max(end, order[use][1])
    return order[alloc][0], end


def alignment(alloc: LocalAllocOp) -> int:
    """The byte alignment of ``alloc``'s offset: a wgmma buffer's swizzle repeat (8 rows of its swizzle), else 16.

    The hardware swizzle XORs absolute address bits, so an ``#nvmma_shared`` buffer starts on a
    multiple of ``8 * swizzle_bytes`` (1024 for 128B) even after smaller buffers (a converted row).
    """
    layout = alloc.result.type.layout
    if layout is not None and layout.params.get("kind") == "nvmma_shared":
        return max(ALIGN, 8 * layout.params["swizzle_bytes"])
    return ALIGN


def first_fit(ranges: list[tuple[int, ...]]) -> tuple[list[int], int]:
    """Offsets for ``(start, end, nbytes[, align])`` ranges (align 16 when absent), in order; the total bytes."""
    placed: list[tuple[int, int, int, int]] = []  # start, end, offset, nbytes
    offsets = []
    for start, end, nbytes, *rest in ranges:
        align = rest[0] if rest else ALIGN
        busy = sorted((o, o + n) for s, e, o, n in placed if s <= end and start <= e)
        offset = 0
        for lo, hi in busy:
            if offset + nbytes <= lo:
                break
            offset = max(offset, -(-hi // align) * align)
        placed.append((start, end, offset, nbytes))
        offsets.append(offset)
    total = max((o + n for _, _, o, n in placed), default=0)
    return offsets, -(-total // ALIGN) * ALIGN


def alloc_ranges(func, resize=None) -> tuple[list[LocalAllocOp], list[tuple[int, int, int]]]:
    """Every ``local_alloc`` of ``func`` and its ``(start, end, nbytes)``.

    ``resize`` maps an alloc to the ``(start, end, nbytes)`` it would have after a planned change
    (software pipelining moves a loop's buffer before the loop as a ring of several stages).
    """
    order = number_ops(func.body)
    allocs = [op for op in func.walk() if isinstance(op, LocalAllocOp)]
    resize = resize(order) if resize else {}
    ranges = [resize.get(a) or (*live_range(a, order, shared_users(a.result)), a.nbytes) for a in allocs]
    return allocs, [(*r[:3], alignment(a)) for r, a in zip(ranges, allocs)]


def run(module: Module) -> bool:
    func = module.kernel
    allocs, ranges = alloc_ranges(func)
    offsets, total = first_fit(ranges)
    limit = shared_memory_limit(options_of(module).arch)
    if limit is not None and total > limit:
        raise OutOfResources(total, limit, "shared memory")
    changed = module.attrs.get("shared_bytes") != total
    for alloc, offset in zip(allocs, offsets):
        changed |= alloc.attrs.get("offset") != offset
        alloc.attrs["offset"] = offset
    module.attrs["shared_bytes"] = total
    return changed
