"""``tl.inline_asm_elementwise``: PTX run over a tile's elements on the GPU, values against numpy;
the CPU backend and the interpreter refuse it naming the kernel's line."""

from __future__ import annotations

import numpy as np
import pytest

import tilelab
import tilelab.language as tl
from tests.conftest import DeviceMemory
from tilelab.errors import CompilationError, InterpreterError

gpu = pytest.mark.gpu


@tilelab.jit
def shift_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    y = tl.inline_asm_elementwise("shl.b32 $0, $1, 3;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(y_ptr + offs, y, mask=offs < n)


@tilelab.jit
def bytes_kernel(a_ptr, b_ptr, c_ptr, d_ptr, BLOCK: tl.constexpr):
    """Triton's documented example: four u8 in one register, two results of four each."""
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    c, d = tl.inline_asm_elementwise(
        asm="""
        {
            .reg .b8 tmp<4>;
            mov.b32 {tmp0, tmp1, tmp2, tmp3}, $8;
            cvt.u32.u8 $0, tmp0;
            cvt.u32.u8 $1, tmp1;
            cvt.u32.u8 $2, tmp2;
            cvt.u32.u8 $3, tmp3;
        }
        cvt.rn.f32.s32 $4, $0;
        cvt.rn.f32.s32 $5, $1;
        cvt.rn.f32.s32 $6, $2;
        cvt.rn.f32.s32 $7, $3;
        max.f32 $4, $4, $9;
        max.f32 $5, $5, $10;
        max.f32 $6, $6, $11;
        max.f32 $7, $7, $12;
        """,
        constraints="=r,=r,=r,=r,=r,=r,=r,=r,r,r,r,r,r",
        args=[a, b],
        dtype=(tl.int32, tl.float32),
        is_pure=True,
        pack=4,
    )
    tl.store(c_ptr + offs, c)
    tl.store(d_ptr + offs, d)


@tilelab.jit
def halves_kernel(x_ptr, y_ptr, z_ptr, BLOCK: tl.constexpr):
    """f16 two to a register (``mul.f16x2``, pack 2) and one at a time in 16-bit registers (``=h,h``)."""
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.inline_asm_elementwise("mul.f16x2 $0, $1, $1;", "=r,r", [x], dtype=tl.float16, is_pure=True, pack=2)
    z = tl.inline_asm_elementwise("neg.f16 $0, $1;", "=h,h", [x], dtype=tl.float16, is_pure=True, pack=1)
    tl.store(y_ptr + offs, y)
    tl.store(z_ptr + offs, z)


@tilelab.jit
def broadcast_kernel(x_ptr, s_ptr, y_ptr, ROWS: tl.constexpr, COLS: tl.constexpr):
    """A column and a row broadcast together; a pointer argument read by the asm itself (``l``)."""
    rows = tl.arange(0, ROWS)[:, None]
    cols = tl.arange(0, COLS)[None, :]
    col = tl.load(x_ptr + rows)
    ptrs = s_ptr + cols
    y = tl.inline_asm_elementwise(
        "{ .reg .f32 t; ld.global.f32 t, [$2]; add.f32 $0, $1, t; }", "=f,f,l", [col, ptrs],
        dtype=tl.float32, is_pure=False, pack=1,
    )  # fmt: skip
    tl.store(y_ptr + rows * COLS + cols, y)


@gpu
def test_one_element_an_instance_with_a_masked_tail():
    dev = DeviceMemory("cuda")
    n = 1000
    x = np.random.default_rng(0).integers(-(2**20), 2**20, n).astype(np.int32)
    y = dev.put(np.zeros(n, np.int32))
    shift_kernel[(8,)](dev.put(x), y, n, BLOCK=128, target="cuda")
    np.testing.assert_array_equal(dev.get(y), x << 3)


@gpu
def test_four_bytes_a_register_and_two_results():
    dev = DeviceMemory("cuda")
    rng = np.random.default_rng(1)
    a = rng.integers(0, 256, 512).astype(np.uint8)
    b = (rng.standard_normal(512) * 100).astype(np.float32)
    c, d = dev.put(np.zeros(512, np.int32)), dev.put(np.zeros(512, np.float32))
    bytes_kernel[(1,)](dev.put(a), dev.put(b), c, d, BLOCK=512, target="cuda")
    np.testing.assert_array_equal(dev.get(c), a.astype(np.int32))
    np.testing.assert_array_equal(dev.get(d), np.maximum(a.astype(np.float32), b))


@gpu
def test_halves_packed_two_to_a_register_and_one_at_a_time():
    dev = DeviceMemory("cuda")
    x = np.random.default_rng(2).standard_normal(256).astype(np.float16)
    y, z = dev.put(np.zeros(256, np.float16)), dev.put(np.zeros(256, np.float16))
    halves_kernel[(1,)](dev.put(x), y, z, BLOCK=256, target="cuda")
    np.testing.assert_array_equal(dev.get(y), x * x)
    np.testing.assert_array_equal(dev.get(z), -x)


@gpu
def test_broadcast_arguments_and_a_pointer_operand():
    dev = DeviceMemory("cuda")
    rng = np.random.default_rng(3)
    x, s = rng.standard_normal(16).astype(np.float32), rng.standard_normal(32).astype(np.float32)
    y = dev.put(np.zeros((16, 32), np.float32))
    broadcast_kernel[(1,)](dev.put(x), dev.put(s), y, ROWS=16, COLS=32, target="cuda")
    np.testing.assert_array_equal(dev.get(y), x[:, None] + s[None, :])


def test_the_cpu_and_the_interpreter_name_the_line():
    x, y = np.arange(16, dtype=np.int32), np.zeros(16, np.int32)
    with pytest.raises(CompilationError, match=r"test_inline_asm.py:\d+: inline_asm_elementwise runs the GPU"):
        shift_kernel[(1,)](x, y, 16, BLOCK=16, target="cpu")
    for target in ("interpret", "cuda-ir"):
        with pytest.raises(InterpreterError, match=r"test_inline_asm.py:\d+: inline_asm_elementwise runs the GPU"):
            shift_kernel[(1,)](x, y, 16, BLOCK=16, target=target)
