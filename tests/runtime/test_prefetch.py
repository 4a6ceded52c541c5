"""Background imports of the compiler once a kernel is defined (runtime/prefetch.py), in fresh processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import json, sys
import tilelab
import tilelab.language as tl
from tilelab.runtime import prefetch
from tilelab.runtime.cuda_driver import driver_library_present

before = "llvmlite.binding" in sys.modules

@tilelab.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

prefetch.wait()
names = ("llvmlite.ir", "llvmlite.binding", "tilelab.compiler.passes.cse", "tilelab.runtime.cpu_target")
print(json.dumps({"before": before, "driver": driver_library_present(), **{n: n in sys.modules for n in names}}))
"""


def run_child(**env) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_defining_a_kernel_imports_llvm_and_the_passes_in_the_background():
    got = run_child(TILELAB_PREFETCH="1")
    assert not got["before"], "import tilelab alone must not load LLVM"
    assert got["llvmlite.ir"] and got["llvmlite.binding"] and got["tilelab.compiler.passes.cse"]
    assert got["tilelab.runtime.cpu_target"] == (not got["driver"])  # the CPU target where it is the default


def test_switch_off_leaves_the_imports_to_the_first_launch():
    got = run_child(TILELAB_PREFETCH="0")
    assert not got["llvmlite.binding"] and not got["tilelab.runtime.cpu_target"]
