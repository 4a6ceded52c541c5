"""The ``tl`` builtins: thin functions with Triton's signatures that call the semantic layer.

Each is marked ``@builtin``: inside a kernel the code generator passes it the
semantic builder as ``_semantic``; called from plain Python it raises a clear error.

    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
"""

from __future__ import annotations

from ..compiler.frontend.errors import SemanticError
from ..compiler.frontend.values import builtin, is_builtin, unwrap


class PropagateNan:
    """Whether ``maximum``/``minimum``/``clamp`` propagate NaNs: ``NONE`` (default) or ``ALL``."""

    NONE = 0
    ALL = 0xFFFF


# ---------------------------------------------------------------- indexing and creation
@builtin
def program_id(axis, _semantic=None):
    """The index of this program along grid axis 0, 1 or 2."""
    return _semantic.program_id(axis)


@builtin
def num_programs(axis, _semantic=None):
    """The number of programs along grid axis 0, 1 or 2."""
    return _semantic.num_programs(axis)


@builtin
def arange(start, end, _semantic=None):
    """``[start, ..., end - 1]`` as an int32 tile; ``end - start`` a power of two."""
    return _semantic.arange(start, end)


@builtin
def full(shape, value, dtype, _semantic=None):
    """A tile of ``shape`` with every element ``value``."""
    return _semantic.full(shape, value, dtype)


@builtin
def zeros(shape, dtype, _semantic=None):
    """A tile of zeros."""
    return _semantic.full(shape, 0, dtype)


@builtin
def zeros_like(input, _semantic=None):
    """Zeros with ``input``'s shape and dtype."""
    return _semantic.full(input.shape, 0, input.dtype)


@builtin
def full_like(input, value, dtype=None, _semantic=None):
    """``value`` everywhere, with ``input``'s shape (and dtype unless given)."""
    return _semantic.full(input.shape, value, dtype if unwrap(dtype) is not None else input.dtype)


@builtin
def to_tensor(x, _semantic=None):
    return _semantic.to_tensor(x)


@builtin
def cast(input, dtype, fp_downcast_rounding=None, bitcast=False, _semantic=None):
    """``input`` converted to ``dtype`` (bits reinterpreted with ``bitcast=True``)."""
    return _semantic.cast(input, dtype, bitcast=unwrap(bitcast), rounding=unwrap(fp_downcast_rounding))


# ---------------------------------------------------------------- memory
@builtin
def load(
    pointer,
    mask=None,
    other=None,
    boundary_check=(),
    padding_option="",
    cache_modifier="",
    eviction_policy="",
    volatile=False,
    _semantic=None,
):
    """Read a tile through a pointer tile (or a block pointer); masked-off lanes give ``other``."""
    return _semantic.load(
        pointer, mask, other, boundary_check, padding_option, cache_modifier, eviction_policy, volatile
    )


@builtin
def store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy="", _semantic=None):
    """Write ``value`` through a pointer tile (or a block pointer) where ``mask`` holds."""
    return _semantic.store(pointer, value, mask, boundary_check, cache_modifier, eviction_policy)


@builtin
def make_block_ptr(base, shape, strides, offsets, block_shape, order, _semantic=None):
    """A pointer to a ``block_shape`` block of a ``shape`` array at ``offsets``."""
    return _semantic.make_block_ptr(base, shape, strides, offsets, block_shape, order)


@builtin
def advance(base, offsets, _semantic=None):
    """A block pointer moved by ``offsets``."""
    return _semantic.advance(base, offsets)


def _atomic(kind):
    def fn(pointer, val, mask=None, sem=None, scope=None, _semantic=None):
        return _semantic.atomic(kind, pointer, val, mask, unwrap(sem), unwrap(scope))

    fn.__name__ = f"atomic_{kind}"
    fn.__doc__ = f"Atomically apply ``{kind}`` of ``val`` at ``pointer`` where ``mask`` holds; gives the old values."
    return builtin(fn)


atomic_add = _atomic("add")
atomic_max = _atomic("max")
atomic_min = _atomic("min")
atomic_and = _atomic("and")
atomic_or = _atomic("or")
atomic_xor = _atomic("xor")
atomic_xchg = _atomic("xchg")


@builtin
def atomic_cas(pointer, cmp, val, sem=None, scope=None, _semantic=None):
    """Atomically store ``val`` where the old value equals ``cmp``; gives the old values."""
    return _semantic.atomic_cas(pointer, cmp, val, unwrap(sem), unwrap(scope))


# ---------------------------------------------------------------- elementwise
@builtin
def where(condition, x, y, _semantic=None):
    """``x`` where ``condition`` holds, else ``y`` (promoted and broadcast)."""
    return _semantic.where(condition, x, y)


@builtin
def maximum(x, y, propagate_nan=PropagateNan.NONE, _semantic=None):
    """Elementwise maximum (NaNs propagate with ``PropagateNan.ALL``)."""
    return _semantic.minmax("max", x, y, unwrap(propagate_nan) == PropagateNan.ALL)


