"""The instruction mix of memory-bound kernels on sm_90a, read from PTX and ptxas (no GPU needed).

These pin the fast paths that keep softmax, attention and dropout within reach of
Triton: f32/f16 ``exp`` on ``ex2.approx`` after one multiply by log2(e), f32 ``/`` as
``div.full.f32``, 128-bit global accesses and few registers (full occupancy).
"""

import re

import llvmlite.binding as llvm
import numpy as np
import pytest

import tilelab
import tilelab.language as tl
from tilelab.compiler.backends.cuda import find_tool
from tilelab.compiler.backends.cuda.kernel import _libdevice_subset
from tilelab.compiler.backends.cuda.math import libdevice_path

HAS_PTXAS = find_tool("ptxas") is not None
ARCH = "cuda:sm_90a"
SOFTMAX_SIG = {"x_ptr": "*fp32", "out_ptr": "*fp32", "stride": "i32", "n_cols": "i32"}
ALIGNED = {"stride": 16, "n_cols": 16}


@tilelab.jit
def softmax_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=mask)


@tilelab.jit
def exp_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.exp(tl.load(x_ptr + offs)))


def compile_softmax(**kw):
    return tilelab.compile(
        softmax_kernel, SOFTMAX_SIG, {"BLOCK": 4096}, target=ARCH, num_warps=8, divisibility=ALIGNED, cache=False, **kw
    )


def test_softmax_exp_is_one_multiply_and_one_ex2_per_element():
    ptx = compile_softmax().asm["ptx"]
    assert ptx.count("ex2.approx.f32") == 16  # 4096 columns / 256 threads
    assert "__nv_expf" not in ptx and "cvt.sat.f32.f32" not in ptx  # no libdevice range reduction


def test_softmax_divides_with_div_full_and_moves_128_bits():
    ptx = compile_softmax().asm["ptx"]
    assert ptx.count("div.full.f32") == 16 and "div.rn.f32" not in ptx
    assert ptx.count("ld.global.v4.b32") == 4 and ptx.count("st.global.v4.b32") == 4
    assert "ld.global.b32" not in ptx and "local" not in ptx
    assert ptx.count("bar.sync") <= 6  # two reductions, each one shared-memory round trip


@pytest.mark.skipif(not HAS_PTXAS, reason="ptxas not found")
def test_softmax_fits_full_occupancy():
    meta = compile_softmax().metadata
    assert meta["spills"] == 0 and 0 < meta["registers"] <= 32  # 8 blocks of 256 threads per SM


@pytest.mark.parametrize("dtype, widen", [("fp32", False), ("fp16", True)])
def test_exp_of_f32_and_f16_uses_ex2(dtype, widen):
    sig = {"x_ptr": f"*{dtype}", "out_ptr": f"*{dtype}"}
    ck = tilelab.compile(exp_kernel, sig, {"BLOCK": 256}, target=ARCH, cache=False)
    ptx = ck.asm["ptx"]
    assert "ex2.approx.f32" in ptx and "__nv_expf" not in ptx
    assert ("cvt.f32.f16" in ptx) == widen


def test_exp_of_f64_keeps_libdevice_precision():
    sig = {"x_ptr": "*fp64", "out_ptr": "*fp64"}
    ck = tilelab.compile(exp_kernel, sig, {"BLOCK": 256}, target=ARCH, cache=False)
    ptx = ck.asm["ptx"]
    assert "ex2.approx.f32" not in ptx and "fma.rn.f64" in ptx  # libdevice's double-precision polynomial


@tilelab.jit
def divide_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr, EXACT: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x, y = tl.load(x_ptr + offs), tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, tl.math.div_rn(x, y) if EXACT else x / y)


@pytest.mark.parametrize("exact", [True, False])
def test_div_rn_stays_correctly_rounded_while_slash_is_fast(exact):
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32"}
    ck = tilelab.compile(divide_kernel, sig, {"BLOCK": 128, "EXACT": exact}, target=ARCH, cache=False)
    ptx = ck.asm["ptx"]
    assert ("div.rn.f32" in ptx) == exact
    assert ("div.full.f32" in ptx) == (not exact)


@tilelab.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, a, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, a * tl.load(x_ptr + offs) + tl.load(y_ptr + offs))


@pytest.mark.parametrize(
    "variable, launch, fusion",
    [(None, None, "1"), ("0", None, "0"), ("1", None, "1"), (None, False, "0"), ("0", True, "1")],
)
def test_fp_fusion_contracts_multiply_add_only_when_on(monkeypatch, variable, launch, fusion):
    """On by default (Triton's ``enable_fp_fusion``); the launch option wins over the variable."""
    if variable is None:
        monkeypatch.delenv("TILELAB_CUDA_FP_FUSION", raising=False)
    else:
        monkeypatch.setenv("TILELAB_CUDA_FP_FUSION", variable)
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "a": "fp32"}
    ck = tilelab.compile(axpy_kernel, sig, {"BLOCK": 512}, target=ARCH, cache=False, enable_fp_fusion=launch)
    ptx = ck.asm["ptx"]
    if fusion == "1":  # 4 floats per thread: one rounding each, as Triton's default enable_fp_fusion
        assert ck.options.fp_fusion and ptx.count("fma.rn.f32") == 4 and "mul.rn.f32" not in ptx
    else:  # rounded twice, as the interpreter does: .rn keeps ptxas from fusing them
        assert ptx.count("mul.rn.f32") == 4 and ptx.count("add.rn.f32") == 4 and "fma" not in ptx


