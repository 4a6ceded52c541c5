"""From a tile IR module to an LLVM module: the per-program function and the grid entry.

For a kernel ``add(x, y, out, n)`` two LLVM functions are emitted:

* ``add(x, y, out, n, pid_x, pid_y, pid_z, grid_x, grid_y, grid_z) -> i32`` runs one
  program instance (status 0, or 1 when an assert or bounds check failed);
* ``add_grid(args, start, end, grid_x, grid_y, grid_z) -> i32`` runs the programs
  whose linear ids (x fastest) lie in ``[start, end)``. ``args`` points at one 8-byte
  slot per kernel argument (addresses, or scalars in the slot's low bytes), so the
  runtime calls every kernel through one ctypes signature and splits the grid over
  threads; three more slots hold the coordinates ``x, y, z`` of program ``start``
  (``COORDINATE_SLOTS``: the caller divides, once per call, not the generated code).

The sanitized variant (``add_grid_sanitized``) also takes the argument arrays' byte
ranges (``ptr ranges, i64 count``) and checks every access (sanitize.py).
"""

from __future__ import annotations

from llvmlite import ir

from tilelab.compiler.ir.core import FuncOp, Module
from tilelab.compiler.ir.ops import (
    AssertOp,
    AtomicCASOp,
    AtomicRMWOp,
    CallOp,
    DotOp,
    ForOp,
    LoadOp,
    PrintOp,
    StoreOp,
    WhileOp,
)
from tilelab.compiler.ir.types import SCALARS

from ..common.types import I32, I64, PTR, register_type
from .codegen import needs_unrolling
from .context import LOWERINGS, FunctionLowering
from .debuginfo import LineTable
from .fusion import lazy_values

LOWERINGS.load()  # the lowering modules load with the backend (the prefetch thread imports it)

REPORTED = (LoadOp, StoreOp, AtomicRMWOp, AtomicCASOp, PrintOp, AssertOp, ForOp)
#: slots after the arguments' that hold program ``start``'s ``x, y, z`` (an ``i32`` in each)
COORDINATE_SLOTS = 3


class UnsupportedKernel(Exception):
    """The kernel uses something the CPU backend does not lower; the message names the line."""


def build_llvm_module(module: Module, sanitize: bool = False) -> tuple[ir.Module, dict, str]:
    """Lower ``module``'s kernel; returns the LLVM module, the op table for runtime reports, and its pipeline.

    The pipeline (codegen.py) is ``"unroll"`` for kernels with accumulators or 2-D tiles,
    ``"lanes"`` when every loop over elements was written as vector code (lanes.py), else
    ``"vectorize"``.
    """
    func = module.kernel
    for op in func.walk():
        if isinstance(op, CallOp):
            raise UnsupportedKernel(f"{op.loc.file}:{op.loc.line}: call of {op.callee} was not inlined")
    llmod = ir.Module(name=func.sym_name)
    lines = LineTable(llmod, func.loc.file)
    op_ids = {op: i for i, op in enumerate(func.walk()) if isinstance(op, REPORTED)}
    unroll = needs_unrolling(module)
    kernel, scalar_loops = _kernel_function(llmod, func, op_ids, sanitize, lines, lanes=not (unroll or sanitize))
    _grid_function(llmod, func, kernel, sanitize, lines)
    pipeline = "unroll" if unroll else ("vectorize" if scalar_loops or sanitize else "lanes")
    return llmod, {str(i): _op_info(op) for op, i in op_ids.items()}, pipeline


def work_per_program(module: Module) -> int:
    """A rough count of element operations per program (loop bodies count 8 times, a dot its multiply-adds).

    The runtime splits a grid over threads only when the whole launch is worth it.
    """

    def block_work(block, scale):
        total = 0
        for op in block.ops:
            if isinstance(op, DotOp):  # [.., M, K] x [.., K, N]: numel(result) * K
                total += scale * op.results[0].type.numel * op.operands[0].type.shape[-1]
                continue
            total += scale * sum(r.type.numel for r in op.results)
            inner = scale * 8 if isinstance(op, (ForOp, WhileOp)) else scale
            for region in op.regions:
                total += block_work(region.block, inner)
        return total

    return max(1, block_work(module.kernel.body, 1))


def grid_symbol(func_name: str, sanitize: bool) -> str:
    return f"{func_name}_grid" + ("_sanitized" if sanitize else "")


