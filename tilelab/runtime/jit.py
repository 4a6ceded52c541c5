"""``@tilelab.jit``: a Python function becomes a kernel launched as ``kernel[grid](*args)``.

A call whose call key (``keys.py``) was seen before goes straight to its warm launch
(``warm.py``). Any other binds the arguments to the parameters, works out the
specialization (``specialize.py``), picks the target and the options, finds the compiled
kernel in memory (``kernels``, by ``Specialization``), else on disk, else compiles it,
launches it, and keeps a warm launch for its call key (``launches``)::

    @tilelab.jit
    def add(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n) + tl.load(y + offs, mask=offs < n), mask=offs < n)

    add[(tilelab.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    add[lambda meta: (tilelab.cdiv(n, meta["BLOCK"]),)](x, y, out, n, BLOCK=256)
"""

from __future__ import annotations

import inspect
import textwrap

import numpy as np

from tilelab.compiler.frontend.tuple_args import TupleArg
from tilelab.compiler.options import NUM_STAGES, NUM_WARPS

from . import options as settings
from . import stages
from .arrays import array_info
from .build import compile_kernel, options_for
from .captured import Captured
from .descriptors import DescriptorArg, expand, is_descriptor
from .errors import LaunchError
from .grid import grid_dims, normalize_grid
from .keys import Specialization, call_key
from .specialize import check_constexpr, specialize_arg
from .targets import choose_target
from .warm import WarmLaunch

LAUNCH_OPTIONS = ("num_warps", "num_stages", "target", "sanitize", "enable_fp_fusion", "enable_reflect_ftz", "maxnreg")
#: Triton launch options accepted for source compatibility; they do not change what tilelab generates.
TRITON_ONLY_OPTIONS = frozenset(("num_ctas", "launch_cooperative_grid", "debug"))


def is_constexpr_annotation(annotation) -> bool:
    """True for ``tl.constexpr`` (the object, or the string under ``from __future__ import annotations``)."""
    if isinstance(annotation, str):
        return annotation.split(".")[-1] == "constexpr"
    return getattr(annotation, "__name__", None) == "constexpr"