@builtin
def minimum(x, y, propagate_nan=PropagateNan.NONE, _semantic=None):
    """Elementwise minimum (NaNs propagate with ``PropagateNan.ALL``)."""
    return _semantic.minmax("min", x, y, unwrap(propagate_nan) == PropagateNan.ALL)


@builtin
def clamp(x, min, max, propagate_nan=PropagateNan.NONE, _semantic=None):
    """``x`` limited to ``[min, max]``."""
    nan = unwrap(propagate_nan) == PropagateNan.ALL
    return _semantic.minmax("min", _semantic.minmax("max", x, min, nan), max, nan)


@builtin
def fma(x, y, z, _semantic=None):
    """``x * y + z`` with one rounding."""
    return _semantic.fma(x, y, z)


@builtin
def umulhi(x, y, _semantic=None):
    """The high 32 (or 64) bits of the integer product."""
    return _semantic.math_binary("umulhi", x, y)


@builtin
def fdiv(x, y, ieee_rounding=False, _semantic=None):
    """``x / y`` on floats; ``ieee_rounding=True`` rounds correctly to nearest (as ``div_rn``)."""
    if bool(ieee_rounding):
        return _semantic.math_binary("fdiv", x, y, rounding="rn")
    return _semantic.math_binary("fdiv", x, y)


@builtin
def div_rn(x, y, _semantic=None):
    """``x / y`` correctly rounded to nearest (plain ``/`` may be 2 ulp off on GPUs, as in Triton)."""
    return _semantic.math_binary("fdiv", x, y, rounding="rn")


# ---------------------------------------------------------------- shape
@builtin
def broadcast_to(input, *shape, _semantic=None):
    """``input`` stretched to ``shape``."""
    return _semantic.broadcast_to_shape(_semantic.to_tensor(input), _semantic.shape_args(shape))


@builtin
def broadcast(input, other, _semantic=None):
    """Both operands stretched to their common shape."""
    return _semantic.broadcast_pair(input, other)


@builtin
def reshape(input, *shape, can_reorder=False, _semantic=None):
    """Same elements, new shape."""
    return _semantic.reshape(input, shape, can_reorder)


@builtin
def view(input, *shape, _semantic=None):
    """Same elements, new shape (their order may change)."""
    return _semantic.reshape(input, shape, True)


@builtin
def expand_dims(input, axis, _semantic=None):
    """A new size-1 dimension at ``axis``."""
    return _semantic.expand_dims(input, axis)


@builtin
def trans(input, *dims, _semantic=None):
    """Dimensions permuted (a 2-d tile transposed when no dims are given)."""
    return _semantic.permute(input, dims)


@builtin
def permute(input, *dims, _semantic=None):
    """Dimensions reordered by ``dims``."""
    return _semantic.permute(input, dims)


@builtin
def join(a, b, _semantic=None):
    """``a`` and ``b`` stacked along a new last dimension of size 2."""
    return _semantic.join(a, b)


@builtin
def split(a, _semantic=None):
    """A tile with last dimension 2 split into two tiles."""
    return _semantic.split(a)


@builtin
def cat(input, other, can_reorder=False, _semantic=None):
    """Concatenation along dimension 0."""
    return _semantic.cat(input, other, can_reorder)


@builtin
def interleave(a, b, _semantic=None):
    """Elements of ``a`` and ``b`` alternating along the last dimension."""
    return _semantic.interleave(a, b)


@builtin
def ravel(x, can_reorder=False, _semantic=None):
    """``x`` as a 1-d tile."""
    x = _semantic.to_tensor(x)
    return _semantic.reshape(x, (x.numel,), can_reorder)


@builtin
def flip(x, dim=None, _semantic=None):
    """Elements reversed along ``dim``."""
    return _semantic.flip(x, dim)


@builtin
def sort(x, dim=None, descending=False, _semantic=None):
    """Elements sorted along ``dim``."""
    return _semantic.sort(x, dim, descending)


@builtin
def dot_scaled(
    lhs,
    lhs_scale,
    lhs_format,
    rhs,
    rhs_scale,
    rhs_format,
    acc=None,
    fast_math=False,
    lhs_k_pack=True,
    rhs_k_pack=True,
    out_dtype=None,
    _semantic=None,
):
    """``acc + lhs @ rhs`` of microscaled tiles (formats ``e2m1``, ``e4m3``, ``e5m2``, ``bf16``, ``fp16``;
    scales: e8m0 bytes, ``lhs_scale`` [M, K // group], ``rhs_scale`` [N, K // group]), in f32."""
    return _semantic.dot_scaled(
        lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc, fast_math, lhs_k_pack, rhs_k_pack, out_dtype
    )


@builtin
def bitonic_merge(x, dim=None, descending=False, _semantic=None):
    """The last merge phase of a bitonic sort along the last dimension: a bitonic row comes out sorted."""
    return _semantic.bitonic_merge(x, dim, descending)


@builtin
def topk(x, k, dim=None, _semantic=None):
    """The ``k`` largest elements along the last dimension, largest first."""
    return _semantic.topk(x, k, dim)


