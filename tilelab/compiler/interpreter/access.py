"""Memory ops: pointer arithmetic, loads, stores and atomics, with bounds checks.

Every access first drops the masked-off lanes (they never touch memory), then checks
that each remaining address lies inside an array argument, then gathers or scatters
through ``Memory``. An address outside every array raises ``KernelRuntimeError``
naming the kernel line, the program, the tile element, the address and the arrays'
ranges: an interpreted kernel never crashes the process. With ``sanitize=True`` a
misaligned address is an error too (on a GPU it faults).

Atomics run lane by lane in row-major order: lanes with distinct addresses go
together, and a repeated address is updated once per round, so ``old`` values are
exactly those of a sequential execution (programs themselves run one after another).
"""

from __future__ import annotations

import numpy as np

from ..ir.ops import AddPtrOp, AtomicCASOp, AtomicRMWOp, LoadOp, StoreOp
from .elementwise import _FLOAT_BINARY
from .errors import AccessRecord, format_index
from .numeric import dtype_of, unsigned_dtype
from .registry import handles


@handles(AddPtrOp)
def addptr(it, op, ptr, offset):
    size = op.results[0].type.element.pointee.itemsize
    return ptr + np.asarray(offset).astype(np.int64, copy=False) * size


def _active_addresses(it, op, kind, ptr, mask, dtype):
    """The active lanes' addresses (1-d), the active-lane mask (None: all), their region.

    Raises ``KernelRuntimeError`` for an address outside every array argument.
    """
    ptr = np.asarray(ptr)
    shape = ptr.shape
    flat = ptr.reshape(-1)
    active = None
    if mask is not None:
        mask = np.asarray(mask)
        active = (mask if mask.shape == shape else np.broadcast_to(mask, shape)).reshape(-1)
        if active.all():
            active = None
    addrs = flat if active is None else flat[active]
    region, bad = it.memory.locate(addrs, dtype.itemsize)
    if bad < 0 and it.sanitize and dtype.itemsize > 1:
        misaligned = (addrs & (dtype.itemsize - 1)) != 0
        if misaligned.any():
            _fault(it, op, kind, shape, active, int(np.argmax(misaligned)), addrs, dtype, "misaligned")
    if bad >= 0:
        _fault(it, op, kind, shape, active, bad, addrs, dtype, "out-of-bounds")
    if it.trace is not None:
        _record(it, op, kind, ptr, active, addrs, dtype.itemsize)
    return addrs, active, region


def _fault(it, op, kind, shape, active, position, addrs, dtype, what):
    flat = position if active is None else int(np.flatnonzero(active)[position])
    addr = int(addrs[position]) & (2**64 - 1)  # a negative address prints as the GPU sees it
    text = (
        f"{what} {kind} in program {it.pid} at element {format_index(flat, shape)}: "
        f"address 0x{addr:x} ({dtype.itemsize} bytes)"
    )
    text += " is not aligned" if what == "misaligned" else " is outside every array argument"
    details = it.memory.describe() or ["(the kernel has no array arguments)"]
    raise it.error(op, text, details)


def _record(it, op, kind, ptr, active, addrs, itemsize):
    mask = np.ones(ptr.shape, bool) if active is None else active.reshape(ptr.shape).copy()
    owner = it.memory.owner(int(addrs[0])) if len(addrs) else None
    it.trace.append(AccessRecord(it.op_index[op], kind, op.loc, ptr.astype(np.int64).copy(), mask, itemsize, owner))


def read_masked(it, op, ptr, mask, dtype) -> np.ndarray:
    """The elements ``ptr`` points to, zeros where ``mask`` is off (checked and traced as loads)."""
    shape = np.shape(ptr)
    addrs, active, region = _active_addresses(it, op, "load", ptr, mask, dtype)
    values = it.memory.read(addrs, dtype, region)
    if active is None:
        return values.reshape(shape)
    out = np.zeros(active.shape, dtype)
    out[active] = values
    return out.reshape(shape)


@handles(LoadOp)
def load(it, op, ptr, *rest):
    mask = rest[0] if op.attrs["has_mask"] else None
    other = rest[op.attrs["has_mask"]] if op.attrs["has_other"] else None
    dtype = dtype_of(op.results[0].type)
    shape = np.shape(ptr)
    addrs, active, region = _active_addresses(it, op, "load", ptr, mask, dtype)
    values = it.memory.read(addrs, dtype, region)
    if active is None:
        return values.reshape(shape)
    if other is None:
        out = np.zeros(active.shape, dtype)
    else:
        out = np.broadcast_to(np.asarray(other).astype(dtype), shape).reshape(-1).copy()
    out[active] = values
    return out.reshape(shape)