class JITFunction:
    """A kernel: the Python function plus its compiled specializations."""

    def __init__(self, fn, do_not_specialize=(), debug=None, noinline=None):
        self._tilelab_fn = fn
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self.params = list(inspect.signature(fn).parameters.values())
        self.arg_names = [p.name for p in self.params]
        self.constexprs = {p.name for p in self.params if is_constexpr_annotation(p.annotation)}
        self.do_not_specialize = {self.arg_names[d] if isinstance(d, int) else d for d in do_not_specialize}
        self.debug = bool(debug)
        self.noinline = noinline
        self.kernels: dict[Specialization, object] = {}  # the compiled kernels, by what they are compiled for
        self.launches: dict[tuple, object] = {}  # call key -> ``WarmLaunch.launch`` of calls of that shape
        self._launchers: dict[tuple, object] = {}  # grid -> the launcher ``kernel[grid]`` gave for it (no key)
        self.captured = None  # the globals the compiled code read (captured.py), re-checked at each launch
        self.constexpr_flags = tuple(name in self.constexprs for name in self.arg_names)
        #: launch options and Triton-only options, unless a parameter has the name
        self.options_named = (set(LAUNCH_OPTIONS) | TRITON_ONLY_OPTIONS) - set(self.arg_names)
        self.by_value = frozenset(self.constexprs | self.options_named)  # keyword arguments keyed by value
        try:
            self.src = textwrap.dedent(inspect.getsource(fn))
        except (OSError, TypeError):
            self.src = ""

    def __repr__(self) -> str:
        return f"JITFunction({self.__module__}:{self.__qualname__})"

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            f"{self.__name__} is a @tilelab.jit kernel: launch it with {self.__name__}[grid](...), "
            "or call it from inside another kernel"
        )

    def __getitem__(self, grid):
        """``kernel[grid]`` -> a launcher taking the kernel's arguments.

        A call whose arguments look like an earlier one (same types, dtypes, alignment and integer
        classes, same constexprs and options: see ``call_key``) finds its warm launch with one
        dictionary lookup, which skips binding, specialization and marshalling; other calls go
        the full way (``launch_fully``).
        """
        plain = grid_dims(grid) is not None  # 1 to 3 positive ints (not 2.0 or True, which hash alike)
        cached = self._launchers.get(grid) if plain else None  # a loop of launches over one grid: one launcher
        if cached is not None:
            return cached
        flags, by_value, launches = self.constexpr_flags, self.by_value, self.launches

        def launcher(*args, **kwargs):
            if self.captured is not None and self.captured.changed():
                self.forget()  # a global the compiled code baked in has another value: compile again
            call = call_key(args, kwargs, flags, by_value)
            warm = launches.get(call)
            if warm is not None:
                return warm(grid, args, kwargs)
            return self.launch_fully(grid, args, kwargs, call)

        if plain:  # hashable, and few per kernel
            if len(self._launchers) >= 64:
                self._launchers.clear()
            self._launchers[grid] = launcher
        return launcher

    def forget(self) -> None:
        """Drop every compiled specialization (in place: launchers hold these dictionaries)."""
        self.kernels.clear()
        self.launches.clear()
        self.captured = None

    def warmup(self, *args, grid=None, **kwargs):
        """Compile for these arguments without launching; returns the ``CompiledKernel``."""
        return self.run(*args, grid=grid, warmup=True, **kwargs)

    def run(self, *args, grid=None, warmup=False, **kwargs):
        """Bind, specialize, compile (cached) and, unless ``warmup``, launch over ``grid``.

        ``kwargs`` holds the keyword arguments and constexprs of the kernel and the launch options
        (``num_warps``, ``num_stages``: ``None`` takes the defaults; ``target=None``, ``sanitize=None``).
        """
        if warmup:
            return self.launch_fully(grid, args, kwargs, None, warmup=True)
        return self[grid](*args, **kwargs)

    def launch_fully(self, grid, args: tuple, kwargs: dict, call, warmup=False):
        """The full launch: bind, specialize, compile if needed, launch, and remember a warm launch for ``call``."""
        if self.captured is not None and self.captured.changed():
            self.forget()
        given, options = self.split_options(kwargs)
        geometry = {
            "num_warps": count_option(self.__name__, "num_warps", options.get("num_warps", NUM_WARPS)),
            "num_stages": count_option(self.__name__, "num_stages", options.get("num_stages", NUM_STAGES)),
        }
        target, sanitize = options.get("target"), options.get("sanitize")
        for name in ("fp_fusion", "reflect_ftz"):  # Triton's options; None: the target's default (on)
            if options.get(f"enable_{name}") is not None:
                geometry[name] = bool(options[f"enable_{name}"])
        if options.get("maxnreg") is not None:
            geometry["maxnreg"] = count_option(self.__name__, "maxnreg", options["maxnreg"])
        named = self.bind(args, given)
        bound = with_parts(self.__name__, named, self.constexprs)
        dims = None
        if not warmup:  # a bad grid is reported before anything compiles; a callable one sees the arguments as given
            dims = normalize_grid(grid, dict(named, **geometry) if callable(grid) else bound, self.__name__)
        kernel = self.compiled_for(bound, target, geometry)
        if warmup:
            return kernel
        sanitize = settings.sanitize_default() if sanitize is None else bool(sanitize)
        kernel.launch_normalized(dims, bound, sanitize)
        if call is not None:  # equal call keys: the same kernel, options and sanitize setting
            warm = WarmLaunch.prepare(self, kernel, args, kwargs, geometry, sanitize)
            if warm is not None:
                self.launches[call] = warm.launch
        return kernel

    def split_options(self, kwargs: dict) -> tuple[dict, dict]:
        """``(kernel keyword arguments, launch options)``; Triton-only options are dropped."""
        if not kwargs or self.options_named.isdisjoint(kwargs):
            return kwargs, {}
        given = {k: v for k, v in kwargs.items() if k not in self.options_named}
        return given, {k: v for k, v in kwargs.items() if k in LAUNCH_OPTIONS and k in self.options_named}

    def bind(self, args: tuple, kwargs: dict) -> dict:
        """Match arguments to parameters (defaults applied); ``LaunchError`` names the culprit."""
        name = self.__name__
        if len(args) > len(self.params):
            raise LaunchError(
                f"{name}(): takes {len(self.params)} arguments ({', '.join(self.arg_names)}) but {len(args)} were given"
            )
        bound = dict(zip(self.arg_names, args))
        for key, value in kwargs.items():
            if key not in self.arg_names:
                raise LaunchError(f"{name}(): unexpected keyword argument '{key}'")
            if key in bound:
                raise LaunchError(f"{name}(): argument '{key}' given twice (by position and by name)")
            bound[key] = value
        for p in self.params:
            if p.name not in bound:
                if p.default is inspect.Parameter.empty:
                    kind = "tl.constexpr " if p.name in self.constexprs else ""
                    raise LaunchError(f"{name}(): missing {kind}argument '{p.name}'")
                bound[p.name] = p.default
        return bound

    def specialize(self, bound: dict):
        """``(signature, constants, divisibility, devices)`` for these bound arguments."""
        signature, constants, divisibility, devices = {}, {}, {}, set()
        for pname, value in bound.items():
            what = f"{self.__name__}(): argument '{pname}'"
            if pname in self.constexprs:
                check_constexpr(pname, value, what)
                constants[pname] = value
                continue
            if type(value) in (DescriptorArg, TupleArg):  # its parts follow it in ``bound`` (``with_parts``)
                constants[pname] = value
                continue
            spec = specialize_arg(pname, value, pname not in self.do_not_specialize, what)
            if spec.is_constant:
                constants[pname] = spec.constant
                continue
            info = array_info(value)
            if info is not None:
                devices.add(info.device)
            signature[pname] = spec.type
            divisibility[pname] = spec.divisibility
        return signature, constants, divisibility, devices

    def compiled_for(self, bound: dict, target, geometry: dict):
        """The ``CompiledKernel`` for these arguments: memory (``kernels``), then disk, then compile.

        ``geometry`` holds the launch's ``num_warps``, ``num_stages`` (and ``fp_fusion``, ``reflect_ftz``, ``maxnreg``
        if given).
        """
        signature, constants, divisibility, devices = self.specialize(bound)
        options = options_for(choose_target(target, devices), debug=self.debug, **geometry)
        spec = Specialization.of(signature, constants, divisibility, options)
        kernel = self.kernels.get(spec)
        if kernel is None:
            kernel = self.kernels[spec] = self._compile(signature, constants, divisibility, options)
        return kernel

    def _compile(self, signature, constants, divisibility, options):
        errors = stages.compilation_error_types()
        if self.captured is None:
            self.captured = Captured.of(self.fn)
        try:
            return compile_kernel(self.fn, signature, constants, divisibility, options)
        except errors as e:
            launched = ", ".join(f"{k}: {v}" for k, v in signature.items())
            e.args = (f"{e}\n(launched with {launched})",) + e.args[1:]
            raise


