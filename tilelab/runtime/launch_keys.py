"""Launch keys: a cheap fingerprint of launch arguments that decides the specialization.

Why: specializing a launch (``specialize.py``) builds type strings, divisibility tables and a
cache key for every call; a hot loop launching the same kernel pays that each time. Like
Triton's launcher, tilelab first computes a *launch key* from what specialization looks at,
and nothing more: per argument, its kind, dtype, 16-byte alignment, integer range class,
whether it equals 1 or is a multiple of 16; constexprs by value. Two launches with equal keys
get the same compiled kernel, so ``JITFunction`` maps launch keys to its cache keys::

    launch_key({"x": x, "n": 1024, "BLOCK": 128}, {"BLOCK"}, ("cpu", 4, 3))
    # (("x", "n", "BLOCK"), (ndarray, float32, True), (int, 32, False, True), (int, 128), ...)

GPU arrays take part too, through cheap attributes only: a torch tensor gives
``(Tensor, dtype, data_ptr() % 16 == 0, get_device())``, a ``tilelab.cuda.DeviceArray``
``(DeviceArray, dtype, ptr % 16 == 0)``, any other ``__cuda_array_interface__`` object its
``typestr`` and alignment. A key is a tuple of hashables; ``None`` means "no shortcut" (an
argument kind the key does not cover, such as a DLPack capsule): the launch then takes the
full specialization path.

``call_key`` is the same fingerprint taken straight from ``kernel[grid](*args, **kwargs)``,
before the arguments are bound to parameter names: equal call keys bind equally.
"""

from __future__ import annotations

import os

import numpy as np

from .arrays import is_torch_tensor
from .specialize import stable_repr

_PLAIN_CONSTANTS = (int, bool, str, type(None))


def launch_key(bound: dict, constexprs: set, extra: tuple) -> tuple | None:
    """The launch key of ``bound`` (parameter name -> value), or ``None`` when it has no shortcut.

    ``extra`` holds the launch options that choose the kernel (target, num_warps, ...).
    """
    parts = [tuple(bound), extra, os.environ.get("TILELAB_TARGET")]
    for name, value in bound.items():
        part = constant_part(value) if name in constexprs else argument_part(value)
        if part is None:
            return None
        parts.append(part)
    return tuple(parts)


def call_key(args: tuple, kwargs: dict, constexpr_flags: tuple, constexprs, extra: tuple) -> tuple | None:
    """The launch key of a call, from its positional ``args`` and ``kwargs`` as given.

    ``constexpr_flags[i]`` says whether positional parameter ``i`` is a ``tl.constexpr``;
    ``constexprs`` holds the constexpr names (for ``kwargs``). ``None``: no shortcut.
    """
    parts = [len(args), tuple(kwargs), extra, os.environ.get("TILELAB_TARGET"), os.environ.get("TILELAB_SANITIZE")]
    if len(args) > len(constexpr_flags):
        return None  # too many arguments: the full path says so
    for value, is_constant in zip(args, constexpr_flags):
        part = constant_part(value) if is_constant else argument_part(value)
        if part is None:
            return None
        parts.append(part)
    for name, value in kwargs.items():
        part = constant_part(value) if name in constexprs else argument_part(value)
        if part is None:
            return None
        parts.append(part)
    return tuple(parts)


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
    if kind is np.ndarray:
        return kind, value.dtype, value.__array_interface__["data"][0] % 16 == 0
    if kind is int:
        return kind, _int_class(value), value == 1, value % 16 == 0
    if kind is float or kind is bool or value is None:
        return (kind,)
    if isinstance(value, np.integer):
        return kind, value == 1, value % 16 == 0
    if isinstance(value, (np.floating, np.bool_)):
        return (kind,)
    array_part = _ARRAY_PARTS.get(kind)
    if array_part is None:
        array_part = _ARRAY_PARTS[kind] = _array_part_for(value)
    return array_part(value)


def _torch_part(t):
    return type(t), t.dtype, t.data_ptr() % 16 == 0, t.get_device()


def _device_array_part(a):
    return type(a), a.dtype, a.ptr % 16 == 0


def _cuda_interface_part(a):
    iface = a.__cuda_array_interface__
    return type(a), iface["typestr"], iface["data"][0] % 16 == 0


def _no_part(value):
    return None


def _array_part_for(value):
    """The key maker for GPU arrays of ``type(value)``, picked once per type."""
    from tilelab.cuda import DeviceArray  # here: tilelab.cuda imports the runtime

    if is_torch_tensor(value):
        return _torch_part
    if type(value) is DeviceArray:
        return _device_array_part
    if hasattr(value, "__cuda_array_interface__"):
        return _cuda_interface_part
    return _no_part


#: The key maker of each GPU array type met so far (``_no_part`` for types without a shortcut).
_ARRAY_PARTS: dict = {}


def _int_class(value: int) -> int | None:
    """32, 64 or -64 (unsigned) by the range ``int_type`` would pick; ``None`` past 64 bits."""
    if -(2**31) <= value < 2**31:
        return 32
    if -(2**63) <= value < 2**63:
        return 64
    return -64 if 0 <= value < 2**64 else None