def rounded_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.sqrt_rn(x))
    tl.store(out_ptr + BLOCK + offs, tl.fdiv(x, x + 1, ieee_rounding=True))
    tl.store(out_ptr + 2 * BLOCK + offs, tl.math.div_rn(x, x + 3))


def test_correctly_rounded_sqrt_and_division_stay_rounded():
    """``sqrt_rn`` was libdevice's ``__nv_sqrtf``, whose ``__CUDA_PREC_SQRT`` query LLVM folds to 0:
    ``sqrt.approx.f32``; ``fdiv(..., ieee_rounding=True)`` ignored the flag and took ``div.full.f32``."""
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32"}
    ptx = tilelab.compile(rounded_kernel, sig, {"BLOCK": 32}, target=ARCH, num_warps=1, cache=False).asm["ptx"]
    assert ptx.count("sqrt.rn.f32") == 1 and "sqrt.approx" not in ptx
    assert ptx.count("div.rn.f32") == 2 and "div.full" not in ptx


@pytest.mark.skipif(libdevice_path() is None, reason="libdevice not found")
def test_only_the_called_libdevice_functions_are_linked():
    """The kernel links the libdevice functions it calls (and what they call), cut once per process."""
    subset = llvm.parse_bitcode(_libdevice_subset(libdevice_path(), frozenset({"__nv_logf"}), "sm_90a"))
    defined = {f.name for f in subset.functions if not f.is_declaration}
    assert "__nv_logf" in defined and "__nv_sinf" not in defined and len(defined) < 5
    again = _libdevice_subset(libdevice_path(), frozenset({"__nv_logf"}), "sm_90a")
    assert again is _libdevice_subset(libdevice_path(), frozenset({"__nv_logf"}), "sm_90a")  # kept, not cut again


def test_a_launch_turns_fp_fusion_off_with_tritons_option():
    x = np.zeros(512, np.float32)
    for given, fused in ((None, 4), (True, 4), (False, 0)):
        k = axpy_kernel.warmup(x, x, x, 2.0, BLOCK=512, grid=(1,), target=ARCH, enable_fp_fusion=given)
        assert k.options.fp_fusion == bool(fused) and k.asm["ptx"].count("fma.rn.f32") == fused


@tilelab.jit
def exp2_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.math.exp2(tl.load(x_ptr + offs)))


@pytest.mark.skipif(libdevice_path() is None, reason="libdevice not found")
@pytest.mark.parametrize(
    "variable, launch, ftz",
    [(None, None, True), ("0", None, False), ("1", None, True), (None, False, False), ("0", True, True)],
)
def test_reflect_ftz_takes_libdevices_flush_to_zero_path_only_when_on(monkeypatch, variable, launch, ftz):
    """On by default (Triton's ``enable_reflect_ftz``): f32 ``exp2`` is one ``ex2.approx.ftz.f32``.

    Off, libdevice's ``__CUDA_FTZ`` query folds to 0 and ``exp2`` keeps subnormal results: ``ex2.approx.f32``,
    which ptxas wraps in a range test and two multiplies (attention's loop: 192 more instructions).
    """
    if variable is None:
        monkeypatch.delenv("TILELAB_CUDA_REFLECT_FTZ", raising=False)
    else:
        monkeypatch.setenv("TILELAB_CUDA_REFLECT_FTZ", variable)
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32"}
    ck = tilelab.compile(exp2_kernel, sig, {"BLOCK": 128}, target=ARCH, cache=False, enable_reflect_ftz=launch)
    found = set(re.findall(r"ex2\.approx\.[a-z0-9.]+", ck.asm["ptx"]))
    assert ck.options.reflect_ftz is ftz
    assert found == ({"ex2.approx.ftz.f32"} if ftz else {"ex2.approx.f32"})


def test_a_launch_turns_reflect_ftz_off_with_tritons_option():
    x = np.zeros(128, np.float32)
    for given, ftz in ((None, True), (True, True), (False, False)):
        k = exp2_kernel.warmup(x, x, BLOCK=128, grid=(1,), target=ARCH, enable_reflect_ftz=given)
        assert k.options.reflect_ftz is ftz


@pytest.mark.gpu
def test_exp2_flushes_subnormal_results_unless_told_not_to():
    """Triton's default on the GPU: ``exp2(-130)`` is 0 (flushed); ``enable_reflect_ftz=False`` gives ``2**-130``."""
    torch = pytest.importorskip("torch")
    x = torch.tensor([-130.0, -1.0, 3.0] + [0.0] * 125, device="cuda")
    for ftz, want in ((None, 0.0), (False, 2.0**-130)):
        out = torch.empty_like(x)
        exp2_kernel[(1,)](x, out, BLOCK=128, enable_reflect_ftz=ftz)
        assert out[0].item() == want and out[1].item() == 0.5 and out[2].item() == 8.0
