"""Golden tests of the inline pass."""

from __future__ import annotations

import numpy as np
import pytest

from tilelab.compiler.ir.parser import parse_module
from tilelab.compiler.passes import inline

from .support import assert_docstring_example, assert_same_values, canonical, docstring_example, run_pass


def test_docstring_example():
    assert_docstring_example(inline)


NESTED = """
tt.func @k(%x: !ptr<f32>) {
  %0 = tt.load %x : f32
  %1, %2 = tt.call %0 {callee = "outer"} : f32, f32
  %3 = arith.add %1, %2 : f32
  tt.store %x, %3 : !ptr<f32>
  tt.return
}
tt.func @outer(%v: f32) -> (f32, f32) {
  %0 = tt.call %v {callee = "square"} : f32
  %1 = arith.constant {value = 0} : i32
  %2 = arith.constant {value = 3} : i32
  %3 = arith.constant {value = 1} : i32
  %4 = scf.for %i = %1 to %2 step %3 iter_args(%acc = %0) -> (f32) {
    %5 = tt.call %acc {callee = "square"} : f32
    scf.yield %5 : f32
  }
  tt.return %4, %v : f32, f32
}
tt.func @square(%v: f32) -> (f32) {
  %0 = arith.mul %v, %v : f32
  tt.return %0 : f32
}
"""


def test_nested_calls_and_calls_in_loops():
    out, changed = run_pass(inline, NESTED)
    assert changed
    assert "tt.call" not in out and out.count("tt.func") == 1
    assert out.count("arith.mul") == 2 and "scf.yield %" in out


def test_negative_no_calls():
    before, after = docstring_example(inline)
    text = canonical(after)
    out, changed = run_pass(inline, text)
    assert not changed and out == text


def test_unknown_callee_is_an_error():
    text = NESTED.replace('callee = "outer"', 'callee = "missing"')
    with pytest.raises(inline.InlineError, match="unknown function @missing"):
        inline.run(parse_module(text))


def test_recursion_is_an_error():
    text = NESTED.replace(
        "%0 = arith.mul %v, %v : f32\n  tt.return %0", '%0 = tt.call %v {callee = "square"} : f32\n  tt.return %0'
    )
    with pytest.raises(inline.InlineError, match="recursive call of @square"):
        inline.run(parse_module(text))


def test_values_are_preserved(rng):
    def args():  # |x| > 1: x**16 + x differs from x (a small x would leave x unchanged and prove nothing)
        return [(rng.uniform(1.05, 1.3, 1) * rng.choice([-1, 1])).astype(np.float32)]

    assert_same_values(inline, NESTED, args, grid=(1,))
