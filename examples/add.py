"""The vector add of the README, as a file the ``tilelab`` command reads.

tilelab compile examples/add.py::add --signature "x=*fp32, y=*fp32, out=*fp32, n=i32" --const BLOCK=1024 --stage ptx
tilelab report examples/add.py::add --signature "x=*fp32, y=*fp32, out=*fp32, n=i32" --const BLOCK=1024 -o add.html
"""

import tilelab
import tilelab.language as tl


@tilelab.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)
