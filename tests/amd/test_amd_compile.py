"""The AMD gfx942 inspection target: kernels compile to GCN assembly through LLVM's AMDGPU backend.

No AMD GPU runs here or anywhere in the test suite: tilelab has no AMD runtime. The tests check the
code the backend emits (instructions, address spaces, the kernel calling convention, registers),
that the amd pipeline's final tile IR still computes the numpy reference (on the interpreter),
the errors for what the target cannot lower, and that a launch is refused.
"""

import re

import numpy as np
import pytest

import tilelab
import tilelab.language as tl
from tests.amd.kernels import ADD, MATMUL, SOFTMAX, TRANSPOSE, compile_for
from tilelab.compiler.backends.amd import kernel_resources
from tilelab.compiler.interpreter import run_kernel
from tilelab.errors import CompilationError


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELAB_CACHE_DIR", str(tmp_path))


def body(ck) -> str:
    """The kernel's instructions (from its label to its end label), without directives."""
    text = ck.asm["amdgcn"]
    start = text.index(f"\n{ck.name}:")
    code = text[start : text.index(".Lfunc_end", start)]
    return "\n".join(line for line in code.splitlines() if not line.strip().startswith("."))


def test_vector_add_isa_and_llvm_ir():
    ck = compile_for(ADD)
    assert ck.target == "amd:gfx942" and set(ck.asm) >= {"tile", "llir", "amdgcn"} and "ptx" not in ck.asm
    isa = body(ck)
    assert "global_load_dword" in isa and "global_store_dword" in isa and "v_add_f32" in isa
    assert "s_barrier" not in isa and "ds_bpermute" not in isa  # nothing crosses lanes or wavefronts
    assert "s_cbranch_execz" in isa  # masked-off lanes skip their load under the exec mask
    assert '.amdgcn_target "amdgcn-amd-amdhsa--gfx942"' in ck.asm["amdgcn"]
    llir = ck.asm["llir"]
    assert re.search(r"define amdgpu_kernel void @add_kernel\(ptr addrspace\(1\) [^\n]*%x", llir)
    assert llir.count("ptr addrspace(1)") >= 3 and "nvvm" not in llir
    assert "@llvm.amdgcn.workitem.id.x" in llir and "@llvm.amdgcn.workgroup.id.x" in llir
    assert '"amdgpu-flat-work-group-size"="1,256"' in llir  # 4 wavefronts of 64 lanes
    assert 'target triple = "amdgcn-amd-amdhsa"' in llir


def test_layouts_spread_tiles_over_64_lane_wavefronts():
    ck = compile_for(ADD)
    assert "threadsPerWarp=[64]" in ck.asm["tile"] and "threadsPerWarp=[32]" not in ck.asm["tile"]
    assert ck.options.warp_size == 64 and ck.metadata["wavefront_size"] == 64
    assert compile_for(ADD, target="cuda:sm_90").options.warp_size == 32


def test_softmax_reduces_across_lanes_with_bpermute_and_across_wavefronts_through_lds():
    ck = compile_for(SOFTMAX)
    isa = body(ck)
    assert "ds_bpermute_b32" in isa  # butterfly steps inside a wavefront
    assert "s_barrier" in isa and re.search(r"ds_(write|read)_b", isa)  # the 4 wavefronts meet in the LDS
    assert "v_exp_f32" in isa and "v_max_f32" in isa and "v_rcp_f32" in isa
    assert "@llvm.amdgcn.ds.bpermute" in ck.asm["llir"] and "@llvm.amdgcn.s.barrier" in ck.asm["llir"]
    assert 'fence syncscope("workgroup") release' in ck.asm["llir"]
    assert re.search(r"@tilelab_smem = .*addrspace\(3\) global \[\d+ x i8\]", ck.asm["llir"])
    assert ck.metadata["shared"] > 0 and ck.metadata["lds"] == ck.metadata["shared"]


def test_two_dimensional_tile_transposes_through_the_lds():
    ck = compile_for(TRANSPOSE)
    isa = body(ck)
    assert "ttg.local_alloc" in ck.asm["tile"] or "ttg.convert_layout" in ck.asm["tile"]
    assert re.search(r"ds_write", isa) and re.search(r"ds_read", isa) and "s_barrier" in isa
    assert "global_load_dword" in isa and "workgroup_id_y 1" in ck.asm["amdgcn"]


def test_matmul_compiles_to_fma_loops_without_mfma():
    ck = compile_for(MATMUL)
    isa = body(ck)
    assert re.search(r"v_(fma|fmac|fma_mix|pk_fma)_f32", isa)
    assert "mfma" not in isa and "mma" not in ck.asm["tile"]
    assert ck.metadata["vgprs"] > 0


def test_register_counts_come_from_the_code_object_metadata():
    ck = compile_for(SOFTMAX)
    text = ck.asm["amdgcn"]
    meta = text[text.index(".amdgpu_metadata") :]
    assert ck.metadata["vgprs"] == int(re.search(r"\.vgpr_count:\s+(\d+)", meta).group(1))
    assert ck.metadata["sgprs"] == int(re.search(r"\.sgpr_count:\s+(\d+)", meta).group(1))
    assert ck.metadata["registers"] == ck.metadata["vgprs"] and ck.metadata["agprs"] == 0