def _kernel_function(llmod, func: FuncOp, op_ids, sanitize, lines: LineTable, lanes: bool) -> tuple[ir.Function, int]:
    """The per-program function; also how many loops over elements it left to LLVM's vectorizer."""
    params = [register_type(a.type) for a in func.args] + [I32] * 6 + ([PTR, I64] if sanitize else [])
    fn = ir.Function(llmod, ir.FunctionType(I32, params), func.sym_name)
    fn.linkage = "internal"
    if lanes:  # inlined into the grid loop first: LLVM then optimizes the program once, not twice
        fn.attributes.add("alwaysinline")  # (the short pipeline inlines nothing else; O3 of 2-D kernels as before)
    lines.function(fn, func.sym_name, func.loc.line)
    entry = fn.append_basic_block("entry")
    lw = FunctionLowering(fn, entry, sanitize, op_ids, lazy_values(func, sanitize))
    lw.lines = lines
    lw.lane_mode = lanes
    n = len(func.args)
    for arg, llarg in zip(func.args, fn.args):
        lw.values[arg] = llarg
    lw.pids = list(fn.args[n : n + 3])
    lw.grid = list(fn.args[n + 3 : n + 6])
    if sanitize:
        lw.ranges = tuple(fn.args[n + 6 : n + 8])
    lw.lower_block(func.body)
    if not lw.b.block.is_terminated:
        lw.b.ret(ir.Constant(I32, 0))
    ir.IRBuilder(entry).branch(fn.blocks[1])
    return fn, lw.scalar_loops


def _unpack_arg(b: ir.IRBuilder, args: ir.Value, i: int, t) -> ir.Value:
    slot = b.gep(args, [ir.Constant(I64, i)], source_etype=I64)
    if t.is_pointer:
        return b.load(slot, typ=PTR)
    lt = register_type(t)
    if t.is_bool:
        return b.trunc(b.load(slot, typ=ir.IntType(8)), lt)
    return b.load(slot, typ=lt)


def _grid_function(llmod, func: FuncOp, kernel: ir.Function, sanitize: bool, lines: LineTable) -> ir.Function:
    params = [PTR, I64, I64, I32, I32, I32] + ([PTR, I64] if sanitize else [])
    fn = ir.Function(llmod, ir.FunctionType(I32, params), grid_symbol(func.sym_name, sanitize))
    lines.function(fn, fn.name, func.loc.line)
    args, start, end, gx, gy, gz = fn.args[:6]
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.debug_metadata = lines.location(fn, func.loc)  # inlined kernel code keeps its own lines
    values = [_unpack_arg(b, args, i, a.type) for i, a in enumerate(func.args)]
    n = len(func.args)
    first = [_unpack_arg(b, args, n + k, SCALARS["i32"]) for k in range(COORDINATE_SLOTS)]  # program ``start``
    pre = b.block
    head, body, done = (fn.append_basic_block(n) for n in ("head", "body", "done"))
    b.branch(head)
    b.position_at_end(head)
    lin = b.phi(I64)
    lin.add_incoming(start, pre)
    pid = [b.phi(I32) for _ in range(3)]
    for phi, value in zip(pid, first):
        phi.add_incoming(value, pre)
    b.cbranch(b.icmp_signed("<", lin, end), body, done)
    b.position_at_end(body)
    status = b.call(kernel, [*values, *pid, gx, gy, gz, *fn.args[6:]])
    lin.add_incoming(b.add(lin, ir.Constant(I64, 1)), body)
    for phi, value in zip(pid, _next_program(b, pid, (gx, gy))):
        phi.add_incoming(value, body)
    failed = b.icmp_unsigned("!=", status, ir.Constant(I32, 0))
    b.cbranch(failed, done, head)
    b.position_at_end(done)
    result = b.phi(I32)
    result.add_incoming(ir.Constant(I32, 0), head)
    result.add_incoming(status, body)
    b.ret(result)
    return fn


def _next_program(b: ir.IRBuilder, pid, grid) -> list[ir.Value]:
    """The program after ``pid`` in x-fastest order: ``x + 1``, carrying into ``y`` and ``z``."""
    one, zero = ir.Constant(I32, 1), ir.Constant(I32, 0)
    x = b.add(pid[0], one)
    carry_x = b.icmp_unsigned(">=", x, grid[0])
    y = b.add(pid[1], b.zext(carry_x, I32))
    carry_y = b.icmp_unsigned(">=", y, grid[1])
    z = b.add(pid[2], b.zext(carry_y, I32))
    return [b.select(carry_x, zero, x), b.select(carry_y, zero, y), z]


def _op_info(op) -> dict:
    """What the runtime needs to turn a report about ``op`` into a message (JSON-able)."""
    info = {"op": op.name, "file": op.loc.file, "line": op.loc.line, "col": op.loc.col}
    if isinstance(op, PrintOp):
        info["prefix"] = op.attrs.get("prefix", "")
        info["hex"] = bool(op.attrs.get("hex", False))
        info["values"] = [[str(v.type.element), list(v.type.shape)] for v in op.operands]
    elif isinstance(op, ForOp):
        pass
    elif isinstance(op, AssertOp):
        info["message"] = op.attrs.get("message", "")
        info["shape"] = list(op.operands[0].type.shape)
    else:
        t = op.results[0].type if op.results else op.operands[1].type
        info["shape"] = list(t.shape)
        info["itemsize"] = t.element.itemsize
    return info
