"""What the CPU compile path imports and emits: no GPU passes, narrow bounds arithmetic.

Cold compile latency depends on both; the values a kernel computes must not change.
"""

import re
import subprocess
import sys

import numpy as np

import tilelab
import tilelab.language as tl
from tests.support.cpu_kernels import F32_SIG, add, lowered


@tilelab.jit
def add_i64(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3, mask=mask)


def test_cpu_pipeline_does_not_import_gpu_passes():
    code = (
        "import sys; from tilelab.compiler.passes.pipeline import PIPELINES; PIPELINES['cpu'];"
        "print(sorted(m for m in sys.modules if 'layout' in m or 'barrier' in m or m.endswith('analysis')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


def test_vector_add_bounds_checks_use_i64_not_i128(monkeypatch):
    text = lowered(monkeypatch, add, F32_SIG, {"BLOCK": 256})[0]
    assert " i128 " not in text and "icmp slt i64" in text and "add i64 %" in text
    assert ", 0\n" not in text and "and i1 1" not in text


def test_vector_add_with_i32_and_i64_offsets_matches_numpy_on_partial_blocks(rng):
    for n in (1000, 1024, 77):
        x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        out, out64 = np.empty_like(x), np.empty_like(x)
        add[(triton_cdiv(n, 256),)](x, y, out, n, BLOCK=256, target="cpu")
        add_i64[(triton_cdiv(n, 128),)](x, out64, n, BLOCK=128, target="cpu")
        np.testing.assert_array_equal(out, x + y)
        np.testing.assert_array_equal(out64, x * np.float32(3))


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


def test_vector_add_guard_is_one_flat_chain_of_distinct_conditions(monkeypatch):
    text = lowered(monkeypatch, add, F32_SIG, {"BLOCK": 256})[0]
    ands = re.findall(r'(%"[^"]+") = and i1 (%"[^"]+"|\S+), (%"[^"]+"|\S+)', text)
    results = {r for r, _, _ in ands}
    operands = [o for _, x, y in ands for o in (x, y)]
    assert len(ands) >= 2, "the guard checks the mask and that the stores and loads do not overlap"
    assert all(sum(o in results for o in (x, y)) <= 1 for _, x, y in ands), "a tree of and, not a chain"
    assert len(operands) == len(set(operands)), "a condition joined twice"


def test_vector_add_slow_path_buffers_the_stored_value_once(monkeypatch):
    text = lowered(monkeypatch, add, F32_SIG, {"BLOCK": 256})[0]
    assert text.count("= alloca") == 1  # both masked loads fused into one loop, not one buffer each


def test_elementwise_pipeline_skips_the_slp_vectorizer_and_unrolling():
    from tilelab.compiler.backends.cpu.codegen import pipeline_options

    cheap, full = pipeline_options(3, unroll=False), pipeline_options(3, unroll=True)
    assert cheap.loop_vectorization and not cheap.slp_vectorization and not cheap.loop_unrolling
    assert full.loop_vectorization and full.slp_vectorization and full.loop_unrolling
