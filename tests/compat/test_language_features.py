"""Language features Triton kernel libraries lean on, each checked by values against torch.

Import paths (``tl.extra.cuda.libdevice``), ``tl.constexpr`` arithmetic in launch code and in
kernels, ``triton.next_power_of_2``, ``@triton.heuristics``, ``kernel.fn`` / ``kernel.src``,
``num_warps`` up to 32, optional pointers tested with ``is not None``, non-contiguous and offset
tensors, and int64 index arithmetic past 2**31.
"""

from __future__ import annotations

import pytest

import tilelab as triton
import tilelab.language as tl
from tilelab.language.extra import libdevice
from tilelab.language.extra.cuda import libdevice as cuda_libdevice

torch = pytest.importorskip("torch")


@triton.heuristics({"EVEN_N": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def scale_shift(x_ptr, out_ptr, bias_ptr, n, stride, scale, BLOCK: tl.constexpr, EVEN_N: tl.constexpr):
    """``out = tanh(x * scale) (+ bias)`` over a strided 1-d view; ``bias_ptr`` may be None."""
    HALF: tl.constexpr = BLOCK // 2
    offs = tl.program_id(0) * BLOCK + tl.arange(0, 2 * HALF)
    mask = offs < n if not EVEN_N else None
    x = tl.load(x_ptr + offs * stride, mask=mask, other=0.0)
    y = libdevice.tanh(x * scale) if HALF > 0 else x
    if bias_ptr is not None:
        y += tl.load(bias_ptr + offs, mask=mask, other=0.0).cast(tl.float32)
    tl.store(out_ptr + offs, y, mask=mask)


@pytest.mark.parametrize("num_warps", [1, 4, 32])
@pytest.mark.parametrize("with_bias", [False, True])
def test_optional_pointer_heuristics_and_strided_input(target, device, gen, num_warps, with_bias):
    n = 300
    base = torch.randn(3 * n + 7, generator=gen).to(device)
    x = base[7::3]  # storage offset 7, stride 3
    assert x.storage_offset() == 7 and x.stride(0) == 3
    bias = torch.randn(n, generator=gen).to(device) if with_bias else None
    out = torch.empty(n, device=device)
    block = triton.next_power_of_2(n) // 4  # constexpr arithmetic in launch code
    grid = (triton.cdiv(n, block),)
    scale_shift[grid](x, out, bias, n, x.stride(0), 0.5, BLOCK=block, num_warps=num_warps, target=target)
    want = torch.tanh(x.cpu() * 0.5) + (bias.cpu() if with_bias else 0)
    torch.testing.assert_close(out.cpu(), want, rtol=1e-5, atol=1e-6)


def test_kernel_fn_and_src_expose_the_python_function():
    assert scale_shift.fn.__name__ == "scale_shift"  # heuristics wrap the JIT function
    jit_fn = scale_shift.fn
    assert "def scale_shift" in jit_fn.src and callable(jit_fn.fn)
    assert cuda_libdevice.tanh is libdevice.tanh is tl.extra.cuda.libdevice.tanh


def test_libdevice_imports_as_a_module_too():
    """``import triton.language.extra.cuda.libdevice as libdevice``, as some libraries write it."""
    import importlib

    module = importlib.import_module("tilelab.language.extra.cuda.libdevice")
    assert module.tanh is libdevice.tanh and "rsqrt" in module.__all__


@triton.jit
def transpose_add(x_ptr, y_ptr, out_ptr, M, N, sxm, sxn, sym, syn, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)[:, None]
    rn = tl.arange(0, BN)[None, :]
    mask = (rm < M) & (rn < N)
    x = tl.load(x_ptr + rm * sxm + rn * sxn, mask=mask)
    y = tl.load(y_ptr + rm * sym + rn * syn, mask=mask)
    tl.store(out_ptr + rm * N + rn, x + y, mask=mask)


def test_non_contiguous_strides(target, device, gen):
    a = torch.randn(24, 40, generator=gen).to(device)
    x = a.t()[3:, :]  # [37, 24], strides (1, 40), storage offset 3
    y = torch.randn(37, 48, generator=gen).to(device)[:, ::2]  # [37, 24], strides (48, 2)
    out = torch.empty(37, 24, device=device)
    transpose_add[(1,)](x, y, out, 37, 24, *x.stride(), *y.stride(), BM=64, BN=32, target=target)
    torch.testing.assert_close(out.cpu(), (x + y).cpu())


@triton.jit
def wide_index(out_ptr, row_stride, row, BLOCK: tl.constexpr):
    """Index arithmetic in int64 past 2**31: ``row * row_stride`` overflows int32."""
    offs = tl.arange(0, BLOCK)
    flat = row.to(tl.int64) * row_stride + offs
    tl.store(out_ptr + offs, flat % 1000003)
    base = out_ptr + flat  # a pointer far past the buffer, brought back before use
    tl.store(base - flat + BLOCK + offs, (flat >> 31).to(tl.int64))


def test_int64_indices_past_2_31(target, device):
    row, row_stride, block = 70_000, 65_536, 16
    out = torch.zeros(2 * block, dtype=torch.int64, device=device)
    wide_index[(1,)](out, row_stride, row, BLOCK=block, target=target)
    flat = torch.arange(block, dtype=torch.int64) + row * row_stride
    assert int(flat[0]) > 2**31
    torch.testing.assert_close(out[:block].cpu(), flat % 1000003)
    torch.testing.assert_close(out[block:].cpu(), flat >> 31)


@triton.jit
def nested_returns(x_ptr, out_ptr, MODE: tl.constexpr):
    x = tl.load(x_ptr + tl.program_id(0))
    if x > 0:
        if x > 10:
            tl.store(out_ptr + tl.program_id(0), 2)
            return
        else:
            tl.store(out_ptr + tl.program_id(0), 1)
            return
    tl.store(out_ptr + tl.program_id(0), -1 if MODE == 0 else -2)


def test_nested_early_returns(target, device):
    x = torch.tensor([5, -3, 20, 0, 11], dtype=torch.int32, device=device)
    out = torch.zeros(5, dtype=torch.int32, device=device)
    nested_returns[(5,)](x, out, MODE=1, target=target)
    assert out.cpu().tolist() == [1, -2, 2, -2, 2]


def test_triton_errors_are_caught_by_triton_classes(target, device):
    @triton.jit
    def bad(x_ptr):
        tl.store(x_ptr + tl.arange(0, 4), tl.expand_dims(tl.arange(0, 4), 3))

    x = torch.zeros(4, device=device)
    with pytest.raises(triton.CompilationError) as info:
        bad[(1,)](x, target=target)
    assert isinstance(info.value, triton.TritonError)
    assert "invalid axis 3" in str(info.value.__cause__)
    oor = triton.OutOfResources(262144, 232448, "shared memory")
    assert isinstance(oor, triton.TritonError) and oor.required == 262144 and "shared memory" in str(oor)
