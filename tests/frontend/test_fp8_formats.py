"""Triton's other fp8 dtypes: AMD's two fnuz formats, and float8e4b15, which numpy has no type for.

``tl.float8e4b8`` / ``tl.float8e5b16`` are ``float8_e4m3fnuz`` / ``float8_e5m2fnuz`` (values checked per backend in
``tests/kernels/test_integers.py`` and ``tests/cpu/test_elementwise.py``). ``tl.float8e4b15`` runs on the compiled
targets (its host memory is raw bytes, ``reinterpret``-ed as Triton code does) and the interpreter refuses it.
"""

import ml_dtypes
import numpy as np
import pytest
import torch

import tilelab
import tilelab.language as tl
from tilelab.compiler.backends.cuda import find_tool
from tilelab.errors import CompilationError, InterpreterError

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


def e4b15_value(code: int) -> float:
    """Triton's float8e4b15 (its tests' reference): sign, 4 exponent bits of bias 15, 3 mantissa bits; no
    infinity, the codes x1111111 NaN."""
    sign = -1.0 if code & 0x80 else 1.0
    e, m = (code >> 3) & 0xF, code & 7
    if code & 0x7F == 0x7F:
        return float("nan")
    return sign * (2.0 ** (1 - 15) * m / 8 if e == 0 else 2.0 ** (e - 15) * (1 + m / 8))


def e4b15_nearest(x: float) -> int:
    """The code nearest ``x`` (ties to the even code), NaN past the largest finite, 1.75 -- by search."""
    sign = 0x80 if np.signbit(x) else 0
    if x != x or abs(x) > 1.8125:  # 1.8125, halfway to 1.875 (a NaN code), is a tie: to 1.75, the even code
        return 0x7F | sign
    return min((abs(e4b15_value(c) - abs(x)), c & 1, c) for c in range(0x7F))[2] | sign


@tilelab.jit
def e4b15_round_trip_kernel(x_ptr, bits_ptr, back_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(x_ptr + offs, mask=mask).to(tl.float8e4b15)
    tl.store(bits_ptr + offs, y, mask=mask)
    tl.store(back_ptr + offs, tl.abs(y).to(tl.float32), mask=mask)


@tilelab.jit
def copy_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))


def test_e4b15_rounds_and_widens_like_triton_on_the_cpu():
    """Every code decodes; random values (subnormals, ties, past the largest) round to the nearest code."""
    rng = np.random.default_rng(15)
    x = (rng.standard_normal(3000) * rng.choice([2.0**-16, 2.0**-9, 0.1, 1.0], 3000)).astype(np.float32)
    x[:10] = [1.75, 1.8125, 1.8, -1.9, 0.0, -0.0, 2.0**-17, 3 * 2.0**-18, np.nan, -np.inf]
    bits = torch.zeros(x.size, dtype=torch.int8)
    back = np.zeros(x.size, np.float32)
    e4b15_round_trip_kernel[(3,)](x, tilelab.reinterpret(bits, tl.float8e4b15), back, x.size, BLOCK=1024)
    got = bits.numpy().view(np.uint8)
    want = np.array([e4b15_nearest(float(v)) for v in x], np.uint8)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(back, np.abs([e4b15_value(int(c)) for c in want]).astype(np.float32))


def test_e4b15_bits_travel_as_the_wrapper_says():
    """A torch int8 tensor reinterpreted as float8e4b15 reaches the kernel as *fp8e4b15; its codes are kept."""
    codes = torch.arange(-128, 128, dtype=torch.int8)
    out = torch.zeros(256, dtype=torch.int8)
    copy_kernel[(1,)](tilelab.reinterpret(codes, tl.float8e4b15), tilelab.reinterpret(out, tl.float8e4b15), BLOCK=256)
    assert torch.equal(out, codes)
    ck = tilelab.compile(copy_kernel, {"x_ptr": "*fp8e4b15", "y_ptr": "*fp8e4b15"}, {"BLOCK": 256}, target="cpu")
    assert "!ptr<fp8e4b15>" in ck.asm["tile"]


def test_e4b15_in_the_interpreter_is_refused_by_name():
    x, y = np.ones(32, np.float32), np.zeros(32, np.float32)
    with pytest.raises(InterpreterError, match="tl.float8e4b15 has no numpy type: the interpreter cannot run it"):
        e4b15_round_trip_kernel[(1,)](x, tilelab.reinterpret(np.zeros(32, np.int8), tl.float8e4b15), y, 32, BLOCK=32,
                                      target="interpret")  # fmt: skip


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
    """No GPU converts these formats in hardware: the bit arithmetic of ``common/fp8.py``, accepted by ptxas
    (values on a GPU: ``tests/kernels/test_integers.py``)."""
    from tests.kernels.test_integers import float_casts_kernel

    sig = {"x_ptr": "*fp32", "a_ptr": "*fp8e4b8", "b_ptr": "*fp8e5b16", "back_ptr": "*fp32", "n": "i32"}
    fnuz = {"BLOCK": 512, "A": tl.float8e4b8, "B": tl.float8e5b16}
    e4b15 = {"x_ptr": "*fp32", "bits_ptr": "*fp8e4b15", "back_ptr": "*fp32", "n": "i32"}
    cases = ((float_casts_kernel, sig, fnuz), (e4b15_round_trip_kernel, e4b15, {"BLOCK": 512}))
    for kernel, signature, consts in cases:
        ck = tilelab.compile(kernel, signature, consts, target=arch)
        assert "cvt.rn.satfinite" not in ck.asm["ptx"]  # the hardware's e4m3 / e5m2 conversions saturate
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


def test_decode_tables_match_the_references():
    from tilelab.compiler.ir.types import SCALARS

    codes = np.arange(256, dtype=np.uint8)
    e4b15 = SCALARS["fp8e4b15"].decode(codes)
    np.testing.assert_array_equal(e4b15, np.array([e4b15_value(int(c)) for c in codes], np.float32))
    for name, ml in (("fp8e4nv", "float8_e4m3fn"), ("fp8e5", "float8_e5m2"), ("fp8e4b8", "float8_e4m3fnuz")):
        want = codes.view(getattr(ml_dtypes, ml)).astype(np.float32)
        np.testing.assert_array_equal(SCALARS[name].decode(codes), want)


@tilelab.jit
def print_e4b15_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.device_print("v", tl.load(x_ptr + tl.arange(0, BLOCK)))


def test_device_print_shows_e4b15_values(capfd):
    codes = torch.tensor([0x78, 0x38, -0x08], dtype=torch.int8)  # 1.0, 2^-8, -1.0
    padded = torch.cat([codes, torch.zeros(1, dtype=torch.int8)])
    print_e4b15_kernel[(1,)](tilelab.reinterpret(padded, tl.float8e4b15), BLOCK=4)
    out = capfd.readouterr().out
    assert "idx (0) v: 1" in out and "idx (1) v: 0.0039062" in out and "idx (2) v: -1" in out, out
