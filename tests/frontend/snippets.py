# ruff: noqa: F841, B007
"""Small kernels, one rule each, for test_semantics and test_errors."""

import tilelab.language as tl
from tilelab.compiler.frontend.values import device_function


def int_truediv(x_ptr, i_ptr, n, B: tl.constexpr):
    i = tl.load(i_ptr + tl.arange(0, B))
    tl.store(x_ptr + tl.arange(0, B), i / 3)


def int_floordiv(x_ptr, i_ptr, n, B: tl.constexpr):
    i = tl.load(i_ptr + tl.arange(0, B))
    tl.store(i_ptr + tl.arange(0, B), i // 3)


def int_mod(x_ptr, i_ptr, n, B: tl.constexpr):
    i = tl.load(i_ptr + tl.arange(0, B))
    tl.store(i_ptr + tl.arange(0, B), i % n)


def half_times_float_literal(x_ptr, i_ptr, n, B: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, B))
    tl.store(x_ptr + tl.arange(0, B), x * 0.5)


def int_times_float_literal(x_ptr, i_ptr, n, B: tl.constexpr):
    i = tl.load(i_ptr + tl.arange(0, B))
    tl.store(x_ptr + tl.arange(0, B), i * 0.5)


def pointer_minus_int(x_ptr, i_ptr, n, B: tl.constexpr):
    tl.store(x_ptr - tl.arange(0, B), 1.0)


def bitcast(x_ptr, i_ptr, n, B: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, B))
    tl.store(i_ptr + tl.arange(0, B), x.to(tl.int16, bitcast=True))


def dot_f16(x_ptr, i_ptr, n, B: tl.constexpr):
    r = tl.arange(0, B)
    a = tl.load(x_ptr + r[:, None] * B + r[None, :])
    tl.store(x_ptr + r[:, None] * B + r[None, :], tl.dot(a, a.T))


def where_weak(x_ptr, i_ptr, n, B: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, B))
    tl.store(x_ptr + tl.arange(0, B), tl.where(x > 0, x, 0.0))


def argmin_keep(x_ptr, i_ptr, n, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r[:, None] * B + r[None, :])
    tl.store(i_ptr + r[:, None], tl.argmin(x, 1, keep_dims=True))


def shapes(x_ptr, i_ptr, n, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r[:, None] * B + r[None, :])
    y = tl.trans(tl.reshape(x, (B // 2, 2 * B)))
    a, b = tl.split(tl.join(x, x))
    tl.store(x_ptr + tl.arange(0, 2 * B * B), tl.ravel(tl.interleave(a, b)))
    tl.store(x_ptr + r[:, None] * B + r[None, :], tl.flip(tl.sort(x, descending=True)) + tl.sum(y))


def atomics(x_ptr, i_ptr, n, B: tl.constexpr):
    r = tl.arange(0, B)
    tl.atomic_add(i_ptr + r, 1, mask=r < n)
    tl.atomic_max(i_ptr + r, r)
    tl.atomic_cas(i_ptr, 0, 1)


def histogram(x_ptr, i_ptr, n, B: tl.constexpr):
    r = tl.arange(0, B)
    tl.store(i_ptr + r, tl.histogram(tl.load(i_ptr + r), B, mask=r < n))


# ---------------------------------------------------------------- errors


def err_shapes(x_ptr, i_ptr, n, B: tl.constexpr):
    a = tl.arange(0, B)
    b = tl.arange(0, 2 * B)
    c = a + b


def err_undefined(x_ptr, i_ptr, n, B: tl.constexpr):
    y = undefined_name + 1  # noqa: F821


def err_try(x_ptr, i_ptr, n, B: tl.constexpr):
    try:
        pass
    except Exception:
        pass


def err_with(x_ptr, i_ptr, n, B: tl.constexpr):
    with n:
        pass


def err_lambda(x_ptr, i_ptr, n, B: tl.constexpr):
    f = lambda v: v  # noqa: E731


def err_break(x_ptr, i_ptr, n, B: tl.constexpr):
    for i in range(n):
        break


def err_arange_runtime(x_ptr, i_ptr, n, B: tl.constexpr):
    r = tl.arange(0, n)


def err_arange_pow2(x_ptr, i_ptr, n, B: tl.constexpr):
    r = tl.arange(0, 12)


def err_reshape_runtime(x_ptr, i_ptr, n, B: tl.constexpr):
    r = tl.reshape(tl.arange(0, B), (n, 4))


def err_static_range(x_ptr, i_ptr, n, B: tl.constexpr):
    for i in tl.static_range(n):
        pass


def err_float_bitwise(x_ptr, i_ptr, n, B: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, B))
    y = x & 1


def err_dot_shapes(x_ptr, i_ptr, n, B: tl.constexpr):
    r = tl.arange(0, B)
    s = tl.arange(0, 2 * B)
    a = tl.load(x_ptr + r[:, None] * B + r[None, :])
    b = tl.load(x_ptr + s[:, None] * B + r[None, :])
    c = tl.dot(a, b)


def err_dot_bf16_out(x_ptr, i_ptr, n, B: tl.constexpr):
    r = tl.arange(0, B)
    a = tl.load(x_ptr + r[:, None] * B + r[None, :])
    c = tl.dot(a, a, out_dtype=tl.bfloat16)


def err_gather_shapes(x_ptr, i_ptr, n, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r[:, None] * B + r[None, :])
    i = tl.load(i_ptr + r[:, None] * B + tl.arange(0, 2 * B)[None, :])
    y = tl.gather(x, i, 0)


def err_gather_float_index(x_ptr, i_ptr, n, B: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, B))
    y = tl.gather(x, x, 0)


def err_histogram_bins(x_ptr, i_ptr, n, B: tl.constexpr):
    i = tl.load(i_ptr + tl.arange(0, B))
    h = tl.histogram(i, 12)


def err_histogram_float(x_ptr, i_ptr, n, B: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, B))
    h = tl.histogram(x, 16)


