"""Keys: what names a compiled kernel, and the fingerprint of a call that finds it without specializing.

One scheme with two levels, as in Triton's launcher:

* A ``Specialization`` names one compiled kernel: the signature (types), the constants, the
  divisibility of each argument and the ``CompileOptions`` (target, arch, num_warps, switches).
  It is a tuple of hashables, so it keys the in-memory cache as it is (``JITFunction.kernels``);
  ``spec.digest(fn)`` hashes it with the kernel's sources and the compiler's fingerprint
  (``sources.py``) into the name of its disk cache entry::

      spec = Specialization.of({"x": "*f32", "n": "i32"}, {"BLOCK": 128}, {"x": 16, "n": 1}, options)
      kernels[spec], disk.get(spec.digest(add))

* A *call key* is a cheap fingerprint of ``kernel[grid](*args, **kwargs)`` taken before binding,
  of exactly what specialization reads: per argument its kind, dtype, 16-byte alignment, integer
  range class, whether it equals 1 or is a multiple of 16; constexprs and launch options by
  value; the two environment variables a launch reads. Equal call keys specialize equally, so
  ``JITFunction.launches`` maps call keys to warm launches (``warm.py``) and a repeated call
  costs one dictionary lookup instead of binding and specializing (tens of microseconds)::

      call_key((x, 1024), {"BLOCK": 256}, (False, False, True), {"BLOCK"})
      # (env, 2, (ndarray, float32, True), (int, 32, False, True), (_INT_KEYWORDS, (("BLOCK", 256),)))

GPU arrays take part through cheap attributes only: a torch tensor gives ``(Tensor, dtype,
data_ptr() % 16 == 0, get_device())``, a ``tilelab.cuda.DeviceArray`` ``(DeviceArray, dtype,
ptr % 16 == 0)``, any other ``__cuda_array_interface__`` object its ``typestr`` and alignment.
``None`` means "no shortcut" (an argument kind the key does not cover, such as a DLPack
capsule): that call takes the full path every time.
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

import numpy as np

from tilelab.compiler.options import CompileOptions

from .arrays import is_torch_tensor
from .cache import to_json
from .captured import Captured
from .descriptors import check, is_descriptor
from .errors import LaunchError
from .options import launch_environment_reader
from .sources import compiler_fingerprint, source_digest
from .specialize import stable_repr


class Specialization(NamedTuple):
    """What one compiled kernel is compiled for; in-memory key as it is, disk key through ``digest``.

    A named tuple of tuples (constants by ``stable_repr``, so ``0.0`` and ``-0.0`` differ): it
    hashes and compares as fast as the plain tuple it replaces.
    """

    signature: tuple[tuple[str, str], ...]
    constants: tuple[tuple[str, str], ...]
    divisibility: tuple[tuple[str, int], ...]
    options: CompileOptions

    @classmethod
    def of(cls, signature: dict, constants: dict, divisibility: dict, options: CompileOptions) -> Specialization:
        """The specialization of these parameter types, constexpr values and divisibilities."""
        consts = tuple((k, stable_repr(v)) for k, v in constants.items())
        return cls(tuple(signature.items()), consts, tuple(divisibility.items()), options)

    def digest(self, fn, snapshots: bool = False) -> str:
        """The hex digest naming this specialization of ``fn`` on disk (with ``snapshots``: pass IR kept).

        It covers ``fn``'s source and its callees', the values of the globals they read
        (``captured.py``), tilelab's own sources and version, and every field: whatever changes
        the compiled code is a ``CompileOptions`` field, so nothing else (no environment
        variable) needs to be patched in.
        """
        parts = {
            "source": source_digest(fn),
            "compiler": compiler_fingerprint(),
            "signature": dict(self.signature),
            "constants": dict(self.constants),
            "divisibility": dict(self.divisibility),
            "options": self.options.key(),
            "snapshots": bool(snapshots),
            "globals": Captured.of(fn).key(),
        }
        return hashlib.sha256(to_json(parts).encode()).hexdigest()


_PLAIN_CONSTANTS = (int, bool, str, type(None))
#: the reader of the two variables every call key holds (TILELAB_TARGET, TILELAB_SANITIZE), from the options module
_ENV_GET, _TARGET_KEY, _SANITIZE_KEY = launch_environment_reader()
#: Markers of how a call key holds its keyword arguments, so that two forms never give equal keys.
_INT_KEYWORDS, _PLAIN_KEYWORDS = "keywords: ints by value", "keywords: plain values by value and type"
_PLAIN_KINDS = frozenset(_PLAIN_CONSTANTS)


def call_key(args: tuple, kwargs: dict, constexpr_flags: tuple, by_value) -> tuple | None:
    """The call key of ``kernel[grid](*args, **kwargs)``, from ``args`` and ``kwargs`` as given.

    ``constexpr_flags[i]`` says whether positional parameter ``i`` is a ``tl.constexpr``;
    keyword arguments named in ``by_value`` (constexprs, launch options such as ``num_warps``)
    take part by value, the others like runtime arguments. ``None``: no shortcut. This runs
    on every launch, so the common kinds are tested inline (``type(x) is int`` first)::

        call_key((x, 1024), {"BLOCK": 256}, (False, False, True), {"BLOCK"})
        # (None, None, 2, (Tensor, torch.float32, True, 0), (int, 32, False, True), (_INT_KEYWORDS, (("BLOCK", 256),)))
    """
    if len(args) > len(constexpr_flags):
        return None  # too many arguments: the full path says so
    parts = [_ENV_GET(_TARGET_KEY), _ENV_GET(_SANITIZE_KEY), len(args)]  # options.launch_environment(), inlined
    for value, is_constant in zip(args, constexpr_flags):
        kind = type(value)
        if is_constant:
            part = (kind, value) if kind in _PLAIN_CONSTANTS else constant_part(value)
        elif kind is int and -0x80000000 <= value < 0x80000000:
            part = _I32_ONE if value == 1 else _I32_BY_16 if value & 15 == 0 else _I32
        else:
            maker = _PARTS.get(kind)
            part = maker(value) if maker is not None else argument_part(value)
            if part is None:
                return None
        parts.append(part)
    if kwargs:
        ints = []  # the common case: constexprs and options given as plain ints, keyed by value
        for name, value in kwargs.items():
            if type(value) is not int or name not in by_value:
                break
            ints.append((name, value))
        else:
            parts.append((_INT_KEYWORDS, tuple(ints)))
            return tuple(parts)
        kinds = tuple(map(type, kwargs.values()))
        if by_value.issuperset(kwargs) and _PLAIN_KINDS.issuperset(kinds):  # constexprs and options only
            parts.append((_PLAIN_KEYWORDS, tuple(kwargs.items()), kinds))
        elif not _add_keyword_parts(parts, kwargs, by_value):
            return None
    return tuple(parts)


def _add_keyword_parts(parts: list, kwargs: dict, by_value) -> bool:
    """Append the names, then one part per keyword argument, to ``parts``; ``False``: no shortcut."""
    parts.append(tuple(kwargs))
    for name, value in kwargs.items():
        part = constant_part(value) if name in by_value else argument_part(value)
        if part is None:
            return False
        parts.append(part)
    return True


def constant_part(value):
    """A constexpr's value, as precise as ``stable_repr`` (so ``0.0`` and ``-0.0`` differ)."""
    if type(value) in _PLAIN_CONSTANTS:
        return type(value), value
    if isinstance(value, np.ndarray):
        return None  # an error the full path reports
    return "repr", stable_repr(value)


