"""``CompiledKernel``: one kernel compiled for one specialization and target, ready to launch.

It is the compiler's result as the rest of tilelab sees it: the inspector reads its
``asm`` texts, ``metadata`` and pass records; ``kernel[grid](*args)`` launches it with
the arguments of ``arg_names`` (the parameters that were not specialized away)::

    ck = tilelab.compile(add, signature={"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32"},
                         constants={"BLOCK": 128})
    ck[(tilelab.cdiv(n, 128),)](x, y, out, n)
    print(ck.asm["tile"])
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tilelab.compiler.ir.types import parse_type

from . import options as settings
from .arrays import array_info, element_name
from .errors import LaunchError
from .grid import normalize_grid
from .launch_checks import check_array, int_range, scalar, written_pointer_args


@dataclass
class CompiledKernel:
    """A compiled kernel: IR, assembly, metadata and pass records, plus its launcher."""

    name: str
    target: str
    signature: dict[str, str]
    constants: dict
    options: object  # its CompileOptions
    module_source: object  # the tile IR module, or a function making it (a cache hit parses it on first read)
    asm: dict[str, str]
    metadata: dict
    passes: list
    source: str
    filename: str
    first_line: int
    arg_names: list[str]
    artifact: object = None
    launcher: object = field(default=None, repr=False)
    from_cache: bool = False
    _plan: list | None = field(default=None, repr=False, compare=False)  # (name, parsed type) per argument
    _written: set | None = field(default=None, repr=False, compare=False)  # pointer arguments stored through
    _promised: list | None = field(default=None, repr=False, compare=False)  # (name, divisibility) over 1

    @property
    def module(self):
        """The kernel's final tile IR module (parsed from ``asm["tile"]`` on the first read after a cache hit)."""
        if callable(self.module_source):
            self.module_source = self.module_source()
        return self.module_source

    def __getitem__(self, grid):
        """``ck[grid]`` -> a function taking the ``arg_names`` arguments (positional or by name)."""

        def launch(*args, sanitize=None, **kwargs):
            values = self.bind(args, kwargs)
            return self.launch(grid, values, sanitize)

        return launch

    def bind(self, args: tuple, kwargs: dict) -> dict:
        """Match launch arguments to ``arg_names``, with messages naming what is wrong."""
        if len(args) > len(self.arg_names):
            raise LaunchError(
                f"{self.name}(): takes {len(self.arg_names)} arguments ({', '.join(self.arg_names)}) "
                f"but {len(args)} were given"
            )
        values = dict(zip(self.arg_names, args))
        for key, value in kwargs.items():
            if key not in self.arg_names or key in values:
                raise LaunchError(f"{self.name}(): unexpected or repeated argument '{key}'")
            values[key] = value
        missing = [n for n in self.arg_names if n not in values]
        if missing:
            raise LaunchError(f"{self.name}(): missing argument '{missing[0]}'")
        return values

    def written(self) -> set[str]:
        """The pointer arguments the kernel stores through (read-only arrays are refused for them)."""
        if self._written is None:
            self._written = written_pointer_args(self.module.kernel)
        return self._written

    def promised(self) -> list[tuple[str, int]]:
        """``(argument, divisibility)`` of each argument the kernel was compiled to take as a multiple (over 1)."""
        if self._promised is None:
            func = self.module.kernel
            names = func.attrs.get("arg_names") or [a.name_hint for a in func.args]
            divs = dict(zip(names, func.attrs.get("arg_divisibility") or ()))
            self._promised = [(n, int(divs[n])) for n in self.arg_names if int(divs.get(n, 1)) > 1]
        return self._promised

    def launch_facts(self) -> dict:
        """What launches check, as JSON: the disk cache keeps it, so a loaded kernel launches without its IR."""
        return {"written": sorted(self.written()), "promised": [list(p) for p in self.promised()]}

    def restore_launch_facts(self, facts: dict) -> None:
        """Take ``launch_facts`` from a cache entry."""
        self._written = set(facts["written"])
        self._promised = [(str(n), int(d)) for n, d in facts["promised"]]

    def launch(self, grid, values: dict, sanitize=None):
        """Launch over ``grid`` with ``values`` (name -> launch value of each of ``arg_names``)."""
        self.check_specialization(values)
        return self.launch_normalized(normalize_grid(grid, values, self.name), values, sanitize)

    def check_specialization(self, values: dict) -> None:
        """Raise ``LaunchError`` where an argument breaks the divisibility the kernel was compiled for.

        ``tilelab.compile(..., divisibility={"n": 16, "x": 16})`` promises multiples of 16 (for a
        pointer, a 16-byte aligned address); the code relies on it (16-byte copies and vectors), and
        a value that breaks the promise reads and writes the wrong bytes, or faults and takes the
        GPU context with it. The jit derives the specialization from the arguments themselves,
        so its launches (``launch_normalized``) skip this check.
        """
        for name, div in self.promised():
            value = values[name]
            info = array_info(value)
            if info is not None:
                broken = f"is at address {info.address:#x}, not a multiple of {div} bytes" if info.address % div else ""
            elif isinstance(value, (int, np.integer)) and not isinstance(value, bool) and int(value) % div:
                broken = f"= {int(value)} is not a multiple of {div}"
            else:
                broken = ""
            if broken:
                raise LaunchError(
                    f"{self.name}(): argument '{name}' {broken}, as the kernel was compiled for (its "
                    f"divisibility); compile it without that promise, or launch through the jit, which "
                    f"specializes on the arguments"
                )

    def launch_normalized(self, grid: tuple[int, int, int], values: dict, sanitize=None):
        """``launch`` for a grid ``normalize_grid`` already checked (the jit launch path)."""
        if 0 in grid:
            return self
        if self._plan is None:
            self.written()
            self._plan = [(name, parse_type(self.signature[name])) for name in self.arg_names]
        args = [self._marshal_fast(name, expected, values[name]) for name, expected in self._plan]
        if sanitize is None:
            sanitize = settings.sanitize_default()
        self.launcher(grid, args, bool(sanitize))
        return self

    def _marshal_fast(self, name: str, expected, value):
        """``marshal`` with the parsed type at hand; arrays of the right dtype and Python scalars take a shortcut."""
        if expected.is_pointer:
            pointee = expected.pointee
            if type(value) is np.ndarray and getattr(pointee, "has_numpy", True) and value.dtype == pointee.np_dtype:
                check_array(self.name, name, value, name in self._written)
                return value
        elif type(value) is float and expected.is_float:
            return expected.np_dtype.type(value)
        elif type(value) is int and expected.is_int and not expected.is_bool:
            lo, hi = int_range(expected.name)
            if lo <= value <= hi:
                return expected.np_dtype.type(value)
        return self.marshal(name, value, expected)

    def marshal(self, name: str, value, expected=None):
        """The launcher's form of one argument: a host array, or a numpy scalar of the signature's type."""
        expected = expected or parse_type(self.signature[name])
        info = array_info(value)
        what = f"{self.name}(): argument '{name}'"
        if expected.is_pointer:
            if info is None:
                raise LaunchError(f"{what} expects an array of {expected.pointee}, got {type(value).__name__}")
            if element_name(info) != expected.pointee.name:
                raise LaunchError(f"{what} expects an array of {expected.pointee}, got an array of {info.elem}")
            if info.device == "cpu" and self.target != "cuda":
                check_array(self.name, name, info.host, name in (self._written or ()))
                return info.host
            return info.obj
        if info is not None:
            raise LaunchError(f"{what} expects a scalar {expected}, got an array")
        if not isinstance(value, (int, float, bool, np.generic)):
            raise LaunchError(f"{what} expects a scalar {expected}, got {type(value).__name__}")
        return scalar(self.name, name, value, expected)