def err_histogram_mask(x_ptr, i_ptr, n, B: tl.constexpr):
    i = tl.load(i_ptr + tl.arange(0, B))
    h = tl.histogram(i, 16, mask=i)


def err_atomic_max_f16(x_ptr, i_ptr, n, B: tl.constexpr):
    r = tl.arange(0, B)
    tl.atomic_max(x_ptr + r, tl.load(x_ptr + r))


def err_mask_dtype(x_ptr, i_ptr, n, B: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, B), mask=tl.arange(0, B))


def err_load_not_pointer(x_ptr, i_ptr, n, B: tl.constexpr):
    x = tl.load(n)


def err_builtin_args(x_ptr, i_ptr, n, B: tl.constexpr):
    x = tl.program_id(0, 1, 2)


def err_if_types(x_ptr, i_ptr, n, B: tl.constexpr):
    if n > 0:
        y = tl.zeros((B,), tl.float32)
    else:
        y = tl.zeros((B,), tl.int32)
    tl.store(x_ptr + tl.arange(0, B), y)


def err_loop_type(x_ptr, i_ptr, n, B: tl.constexpr):
    acc = tl.zeros((B,), tl.int32)
    for i in range(n):
        acc = acc + 0.5


def err_return_in_loop(x_ptr, i_ptr, n, B: tl.constexpr):
    for i in range(n):
        return


def err_static_assert(x_ptr, i_ptr, n, B: tl.constexpr):
    tl.static_assert(B > 64, "B too small")


def err_other_without_mask(x_ptr, i_ptr, n, B: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, B), other=0.0)


def err_fstring(x_ptr, i_ptr, n, B: tl.constexpr):
    tl.static_print(f"{n}")


def err_subscript(x_ptr, i_ptr, n, B: tl.constexpr):
    x = tl.arange(0, B)[3]


def recursive(x):
    return recursive(x)


recursive._tilelab_fn = recursive


def err_recursion(x_ptr, i_ptr, n, B: tl.constexpr):
    recursive(n)


def err_float_floordiv(x_ptr, i_ptr, n, B: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, B))
    tl.store(x_ptr + tl.arange(0, B), x // 2.0)


def err_continue(x_ptr, i_ptr, n, B: tl.constexpr):
    for i in range(n):
        continue


def err_unsigned_negative_literal(x_ptr, i_ptr, n, B: tl.constexpr):
    u = tl.load(i_ptr + tl.arange(0, B)).to(tl.uint32)
    tl.store(i_ptr + tl.arange(0, B), (u + -1).to(tl.int32))


def err_literal_too_wide(x_ptr, i_ptr, n, B: tl.constexpr):
    c = tl.load(i_ptr + tl.arange(0, B)).to(tl.int8)
    tl.store(i_ptr + tl.arange(0, B), (c * 300).to(tl.int32))


def return_in_helper_if(x_ptr, i_ptr, n, B: tl.constexpr):
    tl.store(i_ptr + tl.arange(0, B), helper_with_early_return(n))


@device_function
def helper_with_early_return(n):
    if n > 0:
        return n
    return -n


def widened_loop_scalars(x_ptr, i_ptr, n, B: tl.constexpr):
    acc = 0
    for i in range(n):
        acc += 0.5
    j = 0
    while j < n:
        j += 1.5
    tl.store(x_ptr, acc)
    tl.store(x_ptr + 1, j)