@handles(StoreOp)
def store(it, op, ptr, value, *rest):
    mask = rest[0] if op.attrs["has_mask"] else None
    write_masked(it, op, ptr, mask, value, dtype_of(op.operands[0].type.element.pointee))


def write_masked(it, op, ptr, mask, value, dtype=None) -> None:
    """Write ``value`` (as ``dtype``, default its own) where ``mask`` holds (checked and traced as stores)."""
    dtype = dtype or np.asarray(value).dtype
    shape = np.shape(ptr)
    addrs, active, region = _active_addresses(it, op, "store", ptr, mask, dtype)
    values = np.asarray(value).astype(dtype, copy=False)
    values = (values if values.shape == shape else np.broadcast_to(values, shape)).reshape(-1)
    it.memory.write(addrs, values if active is None else values[active], region)


def _unsigned(fn):
    def apply(old, val):
        u = unsigned_dtype(old.dtype.itemsize * 8)
        return fn(old.view(u), val.view(u)).view(old.dtype)

    return apply


def _by_kind(int_fn, float_fn):
    """``int_fn`` on integer memory, ``float_fn`` on floats."""

    def apply(old, val):
        return int_fn(old, val) if old.dtype.kind in "iub" else float_fn(old, val)

    return apply


_ATOMIC = {
    "add": np.add,
    "fadd": np.add,
    # floats: the non-NaN operand, as ``tl.maximum`` and LLVM's ``atomicrmw fmax`` on the CPU and GPU
    # (numpy's ``maximum`` spread a NaN, where the compiled targets drop it)
    "max": _by_kind(np.maximum, _FLOAT_BINARY["max"]),
    "min": _by_kind(np.minimum, _FLOAT_BINARY["min"]),
    "umax": _unsigned(np.maximum),
    "umin": _unsigned(np.minimum),
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
    "xchg": lambda old, val: val,
}


def _sequential_update(memory, region, addrs, values, update):
    """Apply ``update(old, value)`` lane by lane in order; give every lane's old value."""
    old_all = np.empty(len(addrs), values.dtype)
    remaining = np.arange(len(addrs))
    while remaining.size:
        _, first = np.unique(addrs[remaining], return_index=True)  # distinct: any order will do
        lanes = remaining[first]
        old = memory.read(addrs[lanes], values.dtype, region)
        memory.write(addrs[lanes], update(old, values[lanes], lanes), region)
        old_all[lanes] = old
        remaining = np.delete(remaining, first)
    return old_all


def _atomic_result(values_dtype, shape, active, old):
    if active is None:
        return old.reshape(shape)
    out = np.zeros(active.shape, values_dtype)
    out[active] = old
    return out.reshape(shape)


@handles(AtomicRMWOp)
def atomic_rmw(it, op, ptr, val, *rest):
    mask = rest[0] if op.attrs["has_mask"] else None
    dtype = dtype_of(op.results[0].type)
    shape = np.broadcast_shapes(np.shape(ptr), np.shape(val))
    ptr = np.broadcast_to(ptr, shape)
    addrs, active, region = _active_addresses(it, op, "atomic", ptr, mask, dtype)
    values = np.broadcast_to(np.asarray(val).astype(dtype), shape).reshape(-1)
    values = values if active is None else values[active]
    fn = _ATOMIC[op.attrs["kind"]]
    old = _sequential_update(it.memory, region, addrs, values, lambda o, v, lanes: fn(o, v).astype(dtype))
    return _atomic_result(dtype, shape, active, old)


@handles(AtomicCASOp)
def atomic_cas(it, op, ptr, cmp, val):
    dtype = dtype_of(op.results[0].type)
    shape = np.broadcast_shapes(np.shape(ptr), np.shape(cmp), np.shape(val))
    ptr = np.broadcast_to(ptr, shape)
    addrs, _, region = _active_addresses(it, op, "atomic", ptr, None, dtype)
    bits = unsigned_dtype(dtype.itemsize * 8)
    cmp = np.broadcast_to(np.asarray(cmp).astype(dtype), shape).reshape(-1)
    values = np.broadcast_to(np.asarray(val).astype(dtype), shape).reshape(-1)

    def swap(old, new, lanes):
        equal = old.view(bits) == cmp[lanes].view(bits)
        return np.where(equal, new, old)

    return _sequential_update(it.memory, region, addrs, values, swap).reshape(shape)
