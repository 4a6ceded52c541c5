"""A thin, fast wrapper of the CUDA driver API (through cuda-python's ``cuda.bindings``).

Why a wrapper: every driver call returns an error code first; unchecked, a failed
launch shows up later as a wrong answer. Here every call goes through ``check``,
which turns a failure into a ``CudaError`` naming the call and the driver's own
message. The launch path is kept short (pre-packed parameter buffers, no per-call
allocation beyond ctypes scalars) because a notebook launches small kernels often.

Nothing here imports the CUDA driver until it is first needed, so machines without
a GPU import tilelab normally; ``is_available()`` says whether a device is usable.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass

_lock = threading.Lock()
_state: dict = {}


class CudaError(RuntimeError):
    """A CUDA driver call failed; the message names the call and the driver's reason."""


def _driver():
    """The ``cuda.bindings.driver`` module, imported on first use."""
    drv = _state.get("driver")
    if drv is None:
        try:
            from cuda.bindings import driver as drv
        except ImportError as e:  # pragma: no cover - cuda-python is a dependency
            raise CudaError(f"cuda-python is not installed ({e}); pip install cuda-python") from e
        _state["driver"] = drv
    return drv


def check(result, call: str):
    """Unpack ``(CUresult, *values)``; raise ``CudaError`` on failure."""
    drv = _driver()
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != drv.CUresult.CUDA_SUCCESS:
        _, name = drv.cuGetErrorName(err)
        _, text = drv.cuGetErrorString(err)
        name = name.decode() if isinstance(name, bytes) else str(err)
        text = text.decode() if isinstance(text, bytes) else ""
        raise CudaError(f"{call} failed: {name}: {text}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def is_available() -> bool:
    """Whether a CUDA driver and at least one device are present (never raises)."""
    if "available" not in _state:
        try:
            drv = _driver()
            check(drv.cuInit(0), "cuInit")
            _state["available"] = check(drv.cuDeviceGetCount(), "cuDeviceGetCount") > 0
        except Exception:  # no driver library, no device, no cuda-python
            _state["available"] = False
    return _state["available"]


#: ``CUdevice_attribute`` numbers of the compute capability (``cuda.h``).
_CAPABILITY_MAJOR, _CAPABILITY_MINOR = 75, 76
#: Where the driver library lives: Linux, then Windows.
_DRIVER_LIBRARIES = ("libcuda.so.1", "libcuda.so", "nvcuda.dll")


def device_capability() -> tuple[int, int] | None:
    """The compute capability of device 0, or ``None`` (no driver library, or no device); never raises.

    Read from the driver library through ctypes rather than cuda-python: importing cuda-python's
    bindings takes 15-20 ms, and a first launch only needs them once its kernel is compiled, so
    ``CudaTarget`` asks this for the arch and imports the bindings on the side (``prefetch``)
    while the compiler works.
    """
    if "capability" not in _state:
        if "info" in _state:
            _state["capability"] = _state["info"].capability
        else:
            _state["capability"] = _capability_from_library()
    return _state["capability"]


def driver_library_present() -> bool:
    """Whether the CUDA driver library loads (a machine with an NVIDIA driver); nothing is initialized."""
    return _driver_library() is not None


def _driver_library():
    for name in _DRIVER_LIBRARIES:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def _capability_from_library() -> tuple[int, int] | None:
    lib = _driver_library()
    if lib is None:
        return None
    device, major, minor = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    ok = (
        lib.cuInit(0) == 0
        and lib.cuDeviceGet(ctypes.byref(device), 0) == 0
        and lib.cuDeviceGetAttribute(ctypes.byref(major), _CAPABILITY_MAJOR, device) == 0
        and lib.cuDeviceGetAttribute(ctypes.byref(minor), _CAPABILITY_MINOR, device) == 0
    )
    return (major.value, minor.value) if ok else None


def prefetch() -> None:
    """Import cuda-python's driver bindings on a background thread, once.

    A first launch calls this when compiling starts: the compiler spends most of its time
    in LLVM and ptxas, which release the GIL, so the import is done by the time the kernel
    is loaded. ``_driver()`` called meanwhile waits for the same import (Python's import lock).
    """
    if "driver" in _state or "prefetch" in _state:
        return
    thread = threading.Thread(target=_import_quietly, name="tilelab-cuda-bindings", daemon=True)
    _state["prefetch"] = thread
    thread.start()


def _import_quietly() -> None:
    try:
        _driver()
    except CudaError:  # reported again, with its message, by the call that needs the driver
        pass


def arch_of_capability(capability: tuple[int, int]) -> str:
    """``sm_90a`` on Hopper (the ``a`` unlocks wgmma), ``sm_80`` style otherwise."""
    major, minor = capability
    return f"sm_{major}{minor}{'a' if major == 9 else ''}"


@dataclass(frozen=True)
class DeviceInfo:
    """What the compiler and the occupancy estimate need to know of the device."""

    name: str
    capability: tuple[int, int]
    multiprocessors: int
    max_shared_per_block_optin: int
    max_registers_per_sm: int
    max_threads_per_sm: int
    shared_per_sm: int

    @property
    def arch(self) -> str:
        """``sm_90a`` on Hopper (the ``a`` unlocks wgmma), ``sm_80`` style otherwise."""
        return arch_of_capability(self.capability)


def context():
    """Make the primary context of device 0 current on this thread and return it."""
    drv = _driver()
    with _lock:
        ctx = _state.get("context")
        if ctx is None:
            if not is_available():
                raise CudaError("no CUDA device is available (no NVIDIA driver, or no GPU on this machine)")
            dev = check(drv.cuDeviceGet(0), "cuDeviceGet")
            ctx = check(drv.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
            _state["device"], _state["context"] = dev, ctx
    if _state.get("current_thread") != threading.get_ident():
        check(drv.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        _state["current_thread"] = threading.get_ident()
    return ctx


def device_info() -> DeviceInfo:
    """Properties of device 0 (cached)."""
    if "info" not in _state:
        context()
        drv, dev = _driver(), _state["device"]
        attr = drv.CUdevice_attribute

        def get(name):
            return check(drv.cuDeviceGetAttribute(getattr(attr, name), dev), "cuDeviceGetAttribute")

        raw = check(drv.cuDeviceGetName(256, dev), "cuDeviceGetName")
        _state["info"] = DeviceInfo(
            name=raw.split(b"\0")[0].decode(),
            capability=(
                get("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR"),
                get("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR"),
            ),
            multiprocessors=get("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"),
            max_shared_per_block_optin=get("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
            max_registers_per_sm=get("CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR"),
            max_threads_per_sm=get("CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR"),
            shared_per_sm=get("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"),
        )
    return _state["info"]


# ----------------------------------------------------------------------------- memory


def mem_alloc(nbytes: int) -> int:
    """Allocate ``nbytes`` of device memory; returns the device address."""
    context()
    return int(check(_driver().cuMemAlloc(max(1, nbytes)), f"cuMemAlloc({nbytes} bytes)"))


def mem_free(ptr: int) -> None:
    if _state.get("context") is not None:
        check(_driver().cuMemFree(ptr), "cuMemFree")


def copy_to_device(dst: int, host_ptr: int, nbytes: int) -> None:
    context()
    check(_driver().cuMemcpyHtoD(dst, host_ptr, nbytes), "cuMemcpyHtoD")


def copy_to_host(host_ptr: int, src: int, nbytes: int) -> None:
    context()
    check(_driver().cuMemcpyDtoH(host_ptr, src, nbytes), "cuMemcpyDtoH")


def memset_d8(ptr: int, value: int, nbytes: int, stream: int = 0) -> None:
    """Set ``nbytes`` bytes at ``ptr`` to ``value``, ordered on ``stream``."""
    context()
    check(_driver().cuMemsetD8Async(ptr, value, nbytes, stream), "cuMemsetD8Async")


def synchronize() -> None:
    context()
    check(_driver().cuCtxSynchronize(), "cuCtxSynchronize (a kernel failed)")


# ----------------------------------------------------------------------------- modules

#: Bytes of a tensor map (``runtime.tensormaps``), a kernel parameter passed by value.
TENSORMAP_BYTES = 128


class TensorMapParam(ctypes.c_ubyte * TENSORMAP_BYTES):
    """The box of a tensor map parameter: ``box.value = data`` copies the 128 bytes of ``data`` in.

    A ctypes array has no ``value`` of its own; this one gets it so that a launch fills every
    box the same way (``box.value = value``), scalars and tensor maps alike.
    """

    @property
    def value(self) -> bytes:
        return bytes(self)

    @value.setter
    def value(self, data: bytes) -> None:
        if len(data) != TENSORMAP_BYTES:
            raise ValueError(f"a tensor map is {TENSORMAP_BYTES} bytes, got {len(data)}")
        ctypes.memmove(self, data, TENSORMAP_BYTES)


#: ctypes type of each kind of kernel parameter (pointers travel as 64-bit addresses).
PARAM_CTYPES = {
    "ptr": ctypes.c_uint64,
    "i1": ctypes.c_int8,
    "i8": ctypes.c_int8,
    "i16": ctypes.c_int16,
    "i32": ctypes.c_int32,
    "i64": ctypes.c_int64,
    "u8": ctypes.c_uint8,
    "u16": ctypes.c_uint16,
    "u32": ctypes.c_uint32,
    "u64": ctypes.c_uint64,
    "f16": ctypes.c_uint16,  # passed as raw bits
    "bf16": ctypes.c_uint16,
    "f32": ctypes.c_float,
    "f64": ctypes.c_double,
    "tensormap": TensorMapParam,
}


class Module:
    """A loaded PTX or cubin image; ``function(name)`` gives a launchable ``Function``."""

    def __init__(self, image: bytes):
        context()
        if isinstance(image, str):
            image = image.encode()
        if not image.startswith(b"\x7fELF") and not image.endswith(b"\0"):
            image += b"\0"  # PTX text must be NUL-terminated; a cubin is an ELF file
        self.handle = check(_driver().cuModuleLoadData(image), "cuModuleLoadData")

    def function(self, name: str, param_kinds: list[str], num_warps: int, shared: int = 0) -> Function:
        fn = check(_driver().cuModuleGetFunction(self.handle, name.encode()), f"cuModuleGetFunction({name})")
        return Function(self, fn, param_kinds, num_warps, shared)


class ParamBuffer:
    """A reusable kernel parameter buffer: one ctypes box per parameter, and the array of their addresses.

    ``cuLaunchKernel`` takes ``void **params``; it copies the values at launch, so a launch
    path can fill the same boxes call after call instead of allocating new ones::

        buf = ParamBuffer([ctypes.c_uint64, ctypes.c_int32])
        buf.boxes[0].value, buf.boxes[1].value = address, 16
        function.launch_packed((1, 1, 1), buf.address)
    """

    def __init__(self, ctypes_types: list):
        self.boxes = [ct() for ct in ctypes_types]
        self.pointers = (ctypes.c_void_p * max(1, len(self.boxes)))(*[ctypes.addressof(b) for b in self.boxes])
        self.address = ctypes.addressof(self.pointers)


class Function:
    """A kernel with its parameter kinds, block size and dynamic shared memory."""

    def __init__(self, module: Module, handle, param_kinds: list[str], num_warps: int, shared: int):
        self.module = module  # keeps the module alive
        self.handle = handle
        self.kinds = list(param_kinds)
        self.ctypes = [PARAM_CTYPES[k] for k in self.kinds]
        self.block = 32 * num_warps
        self.shared = shared
        drv = _driver()
        self.cu_launch = drv.cuLaunchKernel  # the driver call, read once (a warm launch calls it directly)
        self.success = drv.CUresult.CUDA_SUCCESS
        self._buffer = ParamBuffer(self.ctypes)
        self._lock = threading.Lock()
        if shared > 48 * 1024:
            attr = drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            check(drv.cuFuncSetAttribute(handle, attr, shared), "cuFuncSetAttribute(max dynamic shared memory)")

    def attribute(self, name: str) -> int:
        drv = _driver()
        attr = getattr(drv.CUfunction_attribute, name)
        return int(check(drv.cuFuncGetAttribute(attr, self.handle), "cuFuncGetAttribute"))

    def launch(self, grid: tuple[int, int, int], values: list, stream: int = 0) -> None:
        """Launch on ``grid`` with ``values``: addresses for pointers, ``bytes`` for tensor maps, scalars otherwise."""
        with self._lock:
            for box, value in zip(self._buffer.boxes, values):
                box.value = value
            self.launch_packed(grid, self._buffer.address, stream)

    def launch_packed(self, grid: tuple[int, int, int], params: int, stream: int = 0) -> None:
        """Launch on ``grid`` with the parameter buffer at address ``params`` (see ``ParamBuffer``)."""
        x, y, z = grid
        result = self.cu_launch(self.handle, x, y, z, self.block, 1, 1, self.shared, stream, params, 0)
        if result[0] != self.success:
            check(result, "cuLaunchKernel")


# ----------------------------------------------------------------------------- events


class Event:
    """A CUDA event, for timing device work (``elapsed_ms(start, end)``)."""

    def __init__(self):
        context()
        self.handle = check(_driver().cuEventCreate(0), "cuEventCreate")

    def record(self, stream: int = 0) -> None:
        check(_driver().cuEventRecord(self.handle, stream), "cuEventRecord")

    def synchronize(self) -> None:
        check(_driver().cuEventSynchronize(self.handle), "cuEventSynchronize")

    @staticmethod
    def elapsed_ms(start: Event, end: Event) -> float:
        end.synchronize()
        return float(check(_driver().cuEventElapsedTime(start.handle, end.handle), "cuEventElapsedTime"))
