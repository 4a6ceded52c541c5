"""Launching a CPU kernel: argument packing, the grid split over a thread pool, reports.

    launch = CpuLauncher(artifact, module)        # maps the object code: no LLVM work
    launch((n // 1024, 1, 1), [x, y, out, n], False)

A launch packs the arguments into one 8-byte slot each (array addresses, scalars in the
low bytes; ``packing_plan``), then the coordinates of a chunk's first program, and calls the
kernel's grid entry (``<name>_grid``) over chunks of the linear program ids from a thread
pool; ctypes releases the GIL during each call, so the chunks run in parallel.
``TILELAB_NUM_THREADS`` caps the threads (``options.num_threads``; default: the cores this
process may use). Kernels that print run on one thread, in program order.

How many threads a launch gets (``CpuLauncher._threads_for``): waking a worker costs from
~20 us on a quiet machine to ~250 us on a small virtual machine, so each thread must get
``WAKE_MULTIPLE`` times that much work. A kernel's first launches go by a static estimate
of its element operations (``MIN_WORK_PER_THREAD``); its second and third launches on one
thread time its programs, and later launches decide by that time and by the wake cost the
pool measured when it started (``wake_seconds``). A split launch that took more than
``SPLIT_MUST_SAVE`` of the time one thread would have taken (a kernel that waits on memory
the cores share) keeps that kernel on one thread from then on.

The compiled code reports prints, failed asserts and (sanitize mode) out-of-bounds
accesses through a callback into the launch's own list (thread-local: launches on several
threads at once never see each other's reports); ``cpu_errors.py`` turns them into the
interpreter's messages. Launches stop on Ctrl-C and ``signal.alarm`` (``interrupts.py``), and
a kernel whose tiles need more stack than a thread has runs on a thread made with that stack.
"""

from __future__ import annotations

import ctypes
import functools
import os
import struct
import threading
import time

import numpy as np

from tilelab.compiler.backends import cpu as backend
from tilelab.compiler.backends.cpu.interrupt import SIGNAL_STATE, STATUS_STOPPED
from tilelab.compiler.ir.types import PointerType

from .cpu_errors import kernel_error, print_operand, runtime_error, sanitizer_ranges
from .grid import launch_dims
from .interrupts import arm as arm_interrupts  # names, not `from . import interrupts` (see below)
from .interrupts import state_address, stopped, wait_all
from .options import num_threads
from .targets import Artifact

# Why names: ``from . import interrupts`` asks the package for the attribute first, and an importer that
# answers missing attributes with placeholders (Triton's test suite run through an import alias, while
# pytest collects) handed back a placeholder in place of the module.

GRID_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, *[ctypes.c_int32] * 3)
SANITIZED_GRID_FN = ctypes.CFUNCTYPE(
    ctypes.c_int32,
    ctypes.c_void_p,
    ctypes.c_int64,
    ctypes.c_int64,
    *[ctypes.c_int32] * 3,
    ctypes.c_void_p,
    ctypes.c_int64,
)
REPORT_FN = ctypes.CFUNCTYPE(
    None, *[ctypes.c_int32] * 5, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64
)

#: before a kernel's programs are timed, a launch is split only when it has twice this many element
#: operations (a static guess; vector add 1M, ~15M operations, stays on one thread: two ran ~1.5x slower
#: on a 2-core machine), and then each thread gets at least ``MIN_WORK_PER_THREAD // 8`` of them (f32
#: matmul 512^3, ~75M, on all of 16 cores)
MIN_WORK_PER_THREAD = 1 << 23
#: each thread of a split launch must get this many times the cost of waking a worker
WAKE_MULTIPLE = 4
#: the wake cost assumed until the pool has measured it
DEFAULT_WAKE_SECONDS = 100e-6
#: a split launch must take less than this share of one thread's time, or the kernel stays on one thread
SPLIT_MUST_SAVE = 0.8
_pool = None  # a concurrent.futures.ThreadPoolExecutor, made on the first threaded launch
_pool_lock = threading.Lock()
_wake_seconds: float | None = None  # a no-op's round trip through the pool, measured when it starts


