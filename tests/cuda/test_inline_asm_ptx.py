"""``tl.inline_asm_elementwise`` on sm_90a, read from PTX (no GPU): one instance per ``pack`` registers,
narrow elements packed four or two to a 32-bit register, impure assembly kept; bad uses named."""

from __future__ import annotations

import re

import pytest

import tilelab
import tilelab.language as tl
from tests.kernels.test_inline_asm import bytes_kernel, halves_kernel, shift_kernel
from tilelab.errors import CompilationError

ARCH = "cuda:sm_90a"


def ptx_of(kernel, sig, consts, num_warps=4):
    ck = tilelab.compile(kernel, sig, consts, target=ARCH, num_warps=num_warps, cache=False, snapshots=False)
    return ck.asm["ptx"]  # ptxas, when found, has assembled it too


def count(ptx: str, instruction: str) -> int:
    return len(re.findall(re.escape(instruction) + r"\s", ptx))


def test_narrow_elements_go_packed_into_32_bit_registers():
    sig = {"a_ptr": "*u8", "b_ptr": "*fp32", "c_ptr": "*i32", "d_ptr": "*fp32"}
    ptx = ptx_of(bytes_kernel, sig, {"BLOCK": 512})
    # 512 elements over 128 threads: 4 a thread, one instance of pack 4 whose 4 bytes came in one register
    assert count(ptx, "cvt.u32.u8") == 4 and count(ptx, "max.f32") == 4
    assert re.search(r"mov\.b32 \{tmp0, tmp1, tmp2, tmp3\}, %r\d+;", ptx)


def test_halves_two_to_a_register_or_one_in_a_16_bit_one():
    ptx = ptx_of(halves_kernel, {"x_ptr": "*fp16", "y_ptr": "*fp16", "z_ptr": "*fp16"}, {"BLOCK": 1024})
    # 8 halves a thread: 4 instances of the packed asm, 8 of the one-element one
    assert count(ptx, "mul.f16x2") == 4 and count(ptx, "neg.f16") == 8


def test_one_instance_per_register():
    ptx = ptx_of(shift_kernel, {"x_ptr": "*i32", "y_ptr": "*i32", "n": "i32"}, {"BLOCK": 512})
    assert len(re.findall(r"shl\.b32 \s*%r\d+, %r\d+, 3;", ptx)) == 4


@tilelab.jit
def unused_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.inline_asm_elementwise("popc.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
    tl.inline_asm_elementwise("brev.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=False, pack=1)


def test_impure_assembly_stays_where_its_result_is_unused():
    ptx = ptx_of(unused_kernel, {"x_ptr": "*i32"}, {"BLOCK": 128})
    assert "brev.b32" in ptx and "popc.b32" not in ptx


@tilelab.jit
def bad_kernel(x_ptr, KIND: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    if KIND == 0:
        tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x > 0], dtype=tl.int32, is_pure=True, pack=1)
    elif KIND == 1:
        tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=0)
    elif KIND == 3:
        h = x.to(tl.float16)
        tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [h], dtype=tl.float16, is_pure=True, pack=3)
    else:
        tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=(), is_pure=True, pack=1)


@pytest.mark.parametrize(
    "kind, message",
    [(0, "no bool tensors"), (1, "pack must be at least 1"), (2, "at least one result"), (3, "multiple of 2")],
)
def test_bad_uses_name_the_line(kind, message):
    with pytest.raises(CompilationError, match=rf"test_inline_asm_ptx.py:\d+: .*{message}"):
        ptx_of(bad_kernel, {"x_ptr": "*i32"}, {"KIND": kind})
