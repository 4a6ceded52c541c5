"""Float math on the GPU: LLVM instructions and intrinsics, the GPU's math library for the rest.

libdevice (``nvvm/libdevice/libdevice.10.bc`` of the CUDA toolkit) is NVIDIA's math
library as LLVM bitcode: ``__nv_expf``, ``__nv_atan2``, ... ``kernel.py`` links it into
the module when a kernel calls it; LLVM then inlines and drops what is unused. f16
goes through f32 (as CUDA's own half math does).

    x.log()  ->  call float @__nv_logf(float %x)

Two hot ops take the fast hardware path, as Triton does for f32 and f16:
``exp(x)`` is ``ex2.approx(x * log2(e))`` (2 instructions instead of libdevice's 11)
and ``a / b`` is ``div.full.f32`` (2 ulp, no slow-path branch, unlike ``div.rn``).

    x.exp()  ->  fmul float %x, 0x3FF7154760000000 ; call float @llvm.nvvm.ex2.approx.f(...)

The machine-specific leaves (``ex2.approx``, ``div.full``, the library's symbols) are the
lowering's ``hooks`` (``hooks.py``): the AMD backend answers them with LLVM intrinsics.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from llvmlite import ir

from ..common.types import F32
from .emit import toolkit_roots

#: unary kinds that are one LLVM intrinsic the NVPTX backend selects natively
#: (``llvm.sqrt`` is ``sqrt.rn``; libdevice's ``__nv_sqrtf`` asks ``__nvvm_reflect("__CUDA_PREC_SQRT")``,
#: which LLVM folds to 0, and so is ``sqrt.approx.f32``: ``sqrt_rn`` must not take it; ``llvm.rint`` is
#: ``cvt.rni``, to the nearest integer, halves to even)
_INTRINSIC = {
    "sqrt": "sqrt",
    "sqrt_rn": "sqrt",
    "abs": "fabs",
    "floor": "floor",
    "ceil": "ceil",
    "trunc": "trunc",
    "rint": "rint",
}
#: unary kinds computed by libdevice (``__nv_<name>f`` for f32, ``__nv_<name>`` for f64)
_LIBDEVICE = {
    "exp": "exp",  # f64 only: f32 and f16 take ``fast_exp``
    "exp2": "exp2",
    "log": "log",
    "log2": "log2",
    "log1p": "log1p",
    "expm1": "expm1",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "tanh": "tanh",
    "sinh": "sinh",
    "cosh": "cosh",
    "asin": "asin",
    "acos": "acos",
    "atan": "atan",
    "erf": "erf",
    "round": "round",
    "rsqrt": "rsqrt",
    "log10": "log10",
    "cbrt": "cbrt",
    "erfc": "erfc",
    "asinh": "asinh",
    "acosh": "acosh",
    "atanh": "atanh",
}


def libdevice_path(given: str | None = None, tools: Mapping[str, str] | None = None) -> str | None:
    """Where libdevice lives: ``given`` (``CompileOptions.libdevice``), a CUDA toolkit's, or None."""
    candidates = [given] + [os.path.join(root, "nvvm", "libdevice", "libdevice.10.bc") for root in toolkit_roots(tools)]
    return next((p for p in candidates if p and os.path.exists(p)), None)


def _suffix(t: ir.Type) -> str:
    return {"half": "f16", "float": "f32", "double": "f64"}[str(t)]


def intrinsic(lw, name: str, *args: ir.Value) -> ir.Value:
    """``llvm.<name>.<type>(args)``."""
    t = args[0].type
    return lw.b.call(lw.function(f"llvm.{name}.{_suffix(t)}", t, [a.type for a in args]), list(args))


def libdevice(lw, name: str, *args: ir.Value) -> ir.Value:
    """``__nv_<name>f`` (f32) or ``__nv_<name>`` (f64) (``hooks.math_function``); f16 widens to f32 and back."""
    b, t = lw.b, args[0].type
    if str(t) == "half":
        wide = [b.fpext(a, F32) for a in args]
        return b.fptrunc(libdevice(lw, name, *wide), t)
    return lw.hooks.math_function(lw, name, *args)


def float_unary(lw, kind: str, x: ir.Value) -> ir.Value:
    """One float math function or arithmetic op of ``kind`` on ``x``."""
    if kind == "neg":
        return lw.b.fneg(x)
    if kind in _INTRINSIC:
        return intrinsic(lw, _INTRINSIC[kind], x)
    if kind == "exp" and str(x.type) in ("float", "half"):
        return fast_exp(lw, x)
    if kind in _LIBDEVICE:
        return libdevice(lw, _LIBDEVICE[kind], x)
    raise NotImplementedError(f"float {kind} on the GPU")


def float_binary(lw, kind: str, a: ir.Value, c: ir.Value, exact: bool = False) -> ir.Value:
    """One float binary op of ``kind``; min/max return the non-NaN operand (``minnum``).

    ``exact`` division (``tl.math.div_rn``) stays LLVM's ``fdiv`` (``div.rn``, correctly rounded).
    """
    b = lw.b
    if kind in ("fdiv", "div") and str(a.type) == "float" and not exact:
        return fast_div(lw, a, c)
    if kind in ("add", "sub", "mul"):  # contract: LLVM may fuse a multiply and the add reading it into an fma
        flags = ("contract",) if getattr(getattr(lw, "options", None), "fp_fusion", False) else ()
        return {"add": b.fadd, "sub": b.fsub, "mul": b.fmul}[kind](a, c, flags=flags)
    if kind in ("fdiv", "div"):
        return b.fdiv(a, c)
    if kind in ("min", "max"):
        return intrinsic(lw, f"{kind}num", a, c)
    if kind == "rem":
        return libdevice(lw, "fmod", a, c)
    if kind in ("pow", "atan2", "hypot"):
        return libdevice(lw, kind, a, c)
    if kind == "copysign":
        return intrinsic(lw, "copysign", a, c)
    raise NotImplementedError(f"float {kind} on the GPU")


LOG2E = 1.4426950408889634


def fast_exp(lw, x: ir.Value) -> ir.Value:
    """``e**x`` as ``2**(x * log2(e))`` on the special-function unit (f16 widens to f32).

    Why: libdevice's ``__nv_expf`` spends ~11 instructions per element on range
    reduction; ``ex2.approx.f32`` is one MUFU op with ~2 ulp error, which is what Triton
    emits for f32 ``tl.exp``. Softmax and attention run it on every element.
    """
    b, t = lw.b, x.type
    wide = b.fpext(x, F32) if str(t) == "half" else x
    scaled = b.fmul(wide, ir.Constant(F32, LOG2E))
    y = lw.hooks.exp2_f32(lw, scaled)
    return b.fptrunc(y, t) if str(t) == "half" else y


def fast_div(lw, a: ir.Value, c: ir.Value) -> ir.Value:
    """f32 ``a / c`` as ``div.full.f32``: correct to 2 ulp, branch-free (Triton's default for ``/``).

    ``div.rn.f32`` (LLVM's ``fdiv``) checks for hard operands and calls a slow path
    per element; ``div.full`` is a reciprocal and a multiply with range scaling.
    """
    return lw.hooks.fast_div_f32(lw, a, c)
