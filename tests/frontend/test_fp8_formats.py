"""Triton's fp8 dtypes by name: the two fnuz formats compile everywhere, float8e4b15 is refused clearly.

``tl.float8e4b8`` / ``tl.float8e5b16`` are AMD's ``float8_e4m3fnuz`` / ``float8_e5m2fnuz`` (values checked per
backend in ``tests/kernels/test_integers.py`` and ``tests/cpu/test_elementwise.py``). ``tl.float8e4b15`` answers
Triton's dtype questions, but a kernel or launch that uses it gets one error that says why.
"""

import numpy as np
import pytest
import torch

import tilelab
import tilelab.language as tl
from tilelab.compiler.backends.cuda import find_tool
from tilelab.errors import CompilationError

FORMATS = {  # Triton's answers: bits, mantissa bits, exponent bias
    "float8e4nv": (8, 3, 7),
    "float8e5": (8, 2, 15),
    "float8e4b8": (8, 3, 8),
    "float8e5b16": (8, 2, 16),
    "float8e4b15": (8, 3, 15),
}


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_fp8_dtypes_answer_as_in_triton(name):
    d = getattr(tl, name)
    assert (d.primitive_bitwidth, d.fp_mantissa_width, d.exponent_bias) == FORMATS[name]
    assert d.is_floating() and d.is_fp8() and not d.is_standard_floating()
    assert tl.dtype(d.name) == d and str(d) == d.name
    assert d in [getattr(tl, n) for n in FORMATS] and [n for n in FORMATS if getattr(tl, n) == d] == [name]
    assert d.name in tl.dtype.FP_TYPES


@tilelab.jit
def to_e4b15_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    y = tl.load(x_ptr + offs).to(tl.float8e4b15)
    tl.store(y_ptr + offs, y.to(tl.float32))


@tilelab.jit
def copy_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))


def test_e4b15_in_a_kernel_is_refused_at_its_line():
    x, y = np.ones(32, np.float32), np.zeros(32, np.float32)
    with pytest.raises(CompilationError) as e:
        to_e4b15_kernel[(1,)](x, y, BLOCK=32)
    assert "float8e4b15" in str(e.value) and "not supported" in str(e.value)
    assert "y = tl.load(x_ptr + offs).to(tl.float8e4b15)" in str(e.value)  # the user's line, with a caret


def test_e4b15_pointer_in_a_signature_is_refused_with_its_argument():
    with pytest.raises(CompilationError, match="argument 'x_ptr': tl.float8e4b15 .* not supported"):
        tilelab.compile(copy_kernel, {"x_ptr": "*fp8e4b15", "y_ptr": "*fp8e4b15"}, {"BLOCK": 32}, target="cpu")


def test_e4b15_reinterpret_is_refused():
    with pytest.raises(TypeError, match="float8e4b15 .* not supported by tilelab: use tl.float8e4nv"):
        tilelab.reinterpret(torch.zeros(8, dtype=torch.int8), tl.float8e4b15)


def test_torch_fnuz_tensors_launch_as_their_format():
    x = torch.tensor([1.0, -2.0, 240.0, 0.0], dtype=torch.float8_e4m3fnuz)
    y = torch.zeros(4, dtype=torch.float8_e5m2fnuz)

    @tilelab.jit
    def widen(x_ptr, y_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(tl.float8e5b16))

    widen[(1,)](x, y, BLOCK=4)
    assert y.float().tolist() == [1.0, -2.0, 256.0, 0.0]  # 240 = 1.875 * 2^7: a tie in e5m2, to even
    assert torch.equal(y.view(torch.uint8), x.float().to(torch.float8_e5m2fnuz).view(torch.uint8))


@pytest.mark.skipif(find_tool("ptxas") is None, reason="ptxas not found")
@pytest.mark.parametrize("arch", ["cuda:sm_80", "cuda:sm_90a"])
def test_fnuz_casts_compile_for_the_gpu(arch):
    """No GPU converts these formats in hardware: the bit arithmetic of ``common/fp8.py``, accepted by ptxas."""
    from tests.kernels.test_integers import fp8_fnuz_kernel

    sig = {"x_ptr": "*fp32", "e4_ptr": "*fp8e4b8", "e5_ptr": "*fp8e5b16", "back_ptr": "*fp32", "n": "i32"}
    ck = tilelab.compile(fp8_fnuz_kernel, sig, {"BLOCK": 512}, target=arch)
    ptx = ck.asm["ptx"]
    assert "cvt.rn.satfinite" not in ptx  # the hardware's e4m3 / e5m2 conversions would saturate, not NaN
    assert ck.metadata["registers"] and not ck.metadata.get("spills")


@tilelab.jit
def fnuz_dot_kernel(a_ptr, b_ptr, c_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    a = tl.load(a_ptr + r[:, None] * B + r[None, :])
    b = tl.load(b_ptr + r[:, None] * B + r[None, :])
    tl.store(c_ptr + r[:, None] * B + r[None, :], tl.dot(a, b))


def test_fnuz_dot_is_refused_with_the_formats_it_takes():
    """No NVIDIA tensor core multiplies the fnuz formats, and tilelab has no upcasting dot for them: said so."""
    sig = {"a_ptr": "*fp8e4b8", "b_ptr": "*fp8e4b8", "c_ptr": "*fp32"}
    with pytest.raises(CompilationError, match="dot does not support fp8e4b8 and fp8e4b8 inputs .*float8e4nv"):
        tilelab.compile(fnuz_dot_kernel, sig, {"B": 16}, target="cpu")
