"""``tilelab.compile`` (ahead-of-time compile for a given signature) and small launch helpers.

Example::

    sig = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32"}
    ck = tilelab.compile(add, signature=sig, constants={"BLOCK": 1024}, target="interpret")
    ck.asm["tile"], ck.metadata["compile_seconds"], [p.name for p in ck.passes]
"""

from __future__ import annotations

from tilelab.compiler.ir.types import parse_type

from .build import compile_kernel, options_for
from .errors import LaunchError
from .targets import choose_target


def cdiv(x: int, y: int) -> int:
    """Ceiling division: how many blocks of ``y`` cover ``x`` (``cdiv(1000, 128) == 8``)."""
    return (x + y - 1) // y


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= ``n`` (``next_power_of_2(100) == 128``; 1 for n <= 1)."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


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
    return {k: _type_text(k, v) for k, v in signature.items() if v != "constexpr"}


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
):
    """Compile ``kernel`` (a ``@jit`` function) for ``signature``; returns a ``CompiledKernel``.

    ``num_warps`` / ``num_stages`` of ``None`` take the defaults (``tilelab.compiler.options``);
    ``enable_fp_fusion`` and ``enable_reflect_ftz`` as a launch's (``None``: on for CUDA, as Triton).
    Pointers are assumed 16-byte aligned (as numpy's allocations are) unless
    ``divisibility`` says otherwise; other arguments get divisibility 1.
    """
    from .jit import JITFunction

    jf = kernel if isinstance(kernel, JITFunction) else JITFunction(kernel)
    sig = normalize_signature(jf, signature)
    constants = dict(constants or {})
    unknown = [n for n in list(sig) + list(constants) if n not in jf.arg_names]
    if unknown:
        raise LaunchError(f"{jf.__name__}(): no parameter named '{unknown[0]}'")
    missing = [n for n in jf.arg_names if n not in sig and n not in constants]
    if missing:
        raise LaunchError(f"{jf.__name__}(): '{missing[0]}' is neither in the signature nor in constants")
    div = {n: (16 if t.startswith("*") else 1) for n, t in sig.items()}
    div.update(divisibility or {})
    debug = bool(debug or jf.debug)
    options = options_for(
        choose_target(target, set()), num_warps, num_stages, debug, enable_fp_fusion, enable_reflect_ftz
    )
    return compile_kernel(jf.fn, sig, constants, div, options, snapshots=snapshots, cache=cache)