@builtin
def squeeze(x, dim, _semantic=None):
    """``x`` without its size-1 dimension ``dim``."""
    return _semantic.squeeze(x, dim)


@builtin
def unsqueeze(x, dim, _semantic=None):
    """``x`` with a size-1 dimension inserted before ``dim``."""
    return _semantic.unsqueeze(x, dim)


# ---------------------------------------------------------------- reductions and scans
@builtin
def sum(input, axis=None, keep_dims=False, dtype=None, _semantic=None):
    """Sum along ``axis`` (all elements when None)."""
    return _semantic.sum(input, axis, keep_dims, dtype)


@builtin
def max(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False, _semantic=None):
    """Maximum along ``axis`` (with its index when ``return_indices``)."""
    return _semantic.max_reduce(input, axis, return_indices, return_indices_tie_break_left, keep_dims, kind="max")


@builtin
def min(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False, _semantic=None):
    """Minimum along ``axis`` (with its index when ``return_indices``)."""
    return _semantic.max_reduce(input, axis, return_indices, return_indices_tie_break_left, keep_dims, kind="min")


@builtin
def argmax(input, axis, tie_break_left=True, keep_dims=False, _semantic=None):
    """Index of the maximum along ``axis`` (the lowest one on ties)."""
    return _semantic.argminmax(input, axis, "max", keep_dims, tie_break_left=tie_break_left)


@builtin
def argmin(input, axis, tie_break_left=True, keep_dims=False, _semantic=None):
    """Index of the minimum along ``axis`` (the lowest one on ties)."""
    return _semantic.argminmax(input, axis, "min", keep_dims, tie_break_left=tie_break_left)


@builtin
def reduce(input, axis, combine_fn, keep_dims=False, _semantic=None):
    """Reduce along ``axis`` with a ``@jit`` ``combine_fn(a, b)`` (tuples of inputs allowed)."""
    return _semantic.reduce_user(input, axis, combine_fn, keep_dims)


@builtin
def associative_scan(input, axis, combine_fn, reverse=False, _semantic=None):
    """Inclusive scan along ``axis`` with a ``@jit`` ``combine_fn``."""
    return _semantic.associative_scan(input, axis, combine_fn, reverse)


@builtin
def cumsum(input, axis=0, reverse=False, _semantic=None):
    """Running sum along ``axis``."""
    return _semantic.cumulative(input, axis, "add", reverse)


@builtin
def cumprod(input, axis=0, reverse=False, _semantic=None):
    """Running product along ``axis``."""
    return _semantic.cumulative(input, axis, "mul", reverse)


@builtin
def dot(
    input,
    other,
    acc=None,
    input_precision=None,
    allow_tf32=None,
    max_num_imprecise_acc=None,
    out_dtype=None,
    _semantic=None,
):
    """``acc + input @ other`` on [M, K] x [K, N] tiles."""
    return _semantic.dot(input, other, acc, input_precision, allow_tf32, max_num_imprecise_acc, out_dtype)


# ---------------------------------------------------------------- hints and debugging
@builtin
def multiple_of(input, values, _semantic=None):
    """Promise that ``input``'s elements are multiples of ``values``."""
    return _semantic.hint(input, "multiple_of", values)


@builtin
def max_contiguous(input, values, _semantic=None):
    """Promise that ``input`` holds runs of ``values`` consecutive numbers."""
    return _semantic.hint(input, "max_contiguous", values)


@builtin
def max_constancy(input, values, _semantic=None):
    """Promise that ``input`` holds runs of ``values`` equal numbers (accepted, no effect)."""
    return input


@builtin
def assume(cond, _semantic=None):
    """A fact the compiler may use (accepted, no effect)."""
    return None


@builtin
def static_assert(cond, msg="", _semantic=None):
    """Fail compilation when the compile-time ``cond`` is false."""
    if not isinstance(unwrap(cond), (bool, int)):
        raise SemanticError("static_assert needs a compile-time condition")
    if not unwrap(cond):
        raise SemanticError(f"static_assert failed: {unwrap(msg)}" if unwrap(msg) else "static_assert failed")


@builtin
def static_print(*values, sep=" ", end="\n", _semantic=None):
    """Print compile-time values while the kernel compiles."""
    print(*(unwrap(v) for v in values), sep=sep, end=end)


@builtin
def device_print(prefix, *args, hex=False, _semantic=None):
    """Print ``prefix`` and the values from every program at run time."""
    return _semantic.device_print(prefix, args, hex)


@builtin
def device_assert(cond, msg="", mask=None, _semantic=None):
    """Fail the launch where ``cond`` is false (where ``mask`` holds)."""
    if unwrap(mask) is not None:
        cond = _semantic.logical("or", cond, _semantic.unary("not", mask))
    return _semantic.device_assert(cond, msg)


@builtin
def debug_barrier(_semantic=None):
    """All threads of the program wait here."""
    return _semantic.debug_barrier()


__all__ = ["PropagateNan", *(name for name, value in list(globals().items()) if is_builtin(value))]
