"""Every launch-argument error: one short message that names the kernel and the argument."""

from __future__ import annotations

import numpy as np
import pytest

import tilelab
from tilelab.runtime.errors import LaunchError, TargetUnavailable

from .kernels import add

SIG = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32"}


@pytest.fixture
def arrays(rng):
    x = rng.standard_normal(64).astype(np.float32)
    return x, x + 1, np.empty_like(x)


def launch(*args, **kwargs):
    add[(1,)](*args, **kwargs)


def test_too_many_arguments(arrays):
    with pytest.raises(LaunchError, match=r"add\(\): takes 5 arguments \(x, y, out, n, BLOCK\) but 6 were given"):
        launch(*arrays, 64, 64, 7)


def test_unknown_keyword(arrays):
    with pytest.raises(LaunchError, match=r"add\(\): unexpected keyword argument 'BLOK'"):
        launch(*arrays, 64, BLOK=64)


def test_argument_given_twice(arrays):
    with pytest.raises(LaunchError, match=r"argument 'n' given twice"):
        launch(*arrays, 64, n=64, BLOCK=64)


def test_missing_argument(arrays):
    with pytest.raises(LaunchError, match=r"add\(\): missing argument 'out'"):
        launch(arrays[0], arrays[1])


def test_missing_constexpr(arrays):
    with pytest.raises(LaunchError, match=r"add\(\): missing tl.constexpr argument 'BLOCK'"):
        launch(*arrays, 64)


def test_array_for_a_constexpr(arrays):
    with pytest.raises(LaunchError, match=r"argument 'BLOCK' is a tl.constexpr and needs a compile-time value"):
        launch(*arrays, 64, BLOCK=arrays[0])


def test_unsupported_argument_type(arrays):
    with pytest.raises(LaunchError, match=r"add\(\): argument 'n': unsupported type list .*pass a tuple"):
        launch(*arrays, [64], BLOCK=64)
    with pytest.raises(LaunchError, match=r"add\(\): argument 'x': element 1 is a tuple: a tuple argument holds"):
        launch((arrays[0], (arrays[1],)), *arrays[1:], 64, BLOCK=64)


def test_unsupported_dtype(arrays):
    with pytest.raises(LaunchError, match=r"add\(\): argument 'y': unsupported dtype complex128"):
        launch(arrays[0], np.zeros(64, np.complex128), arrays[2], 64, BLOCK=64)


def test_calling_a_kernel_directly():
    with pytest.raises(RuntimeError, match=r"launch it with add\[grid\]"):
        add(1, 2, 3, 4)


def test_unknown_target(arrays):
    with pytest.raises(TargetUnavailable, match=r"unknown target 'tpu'"):
        launch(*arrays, 64, BLOCK=64, target="tpu")


def test_cuda_target_unavailable(arrays, monkeypatch):
    from tilelab.runtime import targets

    monkeypatch.setitem(targets.TARGETS, "cuda", targets._lazy("tilelab.no_such_module", "CudaTarget", "CUDA"))
    monkeypatch.setattr(targets, "_instances", {})
    with pytest.raises(TargetUnavailable, match=r"^CUDA target not available: "):
        launch(*arrays, 64, BLOCK=64, target="cuda")


@pytest.fixture
def compiled():
    return tilelab.compile(add, signature=SIG, constants={"BLOCK": 64}, target="interpret")


def test_compiled_scalar_where_array_expected(compiled, arrays):
    with pytest.raises(LaunchError, match=r"add\(\): argument 'y' expects an array of f32, got float"):
        compiled[(1,)](arrays[0], 1.0, arrays[2], 64)


def test_compiled_array_where_scalar_expected(compiled, arrays):
    with pytest.raises(LaunchError, match=r"add\(\): argument 'n' expects a scalar i32, got an array"):
        compiled[(1,)](*arrays, arrays[0])


def test_compiled_wrong_dtype(compiled, arrays):
    with pytest.raises(LaunchError, match=r"argument 'x' expects an array of f32, got an array of float64"):
        compiled[(1,)](arrays[0].astype(np.float64), *arrays[1:], 64)


def test_compiled_wrong_count_and_names(compiled, arrays):
    with pytest.raises(LaunchError, match=r"add\(\): missing argument 'n'"):
        compiled[(1,)](*arrays)
    with pytest.raises(LaunchError, match=r"takes 4 arguments \(x, y, out, n\) but 5 were given"):
        compiled[(1,)](*arrays, 64, 64)
    with pytest.raises(LaunchError, match=r"unexpected or repeated argument 'm'"):
        compiled[(1,)](*arrays, m=64)


def test_compile_signature_errors():
    with pytest.raises(LaunchError, match=r"signature: argument 'n': unknown type 'int33'"):
        tilelab.compile(add, signature=dict(SIG, n="int33"), constants={"BLOCK": 64})
    with pytest.raises(LaunchError, match=r"add\(\): 'BLOCK' is neither in the signature nor in constants"):
        tilelab.compile(add, signature=SIG)
    with pytest.raises(LaunchError, match=r"add\(\): no parameter named 'z'"):
        tilelab.compile(add, signature=dict(SIG, z="i32"), constants={"BLOCK": 64})
    with pytest.raises(LaunchError, match=r"signature: 2 types given for 4 arguments"):
        tilelab.compile(add, signature="*fp32,i32", constants={"BLOCK": 64})


def test_jit_scalar_where_array_expected_names_line_and_arguments(arrays):
    from tilelab.compiler.frontend import CompilationError

    with pytest.raises(CompilationError, match=r"kernels.py:\d+: load expects a pointer") as info:
        launch(arrays[0], 1.5, arrays[2], 64, BLOCK=64, target="interpret")
    assert str(info.value).endswith("(launched with x: *f32, y: f32, out: *f32, n: i32)")


def test_jit_array_where_scalar_expected_names_line_and_arguments(arrays):
    from tilelab.compiler.frontend import CompilationError

    with pytest.raises(CompilationError, match=r"kernels.py:\d+: ") as info:
        launch(*arrays, arrays[0], BLOCK=64, target="interpret")
    assert str(info.value).endswith("(launched with x: *f32, y: *f32, out: *f32, n: *f32)")