def _thread_pool():
    """The process-wide worker pool (imported and started on first use: most launches never need it)."""
    from concurrent.futures import ThreadPoolExecutor

    global _pool, _wake_seconds
    with _pool_lock:
        if _pool is None:
            pool = ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1), thread_name_prefix="tilelab-cpu")
            pool.submit(int).result()  # the first worker starts
            trips = []
            for _ in range(3):
                t = time.perf_counter()
                pool.submit(int).result()
                trips.append(time.perf_counter() - t)
            _pool, _wake_seconds = pool, sorted(trips)[1]
        return _pool


def wake_seconds() -> float:
    """What waking a worker costs here: measured when the pool started, else ``DEFAULT_WAKE_SECONDS``."""
    return _wake_seconds if _wake_seconds is not None else DEFAULT_WAKE_SECONDS


class CpuLauncher:
    """``launcher(grid, args, sanitize)``: runs a loaded kernel over a grid."""

    def __init__(self, artifact: Artifact, module):
        self.module = module
        self.kernel = module.kernel
        self.names = list(self.kernel.attrs.get("arg_names") or [f"arg{i}" for i in range(len(self.kernel.args))])
        self.meta = artifact.metadata
        self.lock = threading.Lock()  # guards the sanitized variant's one compile
        self.callback = REPORT_FN(self._report)
        self.lib = backend.LoadedObject(artifact.blobs["obj"])
        self.grid_fn = GRID_FN(self._bind(self.lib))
        self.retired: list = []  # code of earlier tiers, kept mapped: a launch on another thread may run it
        self.launches = 0  # unsanitized launches on one thread so far
        self.program_seconds: float | None = None  # one program's time on one thread (launches 2 and 3, then the last)
        self.split_pays = True  # False once a split launch saved too little (SPLIT_MUST_SAVE)
        self.sanitized = None  # compiled on the first sanitized launch
        self.ops = self.meta["ops"]
        self.plan = packing_plan([p.type for p in self.kernel.args])

    def upgrade(self, blobs: dict) -> None:
        """Run the optimized tier's object code from the next launch on (runtime/tiers.py)."""
        lib = backend.LoadedObject(blobs["obj"])
        grid_fn = GRID_FN(self._bind(lib))
        self.retired.append((self.lib, self.grid_fn))
        self.lib, self.grid_fn = lib, grid_fn

    def _bind(self, lib, sanitize: bool = False) -> int:
        """Point the object's report global at our callback; return the grid entry's address."""
        gaddr = lib.address(backend.REPORT_GLOBAL)
        if gaddr:
            ctypes.c_void_p.from_address(gaddr).value = ctypes.cast(self.callback, ctypes.c_void_p).value
        saddr = lib.address(SIGNAL_STATE)
        if saddr:  # the stop flag the code checks between programs (interrupts.py)
            ctypes.c_void_p.from_address(saddr).value = state_address()
        symbol = self.meta["grid_symbol"] + ("_sanitized" if sanitize else "")
        address = lib.address(symbol) if isinstance(symbol, str) else 0
        if not address:  # calling address 0 would crash the process
            raise ValueError(f"the object code has no function {symbol!r}")
        return address

    # ----------------------------------------------------------------- launch
    def __call__(self, grid, args, sanitize: bool = False):
        gx, gy, gz = launch_dims(grid, kernel_error)
        slots = self._pack(args)
        total = gx * gy * gz
        if total == 0:
            return None
        if sanitize:
            fn, extra = self._sanitized_fn(), sanitizer_ranges(self._arrays(args))
        else:
            fn, extra = self.grid_fn, ()
        threads = 1 if self.meta.get("has_print") else self._threads_for(total)
        reports = _launch_state.reports = []  # this launch's own reports, whatever other threads launch
        arm_interrupts(self.lib)
        stack = self.meta.get("stack_bytes", 0)
        if stack > STACK_OF_A_THREAD:  # tiles too large for this thread's stack: run on one of their size
            status = _on_big_stack(stack, reports, fn, slots, total, (gx, gy, gz), extra)
        else:
            status = self._run(fn, slots, total, (gx, gy, gz), threads, extra)
        if status == STATUS_STOPPED:
            stopped()
        if status:
            raise runtime_error(self.module, self.ops, reports, self._arrays(args))
        return None

    def _threads_for(self, programs: int) -> int:
        """Threads worth starting for ``programs`` programs (the module docstring says how it is decided)."""
        if not self.split_pays:
            return 1
        if self.launches < 3 or self.program_seconds is None:  # not timed yet: element operations
            # (launches count up before their time is kept: a launch on another thread may be timing launch 2)
            work = programs * self.meta.get("work_per_program", MIN_WORK_PER_THREAD)
            if work < 2 * MIN_WORK_PER_THREAD:
                return 1  # decided without asking the OS for the usable cores
            return max(1, min(num_threads(), programs, max(2, work // (MIN_WORK_PER_THREAD // 8))))
        share = WAKE_MULTIPLE * wake_seconds()
        seconds = programs * self.program_seconds
        if seconds < 2 * share:
            return 1
        return max(1, min(num_threads(), programs, int(seconds / share)))

    def _run(self, fn, slots, total, grid, threads, extra) -> int:
        """Run programs ``[0, total)``; ``slots`` ends with program 0's coordinates, zeros."""
        extra_args = (extra[0].ctypes.data, len(extra[0]) // 2) if extra else ()
        if threads <= 1:
            if extra_args:
                return fn(ctypes.addressof(slots), 0, total, *grid, *extra_args)
            self.launches += 1
            t = time.perf_counter()
            status = fn(ctypes.addressof(slots), 0, total, *grid)
            if self.launches > 1:  # the first ran on cold caches and freshly touched pages
                seconds = (time.perf_counter() - t) / total
                early = self.launches == 3 and self.program_seconds is not None
                self.program_seconds = min(seconds, self.program_seconds) if early else seconds
            return status
        pool = _thread_pool()
        t = time.perf_counter()
        chunks = min(total, threads)
        bounds = [total * i // chunks for i in range(chunks + 1)]
        starting = [_starting_at(slots, bounds[i], grid) for i in range(1, chunks)]  # kept alive until done
        reports = _launch_state.reports
        futures = [
            pool.submit(_reporting_to, reports, fn, ctypes.addressof(s), bounds[i], bounds[i + 1], *grid, *extra_args)
            for i, s in enumerate(starting, start=1)
        ]
        try:
            first = fn(ctypes.addressof(slots), bounds[0], bounds[1], *grid, *extra_args)  # the calling thread's share
        finally:  # a signal's exception too waits for the other threads, which the stop flag ends
            rest = wait_all([f.result for f in futures])
        status = max([first, *rest])
        if not extra_args and self.launches >= 3 and self.program_seconds is not None:  # did splitting pay?
            if time.perf_counter() - t > SPLIT_MUST_SAVE * total * self.program_seconds:
                self.split_pays = False
        return status

    def _sanitized_fn(self):
        with self.lock:  # launches on several threads compile it once (two compiles at once crashed LLVM)
            if self.sanitized is None:
                compiled = backend.compile_kernel(self.module, sanitize=True, want_asm=False)
                lib = backend.LoadedObject(compiled.obj)
                self.sanitized = (lib, SANITIZED_GRID_FN(self._bind(lib, sanitize=True)))
        return self.sanitized[1]

    def _pack(self, args):
        """The arguments as one 8-byte slot each (a ctypes buffer), following ``packing_plan``."""
        if len(args) != len(self.kernel.args):
            raise kernel_error(
                f"kernel {self.kernel.sym_name} takes {len(self.names)} arguments "
                f"({', '.join(self.names)}), got {len(args)}"
            )
        layout, converters = self.plan
        try:
            values = [convert(arg) for convert, arg in zip(converters, args)]
        except _NotAnArray as e:
            name, arg = self.names[e.index], args[e.index]
            raise kernel_error(
                f"argument '{name}': a pointer parameter needs a numpy array, got {type(arg).__name__}"
            ) from None
        # the coordinate slots after the arguments stay zero: program 0 (kernel.py, COORDINATE_SLOTS)
        return ctypes.create_string_buffer(layout.pack(*values), layout.size + 8 * backend.COORDINATE_SLOTS)

    def _arrays(self, args) -> list[tuple[str, np.ndarray]]:
        """``(name, array)`` of the pointer arguments (for sanitizer ranges and error messages)."""
        return [(name, arg) for name, param, arg in zip(self.names, self.kernel.args, args) if param.type.is_pointer]

    # ----------------------------------------------------------------- reports
    def _report(self, kind, op_id, px, py, pz, index, addr, data, count):
        info = self.ops.get(str(op_id), {})
        pid = (px, py, pz)
        if kind == backend.REPORT_PRINT:
            print_operand(info, pid, index, data, count)
            return
        reports = getattr(_launch_state, "reports", None)
        if reports is not None:
            reports.append((kind, op_id, pid, index, addr))


#: stack buffers beyond this run on a thread with a stack of their size (threads get 8 MiB; leave room)
STACK_OF_A_THREAD = 4 << 20


def _on_big_stack(stack: int, reports: list, fn, slots, total, grid, extra) -> int:
    """Run all programs on a new thread whose stack holds ``stack`` bytes of tiles (and some to spare)."""
    extra_args = (extra[0].ctypes.data, len(extra[0]) // 2) if extra else ()
    result = []

    def run() -> None:
        result.append(_reporting_to(reports, fn, ctypes.addressof(slots), 0, total, *grid, *extra_args))

    with _pool_lock:  # the stack size applies to threads started while it is set
        previous = threading.stack_size(stack + (16 << 20))
        try:
            worker = threading.Thread(target=run)
            worker.start()
        finally:
            threading.stack_size(previous)
    wait_all([worker.join])
    return result[0] if result else 1


#: the reports list of the launch a thread is running programs of (set before each call of the code)
_launch_state = threading.local()


def _reporting_to(reports: list, fn, *args) -> int:
    """Run ``fn(*args)`` on a pool thread, its programs' reports going to ``reports``."""
    _launch_state.reports = reports
    return fn(*args)


def _starting_at(slots, linear: int, grid):
    """A copy of the argument ``slots`` whose coordinate slots hold program ``linear``'s ``(x, y, z)``."""
    gx, gy, _ = grid
    copy = ctypes.create_string_buffer(slots.raw, len(slots))
    offset = len(slots) - 8 * backend.COORDINATE_SLOTS
    struct.pack_into("<3Q", copy, offset, linear % gx, linear // gx % gy, linear // (gx * gy))
    return copy


class _NotAnArray(Exception):
    """A pointer argument that is not a numpy array (``index`` says which)."""

    def __init__(self, index: int):
        super().__init__(index)
        self.index = index


#: struct code and rounding of the float parameter types struct packs, each padded to its 8-byte slot
_FLOAT_SLOTS = {
    "f32": ("f4x", lambda v: float(np.float32(v))),
    "f64": ("d", float),
    "f16": ("e6x", lambda v: float(np.float16(v))),
}


def packing_plan(param_types) -> tuple[struct.Struct, list]:
    """How to pack arguments of these parameter types into 8-byte slots: a ``Struct`` and one converter each.

    Why: a launch packs its arguments on every call, so the per-type decisions are made once
    when the kernel loads. Pointers become addresses, integers wrap to their width (as the
    kernel's ``iN`` would), floats take their IEEE bytes in the slot's low bytes.
    """
    codes, converters = ["<"], []
    for i, t in enumerate(param_types):
        if isinstance(t, PointerType):
            codes.append("Q")
            converters.append(functools.partial(_address, index=i))
        elif t.is_int:
            codes.append("Q")
            converters.append(functools.partial(_wrapped_int, mask=(1 << t.bits) - 1, is_bool=t.is_bool))
        elif t.name in _FLOAT_SLOTS:
            code, convert = _FLOAT_SLOTS[t.name]
            codes.append(code)
            converters.append(convert)
        else:  # bf16, fp8: numpy does the rounding
            codes.append("8s")
            converters.append(functools.partial(_scalar_bytes, t=t))
    return struct.Struct("".join(codes)), converters


def _address(arg, index: int) -> int:
    if not isinstance(arg, np.ndarray):
        raise _NotAnArray(index)
    return arg.__array_interface__["data"][0]


def _wrapped_int(value, mask: int, is_bool: bool) -> int:
    return int(bool(value)) if is_bool else int(value) & mask


def _scalar_bytes(value, t) -> bytes:
    """A scalar launch argument as the bytes of its parameter type (ints wrap to the width)."""
    if not t.has_numpy:  # a float numpy lacks: its rounded bits
        return int(t.float_bits(float(value))).to_bytes(t.itemsize, "little")
    dtype = t.np_dtype
    if t.is_int and not t.is_bool:
        bits = np.array(int(value) & ((1 << t.bits) - 1), dtype=np.uint64)
        return bits.tobytes()[: dtype.itemsize]
    return np.array(value).astype(dtype).tobytes()


__all__ = ["CpuLauncher", "packing_plan", "wake_seconds"]