def with_parts(kernel: str, bound: dict, constexprs=frozenset()) -> dict:
    """``bound`` with each host tensor descriptor replaced by its ``DescriptorArg``, each tuple by its
    ``TupleArg`` (but a ``tl.constexpr``'s: a compile-time value), each followed by its parts."""
    if not any(is_descriptor(v) or type(v) is tuple for v in bound.values()):
        return bound
    expanded = {}
    for name, value in bound.items():
        what = f"{kernel}(): argument '{name}'"
        if is_descriptor(value):
            spec, parts = expand(name, value, what)
            expanded[name] = spec
            expanded.update(parts)
        elif type(value) is tuple and name not in constexprs:
            spec = expanded[name] = TupleArg(len(value))
            for i, (part, element) in enumerate(zip(spec.part_names(name), value)):
                if type(element) is tuple or is_descriptor(element):
                    kind = "a tuple" if type(element) is tuple else "a tensor descriptor"
                    raise LaunchError(f"{what}: element {i} is {kind}: a tuple argument holds arrays and scalars")
                expanded[part] = element
        else:
            expanded[name] = value
    return expanded


def count_option(kernel: str, name: str, value) -> int:
    """``num_warps`` / ``num_stages`` / ``maxnreg`` as an int; ``LaunchError`` naming the option otherwise (not
    ``int('four')``)."""
    positive = name != "num_stages"
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < (1 if positive else 0):
        least = "a positive" if positive else "a non-negative"
        raise LaunchError(f"{kernel}(): {name} must be {least} int, got {type(value).__name__} {value!r}")
    if name == "num_warps" and value & (value - 1):
        raise LaunchError(f"{kernel}(): num_warps must be a power of 2, got {value}")
    return int(value)


def jit(fn=None, *, do_not_specialize=(), debug=None, noinline=None, **_ignored):
    """Make ``fn`` a kernel; usable as ``@jit`` or ``@jit(do_not_specialize=["n"], debug=True)``."""

    def decorate(f):
        return JITFunction(f, do_not_specialize=do_not_specialize, debug=debug, noinline=noinline)

    return decorate(fn) if fn is not None else decorate