def argument_part(value):
    """What specialization reads from a runtime argument, or ``None`` for kinds not covered."""
    kind = type(value)
    maker = _PARTS.get(kind)
    if maker is None:
        maker = _PARTS[kind] = _part_maker(value)
    return maker(value)


def _part_maker(value):
    """The key maker for arguments of ``type(value)``, picked once per type."""
    from tilelab.cuda import DeviceArray  # here: tilelab.cuda imports the runtime

    if is_descriptor(value):
        return _descriptor_part
    if isinstance(value, np.integer):
        return _numpy_int_part
    if isinstance(value, (np.floating, np.bool_)):
        return _kind_part
    if is_torch_tensor(value):
        return _torch_part
    if type(value) is DeviceArray:
        return _device_array_part
    if hasattr(value, "__cuda_array_interface__"):
        return _cuda_interface_part
    return _no_part


def _ndarray_part(a):
    return np.ndarray, a.dtype, a.__array_interface__["data"][0] % 16 == 0


def _int_part(value):
    return int, _int_class(value), value == 1, value % 16 == 0


def _kind_part(value):
    return (type(value),)


def _numpy_int_part(value):
    return type(value), value == 1, value % 16 == 0


def _torch_part(t):
    return type(t), t.dtype, t.data_ptr() % 16 == 0, t.get_device()


def _device_array_part(a):
    return type(a), a.dtype, a.ptr % 16 == 0


def _cuda_interface_part(a):
    iface = a.__cuda_array_interface__
    return type(a), iface["typestr"], iface["data"][0] % 16 == 0


def _descriptor_part(d):
    """A host tensor descriptor: its base's part, its shapes' and strides' int classes, block shape, padding.

    ``descriptors.check`` (the launch's validation: alignment, strides in whole 16 bytes, ...) depends
    on the base's part and the exact shape, strides, block shape and padding: once those passed, an
    equal set passes again, so a loop of launches checks its descriptors once (``_CHECKED``).
    """
    base = argument_part(d.base)
    if base is None:
        return None
    shape, strides, block = tuple(d.shape), tuple(d.strides), tuple(d.block_shape)
    padding = getattr(d, "padding", "zero")
    facts = (type(d), base, shape, strides, block, padding)
    plain = all(type(v) is int for v in (*shape, *strides, *block))  # 16.0 would hash as 16: not remembered
    if not plain or facts not in _CHECKED:
        try:
            check(d, "a tensor descriptor")
        except LaunchError:
            return None  # the full path reports it, naming the argument
        if plain:
            if len(_CHECKED) >= 4096:
                _CHECKED.clear()
            _CHECKED.add(facts)
    return type(d), base, tuple(_int_part(int(v)) for v in (*shape, *strides)), block, padding


#: The descriptors' ``facts`` (see ``_descriptor_part``) that passed ``descriptors.check``.
_CHECKED: set = set()


def _no_part(value):
    return None


#: The key maker of each argument type met so far (``_no_part`` for types without a shortcut).
_PARTS: dict = {np.ndarray: _ndarray_part, int: _int_part, float: _kind_part, bool: _kind_part, type(None): _kind_part}
#: ``_int_part`` of the ints that fit 32 bits: 1, a multiple of 16, any other (``call_key`` inlines it).
_I32_ONE, _I32_BY_16, _I32 = (int, 32, True, False), (int, 32, False, True), (int, 32, False, False)


def _int_class(value: int) -> int | None:
    """32, 64 or -64 (unsigned) by the range ``int_type`` would pick; ``None`` past 64 bits."""
    if -(2**31) <= value < 2**31:
        return 32
    if -(2**63) <= value < 2**63:
        return 64
    return -64 if 0 <= value < 2**64 else None
