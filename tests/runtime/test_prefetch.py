"""Background imports of the compiler from ``import tilelab`` on (runtime/prefetch.py), in fresh processes."""

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
from tilelab.runtime import prefetch
from tilelab.runtime.cuda_driver import driver_library_present

started = prefetch._thread is not None
prefetch.wait()
names = ("llvmlite.ir", "llvmlite.binding", "tilelab.compiler.passes.cse", "tilelab.runtime.cpu_target")
imported = {n: n in sys.modules for n in names}
from tilelab.runtime.sources import compiler_fingerprint
fingerprint = compiler_fingerprint.cache_info().currsize == 1  # taken by the thread
prefetch.join()  # the warm-up too
warm = False
if "tilelab.compiler.backends.cpu" in sys.modules:
    from tilelab.compiler.backends.cpu import codegen
    warm = codegen._cached_target_machine.cache_info().currsize == 1
import numpy as np
from tests.support.cpu_kernels import add  # a kernel with a source file
a = np.arange(40, dtype=np.float32)
out = np.empty_like(a)
add[(2,)](a, a, out, 40, BLOCK=32, target="cpu")
print(json.dumps({"started": started, "driver": driver_library_present(), "warm": warm, "fingerprint": fingerprint,
                  "right": bool((out == a + a).all()), **imported}))
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


def test_importing_tilelab_imports_llvm_and_the_passes_in_the_background():
    got = run_child(TILELAB_PREFETCH="1")
    assert got["started"] and got["fingerprint"]
    assert got["llvmlite.ir"] and got["llvmlite.binding"] and got["tilelab.compiler.passes.cse"]
    assert got["tilelab.runtime.cpu_target"] == (not got["driver"])  # the CPU target where it is the default
    assert got["warm"] == (not got["driver"]), "where it is the default, LLVM's CPU target is warmed up"
    assert got["right"]


def test_switch_off_leaves_the_imports_to_the_first_launch():
    got = run_child(TILELAB_PREFETCH="0")
    assert not got["started"]
    assert not got["llvmlite.binding"] and not got["tilelab.runtime.cpu_target"] and not got["warm"]
    assert not got["fingerprint"]
    assert got["right"]
