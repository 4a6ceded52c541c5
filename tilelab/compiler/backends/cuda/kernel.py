"""The kernel function on the GPU: signature, lowering of the body, libdevice, optimization, PTX.

The kernel becomes one ``ptx_kernel`` function: pointers as ``ptr addrspace(1)``,
scalars by value (bools as bytes), ``maxntid = 32 * num_warps`` in the
``nvvm.annotations``. Shared memory is one dynamic array: the buffers that
``allocate-shared-memory`` placed come first, the private scratch of ops that still move
data through shared memory by themselves (reductions, scans, dot staging) after them.
Every op of the body is lowered by the ``@lower`` table (``lower_*.py``); then libdevice is
linked in when a math function needs it and LLVM's O3 pipeline (which folds the ``__nvvm_reflect`` queries of libdevice)
optimizes the module.

    llir, ptx, shared = compile_to_ptx(module, CompileOptions(target="cuda", arch="sm_90a", num_warps=4))
"""

from __future__ import annotations

import os
import time

import llvmlite.binding as llvm
from llvmlite import ir

from tilelab._switch import SharedSwitch
from tilelab.compiler.analysis.axis_info import analyze
from tilelab.compiler.options import CompileOptions
from tilelab.errors import CompilationError

from ..common.dead_values import drop_dead_values
from ..common.debuginfo import LineTable
from ..common.release import release
from ..common.types import I32
from .barriers import drop_redundant_barriers
from .context import LOWERINGS, CudaLowering, LoweringBug, gpu_type
from .emit import target_machine
from .hooks import NVVM, NotOnTarget
from .math import libdevice_path
from .occupancy import arch_number
from .tensormaps import tensormap_ops
from .wide_offsets import keep_offsets_wide

LOWERINGS.load()  # the common lowerings load with the backend, the others with their first op


class InternalCompilerError(Exception):
    """LLVM rejected the IR the CUDA backend produced: a compiler bug, not a user error."""


class LocatedLowering(CudaLowering):
    """``CudaLowering`` whose instructions carry their op's source line (``.loc`` in PTX, lines in SASS).

    An op the target cannot lower (``hooks.NotOnTarget``) becomes a ``CompilationError`` naming its line.
    """

    lines: LineTable

    def lower_op(self, op) -> None:
        outer = self.b.debug_metadata
        self.b.debug_metadata = self.lines.location(self.fn, op.loc)
        try:
            self.hooks.check_op(op)
            super().lower_op(op)
        except NotOnTarget as e:
            raise CompilationError.at(op.loc, str(e)) from None
        finally:
            self.b.debug_metadata = outer


#: a TMA tensor map parameter: 128 bytes by value, 64-byte aligned (``.param .align 64 .b8 map[128]``)
TENSORMAP = ir.ArrayType(ir.IntType(8), 128).as_pointer()


def param_type(t) -> ir.Type:
    """How a kernel parameter is passed: pointers global, bools as bytes."""
    if not t.is_pointer and t.is_bool:
        return ir.IntType(8)
    return gpu_type(t)


