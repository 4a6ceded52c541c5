"""Python literals meeting unsigned and narrow integer tiles, argmax ties, and early-return errors."""

import numpy as np
import pytest

import tilelab.language as tl
from tilelab.compiler.frontend import build_module
from tilelab.compiler.frontend.promotion import computation_type
from tilelab.compiler.ir.types import PointerType, f16, f32, i8, i32, u8, u32

from . import snippets

interpreter = pytest.importorskip("tilelab.compiler.interpreter")
P = PointerType


def unsigned_literals(a_ptr, out_ptr, B: tl.constexpr):
    """Every binary operator between a u32 tile and a Python int; results stored as u32 rows."""
    r = tl.arange(0, B)
    a = tl.load(a_ptr + r)
    tl.store(out_ptr + 0 * B + r, a % 7)
    tl.store(out_ptr + 1 * B + r, a // 1000)
    tl.store(out_ptr + 2 * B + r, a + 3000000000)
    tl.store(out_ptr + 3 * B + r, a - 5)
    tl.store(out_ptr + 4 * B + r, a * 3)
    tl.store(out_ptr + 5 * B + r, (a & 0xFF00) | 1 ^ 3)
    tl.store(out_ptr + 6 * B + r, (a >> 3) + (a << 2))
    tl.store(out_ptr + 7 * B + r, (a > 2147483648).to(tl.uint32) + (7 < a).to(tl.uint32))


def test_unsigned_tile_with_python_ints_matches_numpy(rng):
    a = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    out = np.full((8, 64), 0xDEADBEEF, np.uint32)  # poisoned: every element must be written
    m = build_module(unsigned_literals, {"a_ptr": P(u32), "out_ptr": P(u32)}, {"B": 64})
    interpreter.run_kernel(m, (1, 1, 1), [a, out])
    u = np.uint32
    with np.errstate(over="ignore"):
        want = [
            a % u(7),
            a // u(1000),
            a + u(3000000000),
            a - u(5),
            a * u(3),
            (a & u(0xFF00)) | (u(1) ^ u(3)),
            (a >> u(3)) + (a << u(2)),
            (a > u(2147483648)).astype(u) + (u(7) < a).astype(u),
        ]
    np.testing.assert_array_equal(out, np.stack(want))


def narrow_literals(a_ptr, out_ptr, B: tl.constexpr):
    """A u8 tile keeps its type with small literals: ``+ 200`` wraps modulo 256."""
    r = tl.arange(0, B)
    a = tl.load(a_ptr + r)
    tl.store(out_ptr + r, a + 200)


def test_u8_tile_with_literal_stays_u8(rng):
    a = rng.integers(0, 256, 32, dtype=np.uint8)
    out = np.full(32, 0xA5, np.uint8)  # poisoned
    m = build_module(narrow_literals, {"a_ptr": P(u8), "out_ptr": P(u8)}, {"B": 32})
    interpreter.run_kernel(m, (1, 1, 1), [a, out])
    np.testing.assert_array_equal(out, a + np.uint8(200))


@pytest.mark.parametrize("tile, div, expected", [(u32, True, u32), (u8, False, u8), (i8, True, i8), (f16, True, f32)])
def test_weak_int_takes_the_tile_type(tile, div, expected):
    assert computation_type(tile, False, i32, True, div) == expected
    assert computation_type(i32, True, tile, False, div) == expected


def argmax_ties(x_ptr, left_ptr, any_ptr, B: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, B))
    tl.store(left_ptr, tl.argmax(x, 0, tie_break_left=True))
    tl.store(any_ptr, tl.argmin(x, 0, tie_break_left=False))


def test_argmax_tie_break(rng):
    x = rng.integers(0, 4, 64).astype(np.float32)  # many ties
    left, anywhere = np.full(1, -1, np.int32), np.full(1, -1, np.int32)
    m = build_module(argmax_ties, {"x_ptr": P(f32), "left_ptr": P(i32), "any_ptr": P(i32)}, {"B": 64})
    interpreter.run_kernel(m, (1, 1, 1), [x, left, anywhere])
    assert left[0] == np.argmax(x)
    assert x[anywhere[0]] == x.min()


@pytest.mark.parametrize("n", [5, -7])
def test_return_in_helper_if_returns_either_branch(n):
    """A helper's early ``return`` inside a run-time ``if`` (Triton accepts it) gives that branch's value."""
    sig = {"x_ptr": P(f16), "i_ptr": P(i32), "n": i32}
    m = build_module(snippets.return_in_helper_if, sig, {"B": 16})
    out = np.zeros(16, np.int32)
    interpreter.run_kernel(m, (1, 1, 1), [np.zeros(16, np.float16), out, np.int32(n)])
    np.testing.assert_array_equal(out, abs(n))
