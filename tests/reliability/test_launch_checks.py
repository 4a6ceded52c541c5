"""Launch-time checks: one-line errors naming the argument, instead of silent harm or numpy's errors.

Before: a read-only array (or one over ``bytes``) was written by a store; a broadcast (stride-0)
or 0-d array was read past its buffer (a 0-d array is now one element, as in Triton: the sanitizer
names a read past it); ``num_warps='four'`` gave ``invalid literal for int()``; an ``i32``
parameter given ``2**40`` raised numpy's ``OverflowError``, ``np.int64(2**32 + 1000)`` wrapped to
1000 and ``999.9`` became 999; an int argument equal to 1 was a Python int in the kernel
(``s.to(tl.float32)`` failed only then); a shape error read "a value of shape shape [16]".
"""

import numpy as np
import pytest

import tilelab
import tilelab.language as tl
from tilelab.runtime.errors import LaunchError

TARGETS = ["interpret", "cpu"]


@tilelab.jit
def add_one(x, out, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + i, tl.load(x + i, mask=i < n) + 1, mask=i < n)


def _read_only(n):
    a = np.zeros(n, np.float32)
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "make_x, make_out, message",
    [
        (lambda: np.ones(64, np.float32), lambda: _read_only(64), "argument 'out' is read-only, but the kernel stores"),
        (
            lambda: np.ones(64, np.float32),
            lambda: np.frombuffer(bytes(256), np.float32),
            "argument 'out' is read-only",
        ),
        (
            lambda: np.broadcast_to(np.float32(2), (64,)),
            lambda: np.zeros(64, np.float32),
            "argument 'x' is a broadcast view \\(a stride of 0\\)",
        ),
    ],
    ids=["read-only", "bytes", "broadcast"],
)
def test_unusable_arrays_are_refused(target, make_x, make_out, message):
    x, out = make_x(), make_out()
    for _ in range(2):  # the full launch path, then the warm one
        with pytest.raises(LaunchError, match=message):
            add_one[(1,)](x, out, 64, BLOCK=64, target=target)


@tilelab.jit
def total(x, z, BLOCK: tl.constexpr):
    tl.store(z, tl.sum(tl.load(x + tl.arange(0, BLOCK)), axis=0))


@pytest.mark.parametrize("target", TARGETS)
def test_a_0d_array_is_one_element(target, rng):
    """A reduction to a scalar writes a 0-d array (Triton's own tests pass ``torch.empty(())``); reading past
    its one element is an out-of-bounds access that the sanitizer names."""
    x = rng.standard_normal(64).astype(np.float32)
    z = np.zeros((), np.float32)
    total[(1,)](x, z, BLOCK=64, target=target)
    # the sum of 64 normals may cancel to near zero: the tolerance scales with the terms, not the result
    np.testing.assert_allclose(z, x.astype(np.float64).sum(), rtol=1e-5, atol=1e-6 * np.abs(x).sum())
    with pytest.raises(Exception, match="out of bounds|out-of-bounds") as error:
        add_one[(1,)](np.array(2, np.float32), np.zeros(64, np.float32), 64, BLOCK=64, target=target, sanitize=True)
    assert "'x'" in str(error.value) or " x" in str(error.value)


@pytest.mark.parametrize("target", TARGETS)
def test_read_only_input_is_fine(target, rng):
    x = rng.standard_normal(64).astype(np.float32)
    x.flags.writeable = False
    out = np.zeros(64, np.float32)
    add_one[(1,)](x, out, 64, BLOCK=64, target=target)
    np.testing.assert_array_equal(out, x + 1)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "n, message",
    [
        (2**40, "argument 'n' = 1099511627776 does not fit the kernel's i32"),
        (np.int64(2**32 + 1000), "argument 'n' = 4294968296 does not fit the kernel's i32"),
        (999.9, "argument 'n' expects an integer for i32, got float 999.9"),
    ],
)
def test_scalars_that_do_not_fit_a_compiled_parameter(target, n, message, rng):
    ck = tilelab.compile(
        add_one, signature={"x": "*fp32", "out": "*fp32", "n": "i32"}, constants={"BLOCK": 64}, target=target
    )
    x, out = rng.standard_normal(64).astype(np.float32), np.zeros(64, np.float32)
    with pytest.raises(LaunchError, match=message):
        ck[(1,)](x, out, n)
    ck[(1,)](x, out, np.int64(64))  # a value that fits, of any integer type, is fine
    np.testing.assert_array_equal(out, x + 1)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"num_warps": "four"}, "num_warps must be a positive int, got str 'four'"),
        ({"num_warps": 3}, "num_warps must be a power of 2, got 3"),
        ({"num_stages": 2.5}, "num_stages must be a non-negative int, got float 2.5"),
    ],
)
def test_launch_options_of_the_wrong_type(options, message):
    x = np.ones(64, np.float32)
    with pytest.raises(LaunchError, match=message):
        add_one[(1,)](x, np.zeros_like(x), 64, BLOCK=64, target="cpu", **options)


@tilelab.jit
def scale_by(x, out, s, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(out + i, tl.load(x + i) * s.to(tl.float32))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("s", [1, 3])
def test_int_argument_equal_to_one_is_tensor_like(target, s, rng):
    x = rng.standard_normal(32).astype(np.float32)
    out = np.zeros_like(x)
    scale_by[(1,)](x, out, s, BLOCK=32, target=target)
    np.testing.assert_array_equal(out, x * np.float32(s))


@tilelab.jit
def store_mismatch(out, BLOCK: tl.constexpr):
    tl.store(out + tl.arange(0, 8), tl.zeros([BLOCK], tl.float32))


def test_store_shape_error_says_shape_once():
    from tilelab.compiler.frontend.errors import CompilationError

    with pytest.raises(CompilationError) as info:
        store_mismatch[(1,)](np.zeros(16, np.float32), BLOCK=16, target="interpret")
    message = str(info.value)
    assert "cannot store a value of shape [16] to [8]" in message and "shape shape" not in message
    assert "test_launch_checks.py:" in message


def _aligned(n):
    raw = np.zeros(n + 16, np.float32)
    start = (-raw.ctypes.data % 16) // raw.itemsize
    return raw[start : start + n]


@pytest.mark.parametrize("target", TARGETS)
def test_a_compiled_kernel_refuses_arguments_that_break_its_divisibility(target, rng):
    """``tilelab.compile(..., divisibility=...)`` promised multiples of 16: a launch breaking it is an error.

    Its code may rely on the promise (16-byte copies on a GPU: a fault that takes the context down,
    then every later launch fails); the launch names the argument instead. Values that keep the
    promise launch and compute as before.
    """
    sig = {"x": "*fp32", "out": "*fp32", "n": "i32"}
    ck = tilelab.compile(add_one, sig, {"BLOCK": 64}, target=target, divisibility={"x": 16, "out": 16, "n": 16})
    x, out = _aligned(65), _aligned(65)
    x[:] = rng.standard_normal(65)
    with pytest.raises(LaunchError, match=r"argument 'n' = 40 is not a multiple of 16"):
        ck[(1,)](x, out, 40)
    with pytest.raises(LaunchError, match=r"argument 'x' is at address 0x[0-9a-f]+, not a multiple of 16 bytes"):
        ck[(1,)](x[1:], out, 48)
    ck[(2,)](x, out, 64)
    np.testing.assert_array_equal(out[:64], x[:64] + 1)
    assert out[64] == 0  # n = 64: the 65th element is not written
