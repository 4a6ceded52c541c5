"""Addresses given to inline PTX memory instructions are ``noundef``, and never undef (no GPU needed)."""

import re

from llvmlite import ir

import tilelab
import tilelab.language as tl
from tilelab.compiler.backends.cuda.hooks import call_asm
from tilelab.compiler.backends.cuda.kernel import build_llvm_module

I32 = ir.IntType(32)
PTR = ir.PointerType(addrspace=1)


def test_call_asm_marks_pointer_operands_only():
    fn = ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), [I32, PTR, I32]), "f")
    b = ir.IRBuilder(fn.append_basic_block())
    asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), [I32, PTR, I32]), "cp.async.ca.shared.global [$0], [$1], 4, $2;",
                       "r,l,r", True)  # fmt: skip
    call = call_asm(b, asm, list(fn.args))
    text = str(call)
    assert re.search(r"\(i32 %\S+, ptr addrspace\(1\) noundef %\S+, i32 %\S+\)", text), text
    assert text.count("noundef") == 1


def test_negative_call_asm_without_pointers_adds_nothing():
    fn = ir.Function(ir.Module(), ir.FunctionType(I32, [I32]), "f")
    b = ir.IRBuilder(fn.append_basic_block())
    call = call_asm(b, ir.InlineAsm(ir.FunctionType(I32, [I32]), "mov.b32 $0, $1;", "=r,r", False), list(fn.args))
    assert "noundef" not in str(call)


@tilelab.jit
def masked_copy_count(x_ptr, y_ptr, n_ptr, idx_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, x * 2.0, mask=mask)
    slot = tl.atomic_add(n_ptr + offs % 4, 1, mask=mask)  # masked-off lanes' old value becomes an address
    tl.store(idx_ptr + slot, offs, mask=mask)


def _lowered(kernel, sig, consts, num_warps=4):
    ck = tilelab.compile(kernel, sig, consts, target="cuda:sm_90a", num_warps=num_warps, num_stages=1, cache=False,
                         snapshots=False)  # fmt: skip
    return str(build_llvm_module(ck.module, ck.options)[0])


def test_every_global_address_of_inline_ptx_is_noundef_and_none_is_undef():
    text = _lowered(masked_copy_count, {"x_ptr": "*f32", "y_ptr": "*f32", "n_ptr": "*i32", "idx_ptr": "*i32",
                                        "n": "i32"}, {"BLOCK": 256})  # fmt: skip
    calls = [line for line in text.splitlines() if "asm sideeffect" in line and "ptr addrspace(1)" in line]
    assert any("ld.global" in c for c in calls) and any("st.global" in c for c in calls)
    for c in calls:
        args = re.search(r'"\((.*)\)', c).group(1)
        assert all("noundef" in a for a in args.split(",") if a.strip().startswith("ptr")), c
    assert "undef" not in text.replace("noundef", "")  # the masked atomic's lanes hold zero, not undef
