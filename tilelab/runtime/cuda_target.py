"""The CUDA target: compile tile IR to PTX (and a cubin where ptxas is found) and launch it.

    target = CudaTarget("sm_90a")
    artifact = target.compile(module, options)            # llir, ptx, sass + registers, spills, shared
    launch = target.load(artifact)                         # loads the cubin (or PTX) once
    launch((n // 1024, 1, 1), [x, y, out, n], False)

Compiling needs no GPU: PTX comes from llvmlite, so the inspector shows it anywhere.
Launching takes arrays with ``__cuda_array_interface__`` (torch, CuPy, numba,
``tilelab.cuda.DeviceArray``), a ``data_ptr()`` or a CUDA DLPack export (JAX...); host
arrays (numpy, CPU tensors) are copied to the
device and back around the launch (never do that inside a timing). A launch goes on the
current stream of the library that owns its arrays (torch's, CuPy's; ``arrays.stream_reader``).
Launch overhead is kept low: parameter kinds are computed once, the ``Function`` is loaded once, and a warm
launch (``CudaLauncher.warm_plan``) fills a reusable parameter buffer straight from the
arguments: one cheap read per array (``data_ptr()``, ``.ptr``) and one ``cuLaunchKernel``.
"""

from __future__ import annotations

import threading

import numpy as np

from tilelab.compiler.interpreter.errors import KernelRuntimeError
from tilelab.compiler.ir.types import parse_type
from tilelab.compiler.options import DEFAULT_ARCH
from tilelab.errors import OutOfResources

from . import cuda_driver
from .arrays import ArrayDeviceError, cuda_pointer, is_torch_tensor, launch_stream, launch_stream_reader
from .grid import launch_dims
from .targets import Artifact
from .tensormaps import encode, encode_tiled
from .texts import LazyTexts


class CudaTarget:
    """Compiles for an NVIDIA architecture (``sm_90a`` by default, or the device's) and launches.

    With no arch given, the device's is read through the driver library (``device_capability``),
    and compiling starts importing cuda-python's bindings on the side (``cuda_driver.prefetch``):
    a launch is likely to follow, and the import overlaps LLVM and ptxas.
    """

    name = "cuda"
    pipeline = "cuda"

    def __init__(self, arch: str | None = None):
        capability = None if arch else cuda_driver.device_capability()
        self.arch = arch or (cuda_driver.arch_of_capability(capability) if capability else DEFAULT_ARCH)
        self.for_device = capability is not None

    def compile(self, module, options) -> Artifact:
        """PTX (and a cubin) of ``module`` for ``options`` (its ``CompileOptions``: ``arch`` is this target's)."""
        from tilelab.compiler.backends import cuda as backend

        if self.for_device:
            cuda_driver.prefetch()

        compiled = backend.compile_kernel(module, options.replace(arch=options.arch or self.arch))
        meta = dict(compiled.metadata)
        meta["entry"] = module.kernel.sym_name
        meta["param_names"] = param_names(module.kernel)
        meta["param_kinds"] = param_kinds(module.kernel) + ["tensormap"] * len(meta.get("tensormaps") or [])
        blobs = {"cubin": compiled.cubin} if compiled.cubin else {}
        maker = compiled.sass_maker()
        asm = LazyTexts(compiled.asm, {"sass": maker} if maker else {})
        return Artifact(asm=asm, metadata=meta, blobs=blobs)

    def deferred_texts(self, texts, options=None) -> dict:
        """Makers of the texts made on first access: ``sass`` (of a kernel loaded from the disk cache).

        The cache keeps the cubin for launching but not the SASS text: it is assembled again
        from the stored PTX and disassembled when the inspector asks for it.
        """
        from tilelab.compiler.backends import cuda as backend

        tools = dict(options.tools) if options is not None else {}
        if "sass" in texts or "ptx" not in texts or backend.find_tool("ptxas", tools) is None:
            return {}
        ptx, arch = texts["ptx"], self.arch

        def sass() -> str:
            return backend.sass_of_cubin(backend.ptx_to_cubin(ptx, arch, sass=False, tools=tools).cubin, tools)

        return {"sass": sass}

    #: the launcher reads all it needs from the artifact (its metadata names the entry and its parameters),
    #: so a kernel loaded from the disk cache launches without parsing its tile IR back (build.py)
    loads_from_artifact = True

    def load(self, artifact: Artifact, module=None):
        return CudaLauncher(artifact)


def param_kinds(func) -> list[str]:
    """The driver's kind of each kernel parameter: ``ptr`` or the scalar type name."""
    return ["ptr" if a.type.is_pointer else a.type.name for a in func.args]


def param_names(func) -> list[str]:
    """The name of each kernel parameter, as launch errors give it."""
    return list(func.attrs.get("arg_names") or [f"arg{i}" for i in range(len(func.args))])


