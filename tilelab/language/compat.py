"""The rest of Triton's ``tl`` surface: builtins composed in the frontend, and ``tensor`` methods.

Triton binds many ``tl`` functions as ``tensor`` methods (``x.cast(tl.float16)``, ``x.item()``,
``ptr.store(v)``, ``x.sigmoid()``); this module registers them, so both spellings work::

    h = tl.histogram(x, 16)
    y = x.to(tl.float32).sigmoid().cast(tl.float16)
"""

from __future__ import annotations

from ..compiler.frontend.semantic import TENSOR_METHODS
from ..compiler.frontend.values import builtin, constexpr, dtype, pointer_type, unwrap

#: ``tl.pi32_t``: the pointer-to-int32 type (a cast target for addresses).
pi32_t = pointer_type(dtype("int32"))

#: Triton's largest tile (elements); larger shapes are rejected.
TRITON_MAX_TENSOR_NUMEL = constexpr(1048576)


@builtin
def item(input, _semantic=None):
    """The one element of a one-element tensor, as a scalar."""
    return _semantic.item(input)


@builtin
def histogram(input, num_bins, mask=None, _semantic=None):
    """How many elements of ``input`` equal each of ``0 .. num_bins-1`` (int32); ``mask`` excludes some."""
    return _semantic.histogram(input, num_bins, mask)


@builtin
def gather(src, index, axis, _semantic=None):
    """``src`` indexed by ``index`` along ``axis`` (like ``torch.gather``)."""
    return _semantic.gather(src, index, axis)


@builtin
def xor_sum(input, axis=None, keep_dims=False, _semantic=None):
    """Bitwise xor of the elements along ``axis`` (integers)."""
    return _semantic.bitwise_reduce(input, axis, "xor", keep_dims)


@builtin
def reduce_or(input, axis, keep_dims=False, _semantic=None):
    """Bitwise or of the elements along ``axis`` (integers)."""
    return _semantic.bitwise_reduce(input, axis, "or", keep_dims)


def _arith(symbol, name):
    def fn(x, y, sanitize_overflow=True, _semantic=None):
        return _semantic.binary(symbol, unwrap(x), unwrap(y))

    fn.__name__ = name
    fn.__doc__ = f"``x {symbol} y`` (Triton's functional spelling)."
    return builtin(fn)


add = _arith("+", "add")
sub = _arith("-", "sub")
mul = _arith("*", "mul")


@builtin
def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero", _semantic=None):
    """A descriptor of a ``shape`` array at ``base`` whose ``load``/``store`` move ``block_shape`` blocks."""
    return _semantic.make_tensor_descriptor(base, shape, strides, block_shape, padding_option)


@builtin
def load_tensor_descriptor(desc, offsets, _semantic=None):
    """``desc.load(offsets)``."""
    return desc.load(offsets)


@builtin
def store_tensor_descriptor(desc, offsets, value, _semantic=None):
    """``desc.store(offsets, value)``."""
    return desc.store(offsets, value)


@builtin
def expect_zero(x, mask, _semantic=None):
    """``x`` unchanged: a promise that it is zero where ``mask`` holds (used by sanitizers)."""
    return x


_MEMBERS = (
    "broadcast_to trans permute split view item reshape expand_dims cast store advance atomic_cas atomic_xchg "
    "atomic_add atomic_max atomic_min atomic_and atomic_or atomic_xor reduce associative_scan histogram gather "
    "exp log cos sin sqrt rsqrt abs cdiv sigmoid softmax ravel max argmax min argmin sum xor_sum reduce_or "
    "cumsum cumprod sort flip exp2 log2 erf floor ceil"
).split()


def register_tensor_members(namespace: dict) -> None:
    """``x.<name>(...)`` calls ``tl.<name>(x, ...)`` for every Triton tensor member not yet registered."""
    for name in _MEMBERS:
        fn = namespace.get(name)
        if fn is None or name in TENSOR_METHODS:
            continue
        if getattr(fn, "__tilelab_builtin__", False):
            TENSOR_METHODS[name] = lambda s, x, *a, _fn=fn, **k: _fn(x, *a, _semantic=s, **k)
        elif getattr(fn, "_tilelab_fn", None) is not None:  # written in tl: compiled like a @jit callee
            TENSOR_METHODS[name] = lambda s, x, *a, _fn=fn, **k: s.inline_call(_fn, [x, *a, *k.values()])


@builtin
def inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack, _semantic=None):
    """The target's assembly over the elements of ``args`` (broadcast), ``pack`` elements an instance.

    ``constraints`` are LLVM's, results first (``"=r,r"``); elements narrower than 4 bytes come packed
    into 4-byte registers; ``dtype`` may be a tuple (a tuple of tensors comes back). PTX runs on the
    ``cuda`` target only; the CPU backend and the interpreter refuse it naming the line.
    """
    return _semantic.inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack)


__all__ = [
    "TRITON_MAX_TENSOR_NUMEL",
    "add",
    "expect_zero",
    "gather",
    "histogram",
    "inline_asm_elementwise",
    "item",
    "load_tensor_descriptor",
    "make_tensor_descriptor",
    "mul",
    "pi32_t",
    "reduce_or",
    "store_tensor_descriptor",
    "sub",
    "xor_sum",
]
