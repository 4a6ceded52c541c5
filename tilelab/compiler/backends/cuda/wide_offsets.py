"""Byte offsets kept as 64-bit values in kernels that issue ``wgmma``: ``cvt`` + ``shl``, not ``mul.wide``.

A loop's pointers are one carried base plus loop-invariant byte offsets once LLVM's loop
strength reduction has run (``b_ptrs += BLOCK_K * stride_bk`` over a 64x256 tile: one 64-bit
base and eight offsets a thread). The offsets are ``sext(i32) * 2`` (the element size), which
LLVM's NVPTX selector makes one ``mul.wide.s32``. ptxas then does not keep the 64-bit products
in registers: it rebuilds each from its 32-bit source beside its use, an ``IMAD.WIDE`` per
``cp.async``, and schedules those rebuilds (with the copies' masks) right after the loop's
``HGMMA``s, before their wait. There they issue while the tensor cores read and write the
accumulator registers, and each K step of the tutorial matmul took 15% longer than Triton's,
whose identical loop keeps the offsets as ``cvt.s64.s32`` + ``shl.b64`` values (measured on an
H100, both compilers' PTX swapped between both launchers: the time follows the PTX).

Written as a sign extension and a shift, the offsets stay 64-bit values that ptxas keeps live
(the tutorial matmul's 128x256x64 config: 194 -> 203 registers, no spills), and the address
adds join the copies after the wgmma wait, as in Triton's loop::

    before:  mul.wide.s32  %rd10, %r200, 2;
    after:   cvt.s64.s32   %rd10, %r200;
             shl.b64       %rd10, %rd10, 1;

Only power-of-two factors are rewritten (element sizes: the product is then exactly the shift),
and only in kernels with ``wgmma.mma_async``: elsewhere no asynchronous tensor-core work shares
the register file with the rebuilt addresses, and the 32-bit sources cost fewer registers.
"""

from __future__ import annotations

import re

_MUL_WIDE = re.compile(r"^([ \t]*)mul\.wide\.s32([ \t]+)(%rd\d+), (%r\d+), (\d+);$", re.MULTILINE)


def _shift(m: re.Match) -> str:
    indent, space, dst, src, factor = m.groups()
    n = int(factor)
    if n <= 0 or n & (n - 1):
        return m.group(0)
    return f"{indent}cvt.s64.s32{space}{dst}, {src};\n{indent}shl.b64{space}{dst}, {dst}, {n.bit_length() - 1};"


def keep_offsets_wide(ptx: str) -> str:
    """``ptx`` with each ``mul.wide.s32`` by a power of two written as ``cvt.s64.s32`` + ``shl.b64``,
    in a kernel that issues ``wgmma``; any other PTX unchanged."""
    if "wgmma.mma_async" not in ptx:
        return ptx
    return _MUL_WIDE.sub(_shift, ptx)


__all__ = ["keep_offsets_wide"]
