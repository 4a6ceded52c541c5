"""16-bit elements loaded as 32-bit words stay those words where they are stored or fed whole (PTX, no GPU).

A masked vector load gives each thread words of two f16 / bf16 elements; the lowering splits a word into
its halves (the upper one through an opaque shift, ``hooks.shifted_half``). Where a pair of halves is
packed again -- a store to global or shared memory, ``stmatrix``, a wgmma or mma operand, ``mul.bf16x2`` --
``hooks.pair_word`` hands back the loaded word: no ``prmt`` re-packing it, no shift left over.
"""

import re

import pytest
from llvmlite import ir

import tilelab
import tilelab.language as tl
from tilelab.compiler.backends.cuda.lower_memory import constant_bits, pack


@tilelab.jit
def copy_rows(x, y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + offs, tl.load(x + offs, mask=offs < n), mask=offs < n)


@tilelab.jit
def scale_bf16(x, w, y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + tl.program_id(0) * n + offs, mask=offs < n, other=0.0)
    tl.store(y + tl.program_id(0) * n + offs, v * tl.load(w + offs, mask=offs < n, other=0.0), mask=offs < n)


@tilelab.jit
def loop_invariant_operand(k, q, out, n, stride, BM: tl.constexpr, D: tl.constexpr):
    """``k`` is loaded once, into registers, and stored to shared memory for every dot of the loop."""
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, D)
    kt = tl.load(k + rows[:, None] * stride + cols[None, :], mask=rows[:, None] < n, other=0.0)
    acc = tl.zeros((BM, BM), tl.float32)
    for start in range(0, n, BM):
        qr = start + tl.arange(0, BM)
        qt = tl.load(q + qr[None, :] * stride + cols[:, None], mask=qr[None, :] < n, other=0.0)
        acc += tl.dot(kt, qt)
    tl.store(out + rows[:, None] * BM + tl.arange(0, BM)[None, :], acc)


def _ptx(kernel, signature, constants, arch, **geometry):
    aligned = {name: 16 for name in signature}  # 16-byte pointers, sizes and strides multiples of 16
    ck = tilelab.compile(kernel, signature, constants, target=f"cuda:{arch}", divisibility=aligned, cache=False,
                         snapshots=False, **geometry)  # fmt: skip
    return ck.asm["ptx"]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("elem", ["f16", "bf16"])
def test_a_copy_stores_the_words_it_loaded(arch, elem):
    ptx = _ptx(copy_rows, {"x": f"*{elem}", "y": f"*{elem}", "n": "i32"}, {"BLOCK": 1024}, arch)
    assert "ld.global.v4.b32" in ptx and "st.global.v4.b32" in ptx
    assert "prmt" not in ptx and "shr.u32" not in ptx


def test_bf16_pairs_multiply_as_the_loaded_words():
    ptx = _ptx(scale_bf16, {"x": "*bf16", "w": "*bf16", "y": "*bf16", "n": "i32"}, {"BLOCK": 1024}, "sm_90a")
    assert "mul.rn.bf16x2" in ptx
    assert "prmt" not in ptx


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_loaded_dot_operand_goes_to_shared_memory_as_loaded(arch):
    sig = {"k": "*f16", "q": "*f16", "out": "*f32", "n": "i32", "stride": "i32"}
    ptx = _ptx(loop_invariant_operand, sig, {"BM": 64, "D": 64}, arch, num_warps=4, num_stages=1)
    assert "st.shared.v4.b32" in ptx or "stmatrix" in ptx
    assert "prmt" not in ptx


@tilelab.jit
def masked_with_other(x, y, n, OTHER: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y + offs, tl.load(x + offs, mask=offs < n, other=OTHER))


@pytest.mark.parametrize(
    "dtype, other, word",
    [("fp16", 1.5, 0x3E003E00), ("bf16", -2.0, 0xC000C000), ("fp32", 0.1, 0x3DCCCCCD), ("i16", -3, 0xFFFDFFFD)],
)
def test_a_constant_other_is_one_packed_word(dtype, other, word):
    """``other`` is packed at compile time: the word each masked-off register keeps, as PTX spells it (signed)."""
    sig = {"x": f"*{dtype}", "y": f"*{dtype}", "n": "i32"}
    consts = {"OTHER": other, "BLOCK": 512}
    ck = tilelab.compile(masked_with_other, sig, consts, target="cuda:sm_90a", divisibility={"n": 16}, cache=False)
    signed = word - (1 << 32) if word >= 1 << 31 else word
    assert re.search(rf"mov\.b32\s+%r\d+, {signed};", ck.asm["ptx"])
    assert re.search(r"ld\.global\.v[24]\.b32", ck.asm["ptx"])  # words, not halves


def test_constant_bits_of_each_kind():
    """The bits ``to_bits`` would give, as constants: floats by their IEEE encoding, ints masked to their width."""
    half, f32, f64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
    assert constant_bits(ir.Constant(half, 1.0), 16).constant == 0x3C00
    assert constant_bits(ir.Constant(f32, -2.0), 32).constant == 0xC0000000
    assert constant_bits(ir.Constant(f64, float("inf")), 64).constant == 0x7FF0000000000000
    assert constant_bits(ir.Constant(ir.IntType(8), -1), 8).constant == 0xFF
    assert constant_bits(ir.Constant(ir.IntType(1), True), 8).constant == 1
    assert constant_bits(ir.Constant(half, None), 16).constant == 0
    fn = ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), [half]), "f")
    assert constant_bits(fn.args[0], 16) is None
    b = ir.IRBuilder(fn.append_basic_block())
    words = pack(b, [ir.Constant(ir.IntType(16), 0x3C00), ir.Constant(ir.IntType(16), 0x4000)], 16, 32)
    assert [w.constant for w in words] == [0x40003C00] and not b.block.instructions
