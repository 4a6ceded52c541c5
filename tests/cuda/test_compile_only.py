"""Compiling for the GPU with no GPU: kernels -> PTX (llvmlite) -> cubin (ptxas, where found).

These run in CI: they check the code the CUDA backend emits (vector widths, shuffles,
shared memory, no spills) and the launch errors that need no device.
"""

import numpy as np
import pytest

import tilelab
import tilelab.language as tl
from tilelab.compiler.backends.cuda import find_tool
from tilelab.compiler.interpreter.errors import KernelRuntimeError

HAS_PTXAS = find_tool("ptxas") is not None
ARCH = "cuda:sm_90a"


@tilelab.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


@tilelab.jit
def softmax_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=mask)


@tilelab.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


@tilelab.jit
def transpose_kernel(x_ptr, out_ptr, N: tl.constexpr, B: tl.constexpr):
    rows = tl.program_id(0) * B + tl.arange(0, B)
    cols = tl.program_id(1) * B + tl.arange(0, B)
    tile = tl.load(x_ptr + rows[:, None] * N + cols[None, :])
    tl.store(out_ptr + cols[:, None] * N + rows[None, :], tl.trans(tile))


@tilelab.jit
def cumsum_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), axis=0))


@tilelab.jit
def histogram_kernel(x_ptr, hist_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.atomic_add(hist_ptr + tl.load(x_ptr + offs, mask=mask, other=0), 1, mask=mask)


@tilelab.jit
def dropout_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    keep = tl.rand(seed, offs) > p
    tl.store(out_ptr + offs, tl.where(keep, x / (1 - p), 0.0), mask=mask)


def compile_cuda(kernel, signature, constants, **kw):
    return tilelab.compile(kernel, signature=signature, constants=constants, target=ARCH, cache=False, **kw)


DROPOUT_SIG = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "p": "fp32", "seed": "i32"}
ADD_SIG = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32"}


def test_vector_add_moves_128_bits_per_thread():
    ck = compile_cuda(add_kernel, ADD_SIG, {"BLOCK": 1024}, divisibility={"x": 16, "y": 16, "out": 16, "n": 16})
    ptx = ck.asm["ptx"]
    assert ".entry add_kernel" in ptx and ".maxntid 128" in ptx
    assert ptx.count("ld.global.v4.b32") == 4 and ptx.count("st.global.v4.b32") == 2
    assert "ptr addrspace(1)" in ck.asm["llir"]


def test_the_llvm_ir_is_what_o3_leaves():
    """Not the code generator's rewrite of it: its loop strength reduction names the values it makes ``lsr.*``."""
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K": "i32"}
    ck = compile_cuda(matmul_kernel, sig, {"BM": 64, "BN": 64, "BK": 32}, divisibility=dict.fromkeys(sig, 16))
    assert "for.body" in ck.asm["llir"] and "lsr." not in ck.asm["llir"]


def test_vector_add_without_alignment_falls_back_to_scalar_accesses():
    ck = compile_cuda(add_kernel, ADD_SIG, {"BLOCK": 1024}, divisibility={"x": 16, "y": 16, "out": 16, "n": 1})
    assert "ld.global.v4" not in ck.asm["ptx"] and "ld.global.b32" in ck.asm["ptx"]


def test_f16_add_packs_eight_halves_per_access():
    sig = {"x": "*fp16", "y": "*fp16", "out": "*fp16", "n": "i32"}
    ck = compile_cuda(add_kernel, sig, {"BLOCK": 4096}, divisibility={"x": 16, "y": 16, "out": 16, "n": 16})
    assert "ld.global.v4.b32" in ck.asm["ptx"]


@pytest.mark.skipif(not HAS_PTXAS, reason="ptxas not found")
def test_vector_add_assembles_without_spills():
    ck = compile_cuda(add_kernel, ADD_SIG, {"BLOCK": 1024})
    assert ck.metadata["registers"] > 0 and ck.metadata["spills"] == 0


@pytest.mark.skipif(not HAS_PTXAS or find_tool("nvdisasm") is None, reason="ptxas or nvdisasm not found")
def test_sass_is_disassembled_on_first_access_and_after_a_cache_reload(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELAB_CACHE_DIR", str(tmp_path))
    ck = tilelab.compile(add_kernel, signature=ADD_SIG, constants={"BLOCK": 256}, target=ARCH, num_warps=2)
    assert "sass" in ck.asm and not ck.asm.is_ready("sass")  # a launch never pays for nvdisasm
    assert "LDG.E" in ck.asm["sass"] and ck.asm.is_ready("sass")
    again = tilelab.compile(add_kernel, signature=ADD_SIG, constants={"BLOCK": 256}, target=ARCH, num_warps=2)
    assert again.from_cache
    assert "LDG.E" in again.asm["sass"]


def test_softmax_reduces_with_shuffles_then_shared_memory():
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "stride": "i32", "n_cols": "i32"}
    ck = compile_cuda(softmax_kernel, sig, {"BLOCK": 1024})
    ptx = ck.asm["ptx"]
    assert ptx.count("shfl.sync.bfly.b32") == 14  # two reductions: 5 lane bits, then the 4 warps over 2 lane bits
    assert "bar.sync" in ptx and ck.metadata["shared"] == 16  # 4 warps x one f32
    assert "@" in ptx  # masked loads are predicated