class CudaLauncher:
    """``launcher(grid, args, sanitize)``: launches a loaded kernel on the current device.

    ``args`` are the kernel's parameters; the tensor maps its TMA copies read (the metadata's
    ``tensormaps`` recipes) are encoded from them and passed after them, by value.
    ``CudaLauncher.launches`` counts launches (``do_bench`` reads it to time with CUDA events).
    """

    launches = 0

    def __init__(self, artifact: Artifact):
        self.meta = artifact.metadata
        self.entry = self.meta["entry"]
        self.names = list(self.meta["param_names"])
        self.kinds = self.meta["param_kinds"]
        self.tensormaps = self.meta.get("tensormaps") or []
        self.arity = len(self.kinds) - len(self.tensormaps)  # the parameters a launch is given
        self.scalar_types = [None if k == "ptr" else parse_type(k) for k in self.kinds[: self.arity]]
        self.image = artifact.blobs.get("cubin") or artifact.asm["ptx"]
        self.function = None  # loaded on the first launch: compiling needs no GPU

    def _load(self):
        shared, limit = int(self.meta.get("shared", 0)), cuda_driver.device_info().max_shared_per_block_optin
        if shared > limit:  # a tile moved through shared memory by an op (a gather, a conversion) larger than fits
            raise OutOfResources(shared, limit, "shared memory")
        module = cuda_driver.Module(self.image)
        self.function = module.function(self.entry, self.kinds, int(self.meta["num_warps"]), shared)
        return self.function

    def __call__(self, grid, args, sanitize: bool = False):
        if sanitize:
            raise KernelRuntimeError(
                f"kernel {self.entry}: the sanitizer runs on the interpreter; launch with target='interpret'"
            )
        if len(args) != self.arity:
            raise KernelRuntimeError(
                f"kernel {self.entry} takes {len(self.names)} arguments ({', '.join(self.names)}), got {len(args)}"
            )
        values, copies = self._pack(args)
        dims = launch_dims(grid, KernelRuntimeError)
        fn = self.function or self._load()
        if all(dims):
            fn.launch(dims, values, launch_stream(args))
            CudaLauncher.launches += 1
        for host, dev in copies:
            cuda_driver.synchronize()
            cuda_driver.copy_to_host(host.ctypes.data, dev, host.nbytes)
            cuda_driver.mem_free(dev)
        return None

    def _pack(self, args):
        values, copies = [], []
        for name, kind, t, arg in zip(self.names, self.kinds, self.scalar_types, args):
            if kind == "ptr":
                values.append(self._address(name, arg, copies))
            else:
                values.append(scalar_value(t, arg))
        values += [encode(recipe, values) for recipe in self.tensormaps]
        return values, copies

    def _address(self, name, arg, copies) -> int:
        try:
            pointer = cuda_pointer(name, arg)
        except ArrayDeviceError as e:
            raise KernelRuntimeError(str(e)) from None
        if isinstance(pointer, np.ndarray):
            if not pointer.flags.c_contiguous:
                raise KernelRuntimeError(f"argument '{name}': a host array given to a GPU launch must be C-contiguous")
            dev = cuda_driver.mem_alloc(max(1, pointer.nbytes))
            cuda_driver.copy_to_device(dev, pointer.ctypes.data, pointer.nbytes)
            copies.append((pointer, dev))
            return dev
        if pointer is None:
            raise KernelRuntimeError(
                f"argument '{name}': a pointer parameter needs a GPU array (torch, CuPy, DLPack, tilelab.cuda) "
                f"or a numpy array, got {type(arg).__name__}"
            )
        return pointer

    def warm_plan(self, values: list, positions: tuple | None = None, sources: list | None = None):
        """A ``warm(grid, given)`` launch for arguments of the kinds of ``values``, or ``None``.

        Parameter ``i`` is read from ``given[positions[i]]`` (``given[i]`` without ``positions``),
        or from the expression ``sources[i]`` over ``given`` when given (a part of a host tensor
        descriptor: ``given[2].base``, ``int(given[2].shape[0])``).
        ``None`` when some array is not already on device 0 (host arrays are copied around
        every launch) or a value has no cheap reader: such launches keep taking ``__call__``.
        The caller guarantees that later values have the same kinds (a launch key).
        """
        if len(values) != self.arity:
            return None
        positions = tuple(range(len(values))) if positions is None else positions
        sources = sources or [f"given[{i}]" for i in positions]
        reads = [_read_source(self.kinds[j], self.scalar_types[j], values[j], j, arg) for j, arg in enumerate(sources)]
        if None in reads:
            return None
        stream = launch_stream_reader(values)
        return warm_cuda_launch(self.function or self._load(), reads, self.scalar_types, self.tensormaps, stream)