def test_kernel_resources_reads_the_named_kernel():
    text = """.amdgpu_metadata
---
amdhsa.kernels:
  - .agpr_count:     0
    .name:           first
    .sgpr_count:     10
    .vgpr_count:     3
  - .group_segment_fixed_size: 512
    .name:           second
    .sgpr_count:     22
    .vgpr_count:     41
    .wavefront_size: 64
.end_amdgpu_metadata"""
    assert kernel_resources(text, "second") == {"vgprs": 41, "sgprs": 22, "lds": 512, "wavefront_size": 64}
    assert kernel_resources(text, "first") == {"vgprs": 3, "sgprs": 10, "agprs": 0}


@pytest.mark.parametrize("case", [SOFTMAX, TRANSPOSE])
def test_the_amd_pipelines_final_ir_computes_the_reference(case, rng):
    """The passes with 64-lane layouts (conversions through the LDS included) keep the kernel's meaning."""
    ck = compile_for(case)
    if case is SOFTMAX:
        x = rng.standard_normal((3, 1000)).astype(np.float32)
        out = np.full_like(x, np.nan)
        run_kernel(ck.module, grid=(3, 1, 1), args=[x, out, np.int32(1000)])
        e = np.exp(x - x.max(axis=1, keepdims=True))
        np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    else:
        m, n = 50, 70
        x = rng.standard_normal((m, n)).astype(np.float32)
        out = np.full((n, m), np.nan, np.float32)
        run_kernel(ck.module, grid=(2, 2, 1), args=[x, out, np.int32(m), np.int32(n)])
        np.testing.assert_array_equal(out, 2 * x.T)


def test_hip_is_another_name_of_the_amd_target():
    ck = compile_for(ADD, target="hip:gfx942")
    assert ck.target == "amd:gfx942" and "v_add_f32" in ck.asm["amdgcn"]


def test_unknown_amd_architecture_is_refused():
    with pytest.raises(tilelab.runtime.TargetUnavailable, match="unknown AMD architecture 'gfx1100'"):
        compile_for(ADD, target="amd:gfx1100")


def test_launch_is_refused_as_inspection_only(rng):
    x = rng.standard_normal(64).astype(np.float32)
    out = np.full_like(x, np.nan)
    with pytest.raises(tilelab.LaunchError, match=r"target amd:gfx942 is for inspection only \(tilelab has no AMD"):
        ADD[0][(1,)](x, x, out, 64, BLOCK=64, target="amd:gfx942")
    assert np.isnan(out).all()


@tilelab.jit
def tanh_kernel(x, out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    tl.store(out + offs, tl.sin(v) + tl.math.tanh(v))  # the tanh line


@tilelab.jit
def print_kernel(x, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.device_print("x", tl.load(x + offs))  # the print line


def _line_of(fn, marker: str) -> int:
    import inspect

    lines, first = inspect.getsourcelines(fn.fn if hasattr(fn, "fn") else fn)
    return first + next(i for i, t in enumerate(lines) if marker in t)


def test_math_without_a_library_is_an_error_naming_the_line():
    with pytest.raises(CompilationError) as info:
        tilelab.compile(tanh_kernel, signature={"x": "*fp32", "out": "*fp32"}, constants={"BLOCK": 64}, target="amd")
    e = info.value
    assert e.line == _line_of(tanh_kernel, "the tanh line") and "tl.math.tanh(v)" in str(e)
    assert "tanh (f32) is not supported on the inspection target amd:gfx942" in e.message and "ocml" in e.message


def test_device_print_is_an_error_naming_the_line():
    with pytest.raises(CompilationError, match="tl.device_print is not supported on the inspection target") as info:
        tilelab.compile(print_kernel, signature={"x": "*fp32"}, constants={"BLOCK": 64}, target="amd:gfx942")
    assert info.value.line == _line_of(print_kernel, "the print line")


@tilelab.jit
def big_transpose(x, out, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    v = tl.load(x + rm[:, None] * BN + rn[None, :])
    tl.store(out + rn[None, :] * BM + rm[:, None], v)


def test_lds_over_64_kib_is_out_of_resources_on_gfx942_only():
    case = (big_transpose, {"x": "*fp32", "out": "*fp32"}, {"BM": 256, "BN": 128})  # 128 KiB through shared memory
    assert compile_for(case, target="cuda:sm_90").metadata["shared"] > 65536
    with pytest.raises(tilelab.OutOfResources, match="shared memory"):
        compile_for(case)


@pytest.mark.parametrize("first", [0, 20])
def test_random_programs_compile_for_amd_or_name_what_is_missing(first):
    """A slice of the differential fuzzer's programs: each compiles (its launch then refuses) or is rejected
    with the line of a math function the target cannot lower; none reaches LLVM with a library call."""
    from tests.fuzz.differential import launch, load
    from tests.fuzz.programs import generate

    for seed in range(first, first + 20):
        program = generate(seed)
        result = launch(load(program), program, "amd:gfx942")
        assert isinstance(result, str), seed
        compiled = result.startswith("LaunchError") and "inspection only" in result
        rejected = result.startswith("CompilationError") and "not supported on the inspection target" in result
        assert compiled or rejected, (seed, result)