def test_softmax_with_one_warp_needs_no_shared_memory():
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "stride": "i32", "n_cols": "i32"}
    ck = compile_cuda(softmax_kernel, sig, {"BLOCK": 128}, num_warps=1)
    if ck.metadata["num_warps"] != 1:
        pytest.skip("the runtime does not hand num_warps to the GPU passes yet")
    assert ck.metadata["shared"] == 0 and "bar.sync" not in ck.asm["ptx"]


@pytest.mark.skipif(not HAS_PTXAS, reason="ptxas not found")
@pytest.mark.parametrize(
    "dtype, instruction",
    [("fp32", "mma.sync.aligned.m16n8k8.row.col.f32.tf32"), ("fp16", "mma.sync"), ("bf16", "mma.sync")],
)
def test_matmul_uses_tensor_cores(dtype, instruction):
    """16-bit inputs, and f32 ones in tf32 (``tl.dot``'s default ``input_precision``)."""
    sig = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": "*fp32", "K": "i32"}
    ck = compile_cuda(matmul_kernel, sig, {"BM": 32, "BN": 32, "BK": 32})
    assert instruction in ck.asm["ptx"] and ck.metadata["spills"] == 0


def test_mma_accumulator_stays_in_its_layout_across_the_loop(monkeypatch):
    monkeypatch.setenv("TILELAB_CUDA_WGMMA", "0")  # the mma.sync path (Hopper's default is wgmma)
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K": "i32"}
    ck = compile_cuda(matmul_kernel, sig, {"BM": 64, "BN": 64, "BK": 32})
    loop = next(op for op in ck.module.walk() if op.name == "scf.for")
    assert loop.results[0].type.layout.params["kind"] == "mma"
    assert ck.asm["ptx"].count("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") == 2 * 2 * 2 * 2


@pytest.mark.skipif(not HAS_PTXAS, reason="ptxas not found")
@pytest.mark.parametrize(
    "kernel, sig, constants",
    [
        (transpose_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"N": 1024, "B": 32}),
        (cumsum_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"BLOCK": 256}),
        (histogram_kernel, {"x_ptr": "*i32", "hist_ptr": "*i32", "n": "i32"}, {"BLOCK": 256}),
        (dropout_kernel, DROPOUT_SIG, {"BLOCK": 512}),
    ],
    ids=["transpose", "cumsum", "atomics", "dropout"],
)
def test_kernels_assemble(kernel, sig, constants):
    ck = compile_cuda(kernel, sig, constants)
    assert ck.metadata["registers"] and ck.artifact.blobs.get("cubin", b"").startswith(b"\x7fELF")


def test_atomics_are_issued_once_per_element():
    sig = {"x_ptr": "*i32", "hist_ptr": "*i32", "n": "i32"}
    ck = compile_cuda(histogram_kernel, sig, {"BLOCK": 64})  # 64 elements over 128 threads: copies
    # one predicated instruction for the thread's one element, in Triton's default ordering and scope
    assert ck.asm["ptx"].count("atom.acq_rel.gpu.global.add.u32") == 1


def test_the_final_ir_with_layouts_parses_back():
    from tilelab.compiler.ir.parser import parse_module
    from tilelab.compiler.ir.printer import print_module

    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32"}
    ck = compile_cuda(transpose_kernel, sig, {"N": 1024, "B": 32})
    text = print_module(ck.module)
    assert "#blocked<" in text and print_module(parse_module(text)) == text


# ---------------------------------------------------------------- launch errors (no device needed)


def _launcher():
    return compile_cuda(add_kernel, ADD_SIG, {"BLOCK": 128}).launcher


def test_launch_rejects_a_non_array_pointer_argument():
    with pytest.raises(KernelRuntimeError, match="argument 'x': a pointer parameter needs a GPU array"):
        _launcher()((1,), ["oops", np.zeros(4, np.float32), np.zeros(4, np.float32), 4], False)


def test_launch_rejects_a_wrong_argument_count():
    with pytest.raises(KernelRuntimeError, match=r"takes 4 arguments \(x, y, out, n\), got 2"):
        _launcher()((1,), [1, 2], False)


def test_launch_rejects_the_sanitizer():
    with pytest.raises(KernelRuntimeError, match="the sanitizer runs on the interpreter"):
        _launcher()((1,), [], True)