#: The warm launch of one kernel: fill the parameter boxes from the call's arguments, launch, count.
#: Generated per kernel (a handful of lines) because a loop over per-parameter reader functions
#: costs several times more than the same reads written out.
_WARM_LAUNCH = """
def warm_launch(dims, given):
    acquire()
    try:
{fills}
        result = cu_launch(handle, dims[0], dims[1], dims[2], block, 1, 1, shared, {stream}, params, 0)
    finally:
        release()
    if result[0] != success:
        check(result, "cuLaunchKernel")
    Launcher.launches += 1
"""


def warm_cuda_launch(function, reads: list[str], scalar_types: list, tensormaps: list = (), stream=None):
    """``warm(dims, given)``: fills ``function``'s parameter boxes with the expressions ``reads``
    (one per parameter, over ``given``) and launches on ``dims``, with no per-call allocation::

        warm = warm_cuda_launch(fn, ["given[0].data_ptr()", "given[1]"], types)
        warm((4, 1, 1), (tensor, 1000))

    The boxes after those of ``reads`` get the ``tensormaps`` recipes' maps, read from the
    filled boxes (a cache lookup once the arrays have been seen). ``stream`` (``arrays.launch_stream_reader``
    of the arguments) gives the stream of each launch; without it, launches go on stream 0.
    """
    buffer = cuda_driver.ParamBuffer(function.ctypes)
    lines = [f"        box{i}.value = {read}" for i, read in enumerate(reads)]
    lines += [f"        box{len(reads) + k}.value = {_tensormap_source(r)}" for k, r in enumerate(tensormaps)]
    fills = "\n".join(lines)
    lock = threading.Lock()  # the boxes are shared: one launch fills them at a time
    namespace = {f"box{i}": box for i, box in enumerate(buffer.boxes)}
    namespace.update(
        acquire=lock.acquire,
        release=lock.release,
        cu_launch=function.cu_launch,
        handle=function.handle,
        block=function.block,
        shared=function.shared,
        params=buffer.address,
        success=function.success,
        check=cuda_driver.check,
        Launcher=CudaLauncher,
        buffer=buffer,
        scalar=scalar_value,
        types=scalar_types,
        tensormap=encode_tiled,
        stream=stream,
    )
    source = _WARM_LAUNCH.format(fills=fills or "        pass", stream="0" if stream is None else "stream()")
    exec(source, namespace)
    return namespace["warm_launch"]


def _tensormap_source(recipe: dict) -> str:
    """The expression of ``recipe``'s tensor map in a warm launch: ``encode_tiled`` of the boxes
    the recipe names (filled before it), its constants inlined::

        tensormap(box0.value, (box3.value, 64), (box4.value, 1), (128, 64), 'f16', 128, 'zero', 'a_desc')
    """

    def dims(spec) -> str:
        items = [f"box{x}.value" if kind == "arg" else str(int(x)) for kind, x in spec]
        return f"({', '.join(items)}{',' if len(items) == 1 else ''})"

    fixed = (tuple(recipe["box"]), recipe["dtype"], recipe["swizzle"], recipe["fill"], recipe["name"])
    shape, strides = dims(recipe["shape"]), dims(recipe["strides"])
    return f"tensormap(box{recipe['base']}.value, {shape}, {strides}, {', '.join(map(repr, fixed))})"


def _read_source(kind: str, t, value, param: int, arg: str) -> str | None:
    """The expression that reads parameter ``param`` (``value``, of ``kind``) from the expression ``arg``.

    ``None`` when there is no cheap way (the launch then keeps taking ``CudaLauncher.__call__``).
    """
    if kind != "ptr":
        if t.name in ("f16", "bf16"):
            return f"scalar(types[{param}], {arg})"
        if t.is_float:
            return arg if type(value) is float else f"float({arg})"
        return arg if type(value) is int else f"int({arg})"
    if is_torch_tensor(value):
        return f"{arg}.data_ptr()" if value.get_device() == 0 else None
    if type(value).__name__ == "DeviceArray" and type(value).__module__ == "tilelab.cuda":
        return f"{arg}.ptr"
    if getattr(value, "__cuda_array_interface__", None) is not None:
        return f'{arg}.__cuda_array_interface__["data"][0]'
    return None


def scalar_value(t, value):
    """A launch value of scalar type ``t``: ints wrap to the width, f16/bf16 travel as their bits."""
    if t.name in ("f16", "bf16"):
        return t.float_bits(value)
    if t.is_float:
        return float(value)
    if t.is_bool:
        return int(bool(value))
    bits = t.bits
    v = int(value) & ((1 << bits) - 1)
    return v - (1 << bits) if t.is_signed and v >> (bits - 1) else v


__all__ = ["CudaTarget", "CudaLauncher", "param_kinds"]