def build_llvm_module(
    module, options: CompileOptions, hooks=NVVM, rotate_waited_loops: bool = False
) -> tuple[ir.Module, CudaLowering]:
    """Lower ``module``'s kernel to an llvmlite module (not yet optimized); ``lw.options`` is ``options``.

    ``hooks`` give the target's triple, kernel calling convention and leaves (``hooks.py``);
    ``rotate_waited_loops``: see ``lower_control.lower_for``.
    """
    func, num_warps = module.kernel, options.num_warps
    llmod = ir.Module(name=func.sym_name, context=ir.Context())  # its own named types (``lw.struct``)
    llmod.triple = hooks.triple
    llmod.data_layout = hooks.data_layout
    maps = tensormap_ops(func)  # TMA tensor maps: by-value parameters after the kernel's own
    fnty = ir.FunctionType(ir.VoidType(), [param_type(a.type) for a in func.args] + [TENSORMAP] * len(maps))
    fn = ir.Function(llmod, fnty, func.sym_name)
    fn.calling_convention = hooks.calling_convention
    lw = LocatedLowering(llmod, fn, num_warps, hooks)
    lw.tensormap_params = dict(zip(maps, fn.args[len(func.args) :]))
    for param in lw.tensormap_params.values():
        param.add_attribute("byval")
        param.attributes.align = 64
    lw.options = options  # the lowering's switches (ldmatrix...)
    lw.rotate_waited_loops = rotate_waited_loops
    arch = options.gpu_arch
    lw.sm = arch_number(arch) if arch.startswith("sm_") else 0
    lw.private_base = module.attrs.get("shared_bytes", 0)  # ops' private scratch goes after the buffers
    lw.lines = LineTable(llmod, func.loc.file, emission="DebugDirectivesOnly")
    lw.lines.function(fn, name=func.sym_name, line=func.loc.line)
    lw.uses_libdevice = False
    lw.axis = analyze(func)
    for param, name in zip(fn.args, func.attrs.get("arg_names") or []):
        param.name = name
    for arg, param in zip(func.args, fn.args):
        value = param
        if not arg.type.is_pointer and arg.type.is_bool:
            value = lw.entry.trunc(param, ir.IntType(1))
        lw.set(arg, value)
    lw.lower_block(func.body)
    if not lw.b.block.is_terminated:
        lw.b.ret_void()
    lw.finish()
    drop_redundant_barriers(fn, lw.body, lw.scratch_barriers)
    drop_dead_values(fn)  # fewer lines to print and parse; O3 would delete them first thing
    hooks.annotate(llmod, fn, num_warps, options.maxnreg)
    if maps:  # read in place (``cvta.param``), not copied to local memory: ``__grid_constant__``
        first = ir.Constant(I32, len(func.args) + 1)
        indices = llmod.add_metadata([ir.Constant(I32, i) for i in range(first.constant, first.constant + len(maps))])
        annotations = llmod.get_named_metadata("nvvm.annotations")
        annotations.add(llmod.add_metadata([fn, "grid_constant", indices]))
    return llmod, lw


def optimize(
    llmod: ir.Module,
    arch: str,
    link_libdevice: bool,
    libdevice: str | None = None,
    tools=None,
    ftz: bool = False,
    context: llvm.ContextRef | None = None,
) -> llvm.ModuleRef:
    """Parse (into ``context``, LLVM's global one by default), link libdevice (when used: the file
    ``libdevice``, else the toolkit's), verify and optimize at O3.

    ``ftz`` sets the ``nvvm-reflect-ftz`` module flag: libdevice's ``__nvvm_reflect("__CUDA_FTZ")``
    queries then fold to 1 and its flush-to-zero code is kept (Triton's ``enable_reflect_ftz``).
    """
    if link_libdevice and ftz:
        flag = llmod.add_metadata([ir.Constant(ir.IntType(32), 4), "nvvm-reflect-ftz", ir.Constant(ir.IntType(32), 1)])
        llmod.add_named_metadata("llvm.module.flags", flag)
    try:
        mod = llvm.parse_assembly(str(llmod), context=context)
    except RuntimeError as e:
        raise InternalCompilerError(f"LLVM rejected the lowered kernel {llmod.name}: {e}") from None
    try:
        _verify_link_optimize(mod, llmod.name, arch, link_libdevice, libdevice, tools, context)
    except BaseException:
        mod.close()  # now, not whenever the traceback goes: its context may be closed before that
        raise
    return mod


def _verify_link_optimize(mod, name: str, arch: str, link_libdevice: bool, libdevice, tools, context) -> None:
    try:
        mod.verify()
    except RuntimeError as e:
        raise InternalCompilerError(f"LLVM rejected the lowered kernel {name}: {e}") from None
    if link_libdevice:
        path = libdevice_path(libdevice, tools)
        if path is None:
            raise LoweringBug(
                "this kernel needs libdevice (nvvm/libdevice/libdevice.10.bc): set CUDA_HOME or TILELAB_LIBDEVICE"
            )
        called = frozenset(f.name for f in mod.functions if f.is_declaration and f.name.startswith("__nv_"))
        lib = llvm.parse_bitcode(_libdevice_subset(path, called, arch), context=context)
        lib.triple, lib.data_layout = mod.triple, mod.data_layout
        mod.link_in(lib)  # takes ``lib`` in: nothing of it is left to free
        _internalize(mod, name)
    tm = target_machine(arch)
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pb = llvm.create_pass_builder(tm, pto)
    with _dead_store_search_off():
        pb.getModulePassManager().run(mod, pb)


