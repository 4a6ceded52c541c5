"""LLVM bugs the CPU backend steps around (``codegen.llvm_workarounds``), each compiled for a CPU that has it.

The compile runs in a subprocess: the bug aborts the process, which no ``except`` catches.
"""

import os
import subprocess
import sys
import textwrap

import pytest

import tilelab
from tilelab.compiler.backends.cpu.codegen import llvm_workarounds

# a 16x8 row sum (found by the differential fuzzer, seed 6008272): on Intel AVX-512 the loop
# vectorizer's interleaved groups made LLVM 22's x86 code generator abort ("Unexpected illegal type!")
ROW_SUM = """
import llvmlite.binding as llvm
import tilelab
import tilelab.language as tl


class Features:
    def flatten(self):
        return "+avx512f,+avx512bw,+avx512vl,+avx512dq"


llvm.get_host_cpu_name = lambda: "{cpu}"
llvm.get_host_cpu_features = lambda: Features()


@tilelab.jit
def kernel(x0, x1, out0, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, 16)[:, None] * 8 + tl.arange(0, 8)[None, :]
    mask = offs < n
    a1 = tl.load(x1 + offs, mask=mask, other=0)
    v1 = (a1 <= a1).to(tl.int1)
    v5 = (v1 + 7).to(tl.int32)
    v6 = (tl.expand_dims(tl.sum(v5, axis=1), 1) + tl.zeros([16, 8], tl.int32)).to(tl.int32)
    tl.store(out0 + offs, v6, mask=mask)


sig = {{"x0": "*i1", "x1": "*fp32", "out0": "*i32", "n": "i32"}}
ck = tilelab.compile(kernel, sig, {{"BLOCK": 128}}, target="cpu", cache=False)
print("compiled", "gather" in ck.asm["llir"])
"""


@pytest.mark.parametrize("cpu", ["sapphirerapids", "skylake-avx512"])
def test_a_row_sum_compiles_for_intel_avx512(tmp_path, cpu):
    script = tmp_path / "row_sum.py"
    script.write_text(textwrap.dedent(ROW_SUM.format(cpu=cpu)))
    root = os.path.dirname(os.path.dirname(tilelab.__file__))
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, TILELAB_TIERED="0", TILELAB_PREFETCH="0", TILELAB_CACHE_DIR=str(tmp_path), PYTHONPATH=path)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-400:]
    assert done.stdout.startswith("compiled")


def test_the_workaround_is_for_intel_avx512_only():
    assert llvm_workarounds("sapphirerapids", "+avx512f,+avx2") == ["-enable-interleaved-mem-accesses=0"]
    assert llvm_workarounds("znver4", "+avx512f,+avx2") == []
    assert llvm_workarounds("haswell", "+avx2,-avx512f") == []
