"""``tilelab.compile`` (ahead-of-time compile for a given signature) and small launch helpers.

Example::

    sig = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32"}
    ck = tilelab.compile(add, signature=sig, constants={"BLOCK": 1024}, target="interpret")
    ck.asm["tile"], ck.metadata["compile_seconds"], [p.name for p in ck.passes]
"""

from __future__ import annotations

import re

from tilelab.compiler.ir.types import parse_type

from .build import compile_kernel, options_for
from .descriptors import DescriptorArg
from .errors import LaunchError
from .targets import choose_target


def cdiv(x: int, y: int) -> int:
    """Ceiling division: how many blocks of ``y`` cover ``x`` (``cdiv(1000, 128) == 8``)."""
    return (x + y - 1) // y


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= ``n`` (``next_power_of_2(100) == 128``; 1 for n <= 1)."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def constexpr_function(fn):
    """Mark a plain Python function as one kernels call at compile time (``triton.constexpr_function``).

    A kernel calls any Python function with its constexprs' values and takes the result as a constexpr;
    the mark says so to a reader (and to Triton, where it is required). The function is returned as it is::

        @tilelab.constexpr_function
        def padded(n):
            return tilelab.next_power_of_2(n)
    """
    fn.__tilelab_constexpr_function__ = True
    return fn


_ALLOCATOR = None


def set_allocator(allocator) -> None:
    """Triton's ``set_allocator``: where device-side tensor descriptors get their scratch memory.

    tilelab's device-side descriptors (``tl.make_tensor_descriptor`` in a kernel) are bounds-checked
    loads and stores and need no scratch memory: the allocator is kept (``allocator()``), never called,
    so that code written for Triton runs unchanged.
    """
    global _ALLOCATOR
    if allocator is not None and not callable(allocator):
        raise LaunchError(f"set_allocator: expected a callable (size, alignment, stream) -> buffer, got {allocator!r}")
    _ALLOCATOR = allocator


def allocator():
    """The allocator last given to ``set_allocator`` (or None)."""
    return _ALLOCATOR


_DESCRIPTOR_TYPE = re.compile(r"tensordesc<\s*(?P<dtype>\w+)\s*\[(?P<block>[\d,\s]+)\]\s*>")


def _type_text(name: str, text: str) -> str:
    try:
        t = parse_type(text)
    except KeyError:
        raise LaunchError(f"signature: argument '{name}': unknown type {text!r}") from None
    return f"*{t.pointee.name}" if t.is_pointer else t.name


def normalize_signature(fn, signature) -> dict[str, str]:
    """Dict or Triton's comma string (``"*fp32,i32"``) -> name -> canonical type (``*f32``)."""
    if isinstance(signature, str):
        params = [n for n in fn.arg_names if n not in fn.constexprs]
        texts = [t.strip() for t in signature.split(",") if t.strip()]
        if len(texts) != len(params):
            raise LaunchError(f"signature: {len(texts)} types given for {len(params)} arguments {params}")
        signature = dict(zip(params, texts))
    return {
        k: v.strip() if _is_descriptor_type(v) else _type_text(k, v) for k, v in signature.items() if v != "constexpr"
    }


def _is_descriptor_type(text) -> bool:
    return isinstance(text, str) and text.strip().startswith("tensordesc<")


def expand_descriptor_types(sig: dict, constants: dict) -> None:
    """Replace each ``tensordesc<fp16[128, 64]>`` entry (Triton's type of a host descriptor) by its parts.

    As a launch specializes a ``TensorDescriptor``: a ``DescriptorArg`` constant, the base pointer,
    i32 shapes and strides, the last stride the constant 1 (descriptors require it).
    """
    for name, text in list(sig.items()):
        if not _is_descriptor_type(text):
            continue
        match = _DESCRIPTOR_TYPE.fullmatch(text)
        if match is None:
            raise LaunchError(f"signature: argument '{name}': expected tensordesc<dtype[d0, d1, ...]>, got {text!r}")
        block = tuple(int(d) for d in match["block"].split(","))
        spec = constants[name] = DescriptorArg(block)
        base, *shapes_strides, last_stride = spec.part_names(name)
        parts = {base: _type_text(name, "*" + match["dtype"]), **dict.fromkeys(shapes_strides, "i32")}
        constants[last_stride] = 1
        entries = list(sig.items())  # the parts take the descriptor's place, in order
        sig.clear()
        for k, v in entries:
            sig.update(parts if k == name else {k: v})


def compile(
    kernel,
    signature,
    constants=None,
    target=None,
    num_warps=None,
    num_stages=None,
    snapshots=True,
    divisibility=None,
    debug=False,
    cache=True,
    enable_fp_fusion=None,
    enable_reflect_ftz=None,
    maxnreg=None,
):
    """Compile ``kernel`` (a ``@jit`` function) for ``signature``; returns a ``CompiledKernel``.

    ``num_warps`` / ``num_stages`` of ``None`` take the defaults (``tilelab.compiler.options``);
    ``enable_fp_fusion``, ``enable_reflect_ftz`` and ``maxnreg`` as a launch's (``None``: on for CUDA, as Triton;
    no register cap).
    Pointers are assumed 16-byte aligned (as numpy's allocations are) unless
    ``divisibility`` says otherwise; other arguments get divisibility 1.
    """
    from .jit import JITFunction, count_option

    jf = kernel if isinstance(kernel, JITFunction) else JITFunction(kernel)
    sig = normalize_signature(jf, signature)
    constants = dict(constants or {})
    expand_descriptor_types(sig, constants)
    parts = {p for n, c in constants.items() if isinstance(c, DescriptorArg) for p in c.part_names(n)}
    unknown = [n for n in list(sig) + list(constants) if n not in jf.arg_names and n not in parts]
    if unknown:
        raise LaunchError(f"{jf.__name__}(): no parameter named '{unknown[0]}'")
    missing = [n for n in jf.arg_names if n not in sig and n not in constants]
    if missing:
        raise LaunchError(f"{jf.__name__}(): '{missing[0]}' is neither in the signature nor in constants")
    div = {n: (16 if t.startswith("*") else 1) for n, t in sig.items()}
    div.update(divisibility or {})
    debug = bool(debug or jf.debug)
    if maxnreg is not None:
        maxnreg = count_option(jf.__name__, "maxnreg", maxnreg)
    options = options_for(
        choose_target(target, set()), num_warps, num_stages, debug, enable_fp_fusion, enable_reflect_ftz, maxnreg
    )
    return compile_kernel(jf.fn, sig, constants, div, options, snapshots=snapshots, cache=cache)
