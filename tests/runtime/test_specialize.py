"""Specialization keys: types, divisibility and constants derived from launch values."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tilelab
from tilelab.runtime.errors import LaunchError
from tilelab.runtime.specialize import specialize_arg

from .kernels import add, scale


def aligned(n, dtype=np.float32):
    arr = np.empty(n + 16, dtype)
    offset = (-arr.ctypes.data % 16) // arr.itemsize
    return arr[offset : offset + n]


@pytest.mark.parametrize(
    "value, type_, div",
    [
        (1024, "i32", 16),
        (1000, "i32", 1),
        (-32, "i32", 16),
        (2**31, "i64", 16),
        (-(2**31) - 1, "i64", 1),
        (2**63 + 1, "u64", 1),
        (True, "i1", 1),
        (2.5, "f32", 1),
        (np.float16(1.5), "f16", 1),
        (np.int64(48), "i64", 16),
    ],
)
def test_scalar_types(value, type_, div):
    spec = specialize_arg("a", value)
    assert (spec.type, spec.divisibility, spec.is_constant) == (type_, div, False)


def test_int_one_becomes_a_constant_unless_not_specialized():
    assert specialize_arg("s", 1).constant == 1
    spec = specialize_arg("s", 1, specialize=False)
    assert (spec.type, spec.is_constant) == ("i32", False)
    assert specialize_arg("n", 32, specialize=False).divisibility == 1


def test_none_is_a_constant():
    spec = specialize_arg("bias", None)
    assert spec.is_constant and spec.constant is None


@pytest.mark.parametrize(
    "dtype, name",
    [
        (np.float32, "*f32"),
        (np.float16, "*f16"),
        (np.int8, "*i8"),
        (np.uint32, "*u32"),
        (np.bool_, "*i1"),
        (ml_dtypes.bfloat16, "*bf16"),
        (ml_dtypes.float8_e4m3fn, "*fp8e4nv"),
        (ml_dtypes.float8_e5m2, "*fp8e5"),
    ],
)
def test_array_pointer_types(dtype, name):
    assert specialize_arg("x", aligned(8, dtype)).type == name


def test_pointer_alignment_decides_divisibility():
    base = aligned(64)
    assert specialize_arg("x", base).divisibility == 16
    assert specialize_arg("x", base[1:]).divisibility == 1  # 4 bytes past an aligned address
    assert specialize_arg("x", base[4:]).divisibility == 16
    assert specialize_arg("x", base[::2]).divisibility == 16  # strided: the first element counts


def test_object_with_array_interface_is_an_array():
    class Holder:
        def __init__(self, arr):
            self.__array_interface__ = arr.__array_interface__

    assert specialize_arg("x", Holder(aligned(4, np.float64))).type == "*f64"


def test_unsupported_values_name_the_argument():
    with pytest.raises(LaunchError, match=r"argument 'x': unsupported dtype complex64"):
        specialize_arg("x", np.zeros(4, np.complex64))
    with pytest.raises(LaunchError, match=r"argument 'n': unsupported type str"):
        specialize_arg("n", "12")
    with pytest.raises(LaunchError, match=r"argument 'n': integer .* does not fit in 64 bits"):
        specialize_arg("n", 2**64)


def test_jit_specialize_splits_signature_constants_and_divisibility():
    x, out = aligned(64), aligned(64)
    bound = scale.bind((x, out, 64, 0.5, 1), {"BLOCK": 32})
    signature, constants, div, devices = scale.specialize(bound)
    assert signature == {"x": "*f32", "out": "*f32", "n": "i32", "alpha": "f32"}
    assert constants == {"stride": 1, "BLOCK": 32}
    assert div == {"x": 16, "out": 16, "n": 16, "alpha": 1}
    assert devices == {"cpu"}


def test_do_not_specialize_by_name_and_index():
    @tilelab.jit(do_not_specialize=["n", 4])
    def kern(x, out, n, alpha, stride):
        pass

    bound = kern.bind((aligned(4), aligned(4), 1, 2.0, 1), {})
    signature, constants, div, _ = kern.specialize(bound)
    assert signature["n"] == "i32" and signature["stride"] == "i32"
    assert constants == {} and div["n"] == 1


def test_constexpr_annotation_is_recognized():
    assert add.constexprs == {"BLOCK"}
    assert add.arg_names == ["x", "y", "out", "n", "BLOCK"]