@tilelab.jit
def debug_kernel(x, BLOCK: tl.constexpr):
    v = tl.load(x + tl.arange(0, BLOCK))
    tl.device_print("v", v)
    tl.device_assert(v < 100, "too big")


@pytest.mark.skipif(not HAS_PTXAS, reason="ptxas not found")
def test_print_and_assert_call_the_cuda_runtime():
    ck = compile_cuda(debug_kernel, {"x": "*fp32"}, {"BLOCK": 64}, debug=True)
    ptx = ck.asm["ptx"]
    assert "call.uni" in ptx or "call" in ptx
    assert "vprintf" in ptx and "__assertfail" in ptx and ck.metadata["registers"]


@tilelab.jit
def column_store_kernel(x_ptr, out_ptr, N: tl.constexpr, B: tl.constexpr):
    rows = tl.program_id(0) * B + tl.arange(0, B)
    cols = tl.program_id(1) * B + tl.arange(0, B)
    tile = tl.load(x_ptr + rows[:, None] * N + cols[None, :])
    tl.store(out_ptr + cols[None, :] * N + rows[:, None], tile)  # contiguous along dim 0


def test_coalesce_gives_a_column_store_its_own_layout():
    ck = compile_cuda(column_store_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"N": 1024, "B": 64})
    store = next(op for op in ck.module.walk() if op.name == "tt.store")
    assert store.operands[0].type.layout.params["order"] == (0, 1)
    assert ck.asm["ptx"].count("st.global.v4.b32") == 8 and ck.metadata["shared"] > 0


@tilelab.jit
def masked_where_kernel(x, out, n, BLOCK: tl.constexpr):
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x + cols, mask=cols < n, other=0.0)
    tl.store(out + cols, tl.where(cols < n, v * v, 1.0), mask=cols < n)


@pytest.mark.parametrize("n_divisibility, compares", [(16, 1), (1, 4)])
def test_a_comparison_constant_over_a_run_is_computed_once_per_run(n_divisibility, compares):
    """``cols < n`` with ``n`` divisible by 16 is one value over 4 consecutive f32 columns: one ``setp``
    per thread, not one per element (the axis analysis's constancy); with ``n`` of unknown divisibility
    each column is compared."""
    sig = {"x": "*fp32", "out": "*fp32", "n": "i32"}
    div = {"x": 16, "out": 16, "n": n_divisibility}
    ck = compile_cuda(masked_where_kernel, sig, {"BLOCK": 512}, divisibility=div)
    assert ck.asm["ptx"].count("setp.lt.s32") == compares


def test_a_module_llvm_rejects_is_an_internal_error_and_freed_before_its_context():
    """``optimize`` parses into the compile's own LLVM context; a module the verifier rejects is closed
    before the error leaves, so that closing the context after it frees nothing twice."""
    import gc

    import llvmlite.binding as llvm
    from llvmlite import ir

    from tilelab.compiler.backends.cuda.kernel import InternalCompilerError, optimize

    llmod = ir.Module("bad", context=ir.Context())
    fn = ir.Function(llmod, ir.FunctionType(ir.VoidType(), []), "bad")
    entry, later = fn.append_basic_block("entry"), fn.append_basic_block("later")
    b = ir.IRBuilder(later)
    v = b.add(ir.Constant(ir.IntType(32), 1), ir.Constant(ir.IntType(32), 2))
    b.ret_void()
    b.position_at_end(entry)
    b.add(v, ir.Constant(ir.IntType(32), 1))  # used before the block that defines it: parses, fails to verify
    b.branch(later)
    context = llvm.create_context()
    with pytest.raises(InternalCompilerError, match="does not dominate"):
        optimize(llmod, "sm_90a", False, context=context)
    context.close()
    gc.collect()


def test_dead_store_search_is_off_during_o3_only(monkeypatch):
    """O3 of a CUDA kernel runs with LLVM's dead-store search at 0 and puts LLVM's default back after,
    once the last of several concurrent compiles is done."""
    import llvmlite.binding as llvm

    from tilelab.compiler.backends.cuda import kernel

    calls = []
    monkeypatch.setattr(llvm, "set_option", lambda name, option: calls.append(option))
    with kernel._dead_store_search_off():
        with kernel._dead_store_search_off():
            assert calls == ["-dse-memoryssa-scanlimit=0"]
        assert calls == ["-dse-memoryssa-scanlimit=0"]
    assert calls == ["-dse-memoryssa-scanlimit=0", "-dse-memoryssa-scanlimit=150"]
    calls.clear()
    tilelab.compile(add_kernel, {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32"}, {"BLOCK": 128},
                    target=ARCH, cache=False)  # fmt: skip
    dse = [c for c in calls if c.startswith("-dse")]  # a process's first CUDA compile sets options of its own
    assert dse == ["-dse-memoryssa-scanlimit=0", "-dse-memoryssa-scanlimit=150"]
