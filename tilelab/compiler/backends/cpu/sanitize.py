"""Compiled bounds checks for sanitize mode.

The sanitized variant of a kernel receives the byte ranges ``[lo, hi)`` of the
argument arrays (an ``i64`` array of pairs and its length). Before every load, store
and atomic it checks that the accessed bytes lie inside one range; if not, it calls
the runtime's report callback (kind ``REPORT_OUT_OF_BOUNDS``: op, program id,
element index, address) and ends the program with status 1. The runtime turns the
report into the same error the interpreter raises. Unsanitized kernels carry no
checks at all.
"""

from __future__ import annotations

from llvmlite import ir

from ..common.types import I1, I64, PTR
from .context import REPORT_OUT_OF_BOUNDS, report

HELPER = "__tilelab_in_bounds"


def check_address(lw, op, ptr: ir.Value, mem: ir.Type, lin: ir.Value) -> None:
    """In sanitize mode, fail the program unless ``ptr`` .. ``ptr + sizeof(mem)`` is in an array."""
    if not lw.sanitize:
        return
    b = lw.b
    addr = b.ptrtoint(ptr, I64)
    size = ir.Constant(I64, max(1, mem.width // 8) if isinstance(mem, ir.IntType) else _float_size(mem))
    ok = b.call(_helper(lw.module), [addr, size, *lw.ranges])
    bad = b.append_basic_block("out_of_bounds")
    cont = b.append_basic_block("in_bounds")
    b.cbranch(ok, cont, bad)
    b.position_at_end(bad)
    report(lw, REPORT_OUT_OF_BOUNDS, op, lin, addr=addr)
    b.branch(lw.fail())
    b.position_at_end(cont)


def _float_size(t: ir.Type) -> int:
    return {"half": 2, "float": 4, "double": 8, "ptr": 8}[str(t)]


def _helper(module: ir.Module) -> ir.Function:
    """``in_bounds(addr, size, ranges, n)``: does ``[addr, addr + size)`` fit one range?"""
    fn = module.globals.get(HELPER)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(I1, [I64, I64, PTR, I64]), HELPER)
    fn.linkage = "internal"
    addr, size, ranges, n = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    head, body, hit, miss = (fn.append_basic_block(x) for x in ("head", "body", "hit", "miss"))
    entry = b.block
    b.branch(head)
    b.position_at_end(head)
    j = b.phi(I64)
    j.add_incoming(ir.Constant(I64, 0), entry)
    b.cbranch(b.icmp_signed("<", j, n), body, miss)
    b.position_at_end(body)
    lo = b.load(b.gep(ranges, [b.mul(j, ir.Constant(I64, 2))], source_etype=I64), typ=I64)
    hi = b.load(b.gep(ranges, [b.add(b.mul(j, ir.Constant(I64, 2)), ir.Constant(I64, 1))], source_etype=I64), typ=I64)
    inside = b.and_(b.icmp_unsigned(">=", addr, lo), b.icmp_unsigned("<=", b.add(addr, size), hi))
    j.add_incoming(b.add(j, ir.Constant(I64, 1)), body)
    b.cbranch(inside, hit, head)
    ir.IRBuilder(hit).ret(ir.Constant(I1, 1))
    ir.IRBuilder(miss).ret(ir.Constant(I1, 0))
    return fn