#: O3 without its dead-store search (``-dse-memoryssa-scanlimit=0``; LLVM's default, 150, after).
#: It finds nothing in a CUDA kernel: global stores are inline PTX, and the plain ``store``s the
#: lowering emits (shared memory, ``printf`` arguments) are each read after them, by a barrier (which
#: LLVM counts as a read) or the call. Yet the search cost 0.02 s of a matmul's 0.12 s of O3 (14%), its
#: epilogue's 64 shared stores through swizzled (XOR) addresses asking alias analysis about each other.
#: The option is LLVM's, process-wide: concurrent compiles hold it together, the last restores it
#: (a CPU kernel optimized meanwhile only looks less hard for dead stores).
_DEAD_STORE_SEARCH_OFF = SharedSwitch(
    lambda: llvm.set_option("", "-dse-memoryssa-scanlimit=0"),
    lambda: llvm.set_option("", "-dse-memoryssa-scanlimit=150"),
)
_dead_store_search_off = _DEAD_STORE_SEARCH_OFF.held


_SUBSETS: dict[tuple[str, float, frozenset], bytes] = {}


def _libdevice_subset(path: str, called: frozenset, arch: str) -> bytes:
    """Bitcode of the libdevice functions in ``called`` and what they call, kept per process.

    Linking all of libdevice (a 460 KB module) and letting O3 optimize its hundreds of functions
    before dropping the unused ones cost ~0.1 s per kernel; an autotuning sweep compiles the same
    math calls for every config, so the subset is cut once (internalize the rest, global DCE).
    """
    key = (path, os.path.getmtime(path), called)
    if key not in _SUBSETS:
        with open(path, "rb") as f:
            lib = llvm.parse_bitcode(f.read())
        for fn in lib.functions:
            if fn.name not in called and not fn.is_declaration:
                fn.linkage = llvm.Linkage.internal
        dce = llvm.create_new_module_pass_manager()
        dce.add_global_dead_code_eliminate_pass()
        dce.run(lib, llvm.create_pass_builder(target_machine(arch), llvm.create_pipeline_tuning_options(0)))
        _SUBSETS[key] = lib.as_bitcode()
    return _SUBSETS[key]


def _internalize(mod: llvm.ModuleRef, kernel: str) -> None:
    """Make the linked libdevice functions internal so that unused ones are dropped."""
    for f in mod.functions:
        if f.name != kernel and not f.is_declaration:
            f.linkage = llvm.Linkage.internal


def compile_to_ptx(
    module, options: CompileOptions, seconds: dict | None = None, rotate_waited_loops: bool = False
) -> tuple[str, str, int]:
    """``(optimized LLVM IR, PTX, dynamic shared bytes)`` of ``module``'s kernel for ``options.gpu_arch``.

    ``seconds``, when given, receives the time of each step: ``lower`` (tile IR to LLVM IR, in Python),
    ``llvm`` (parse, link libdevice, O3) and ``emit`` (LLVM's NVPTX code generator).
    ``rotate_waited_loops``: see ``lower_control.lower_for``.

    The LLVM IR is the text O3 leaves, as Triton's ``llir`` is: the code generator's own IR passes
    (loop strength reduction, CodeGenPrepare) rewrite the module in place, and the text taken after
    them showed their rewrites as if O3 had made them.
    """
    arch = options.gpu_arch
    t0 = time.perf_counter()
    llmod, lw = build_llvm_module(module, options, rotate_waited_loops=rotate_waited_loops)
    t1 = time.perf_counter()
    # An LLVM context of its own: what the module makes there (its named types, constants, debug
    # metadata) goes with it instead of piling up in the global context, one kernel after another.
    # The module is freed before its context, by hand (freed after it, it would crash).
    context = llvm.create_context()
    mod = None
    try:
        mod = optimize(
            llmod, arch, lw.uses_libdevice, options.libdevice, dict(options.tools), options.reflect_ftz, context
        )
        release(llmod)  # LLVM holds the kernel now: free the Python module by reference counting
        t2 = time.perf_counter()
        llir = str(mod)
        t3 = time.perf_counter()
        ptx = keep_offsets_wide(target_machine(arch).emit_assembly(mod))
        if seconds is not None:
            seconds.update(lower=t1 - t0, llvm=t2 - t1, emit=time.perf_counter() - t3)
        return llir, ptx, lw.scratch_bytes
    finally:
        if mod is not None:
            mod.close()
        context.close()
