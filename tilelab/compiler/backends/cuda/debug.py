"""``device_print`` and ``device_assert`` on the GPU: ``vprintf`` and ``__assertfail`` of the CUDA runtime.

Each thread prints the elements it owns (copies in broadcast layouts stay quiet), one
line per element, as ``pid (x, y, z) idx (i, j) prefix: value``; the order of lines
across threads is the GPU's. A failed assert calls ``__assertfail`` with the message,
the kernel's file and line: the launch then fails with ``CUDA_ERROR_ASSERT``.
"""

from __future__ import annotations

from llvmlite import ir

from ..common.types import I8, I32, I64
from .context import GTile, const_i32, reg_indices

GENERIC = I8.as_pointer()


def _cstring(lw, text: str) -> ir.Value:
    """A NUL-terminated global string (address space 1), as a generic pointer."""
    data = bytearray(text.encode() + b"\0")
    name = f"tilelab_str{len([g for g in lw.module.global_values if g.name.startswith('tilelab_str')])}"
    g = ir.GlobalVariable(lw.module, ir.ArrayType(I8, len(data)), name, addrspace=1)
    g.global_constant = True
    g.linkage = "internal"
    g.initializer = ir.Constant(ir.ArrayType(I8, len(data)), data)
    first = lw.b.gep(g, [const_i32(0), const_i32(0)], inbounds=True)
    return lw.b.addrspacecast(first, GENERIC)


def _printable(lw, value, elem) -> tuple[str, ir.Value]:
    """The printf conversion and the (promoted) argument for one element."""
    b = lw.b
    if elem.is_pointer:
        return "%p", value
    if elem.is_float:
        if elem.name == "bf16":
            value = b.bitcast(b.shl(b.zext(value, I32), const_i32(16)), ir.FloatType())
        return "%f", b.fpext(value, ir.DoubleType()) if str(value.type) != "double" else value
    if elem.bits == 64:
        return ("%lld" if elem.is_signed else "%llu"), value
    wide = b.sext(value, I32) if elem.is_signed and not elem.is_bool else b.zext(value, I32)
    return ("%d" if elem.is_signed and not elem.is_bool else "%u"), wide


def _vprintf(lw, fmt: str, args: list) -> None:
    b = lw.b
    vprintf = lw.function("vprintf", I32, [GENERIC, GENERIC])
    if args:
        struct = ir.LiteralStructType([a.type for a in args])
        buf = lw.entry.alloca(struct)  # in the entry block: one stack slot, not one per loop trip
        for i, a in enumerate(args):
            b.store(a, b.gep(buf, [const_i32(0), const_i32(i)], inbounds=True))
        arg_ptr = b.bitcast(buf, GENERIC)
    else:
        arg_ptr = ir.Constant(GENERIC, None)
    b.call(vprintf, [_cstring(lw, fmt), arg_ptr])


def _pid(lw) -> list:
    return [lw.hooks.program_id(lw, axis) for axis in range(3)]


def emit_print(lw, op) -> None:
    prefix = op.attrs.get("prefix", "").rstrip().rstrip(":")
    pid = _pid(lw)
    if not op.operands:
        with lw.b.if_then(lw.is_owner(None)):
            _vprintf(lw, f"pid (%d, %d, %d) {prefix}\n", pid)
        return
    for v in op.operands:
        x = lw.get(v)
        elem = v.type.element if v.type.is_tensor else v.type
        if not isinstance(x, GTile):
            conv, arg = _printable(lw, x, elem)
            with lw.b.if_then(lw.is_owner(None)):
                _vprintf(lw, f"pid (%d, %d, %d) {prefix}: {conv}\n", [*pid, arg])
            continue
        base = lw.thread_index(x.layout)
        with lw.b.if_then(lw.is_owner(x.layout)):
            for r, value in zip(reg_indices(x.layout), x.regs):
                conv, arg = _printable(lw, value, elem)
                lin = lw.b.xor(base, const_i32(r))
                _vprintf(lw, f"pid (%d, %d, %d) idx (%d) {prefix}: {conv}\n", [*pid, lin, arg])


def emit_assert(lw, op) -> None:
    b = lw.b
    cond = lw.get(op.operands[0])
    conds = cond.regs if isinstance(cond, GTile) else [cond]
    ok = conds[0]
    for c in conds[1:]:
        ok = b.and_(ok, c)
    fail = lw.function("__assertfail", ir.VoidType(), [GENERIC, GENERIC, I32, GENERIC, I64])
    with b.if_then(b.not_(ok)):
        loc = op.loc
        args = [
            _cstring(lw, op.attrs.get("message", "")),
            _cstring(lw, str(getattr(loc, "file", "kernel"))),
            const_i32(getattr(loc, "line", 0) or 0),
            _cstring(lw, "kernel"),
            ir.Constant(I64, 1),
        ]
        b.call(fail, args)
