"""Cold compile latency and warm launch overhead of the CPU (or CUDA) target, each in a fresh process.

Run ``python benchmarks/cold_compile.py [--runs 5] [--target cuda]``. Every run starts a new Python process
with an empty ``TILELAB_CACHE_DIR`` and measures, for one kernel:

* cold compile = first launch - warm launch (the first launch builds, optimizes, emits and
  loads the kernel, and imports whatever the compiler imports lazily; a kernel whose first
  code is the quick tier gets its optimized code in the background -- runtime/tiers.py --
  which the warm launches wait for and then run);
* the same with llvmlite already imported (``llvmlite.ir``, ``llvmlite.binding``, the native
  target initialized) before the first launch: what the compiler itself costs, without the
  module loading a process pays once;
* the same launched "in a later cell": half a second after the kernel is defined, as a
  notebook user runs the next cell (the compiler's modules load meanwhile: runtime/prefetch.py);
* warm launch overhead = the median time of a launch of a 16-element kernel (one program).

With ``--target cuda`` (a GPU and torch needed) the same add kernel runs on torch CUDA tensors of 2^20
elements, torch's context and tensors made before the clock starts, each launch followed by a synchronize.

Python's own bytecode compilation is not counted: a priming process writes the ``.pyc``
files to a private ``PYTHONPYCACHEPREFIX`` first, as an installed package would have them.
The medians over ``--runs`` processes are printed; the cases take turns, so that a slow spell
of a shared machine does not fall on one of them. A report, never a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import statistics, sys, time
import numpy as np
import tilelab
from tilelab.runtime import tiers
from benchmarks.cpu import add_kernel, matmul_kernel

def launch_time(launch, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        launch()
        times.append(time.perf_counter() - t)
    return statistics.median(times)

def cold(launch):
    t = time.perf_counter()
    launch()
    first = time.perf_counter() - t
    tiers.wait()  # the optimized code, made in the background, is what the warm launches run
    return first - launch_time(launch, 5)

rng = np.random.default_rng()
case = sys.argv[1]
if case.endswith("(cuda)"):  # torch made its context and tensors first: only tilelab's work is timed
    import torch
    n = 1 << 20 if case.startswith("vector add") else 16
    x, y, out = (torch.randn(n, device="cuda") for _ in range(3))
    torch.cuda.synchronize()
    block = 1024 if case.startswith("vector add") else 16
    def launch():
        add_kernel[(n // block,)](x, y, out, n, BLOCK=block)
        torch.cuda.synchronize()
    if case.startswith("vector add"):
        print(cold(launch))
    else:
        launch = lambda: add_kernel[(1,)](x, y, out, n, BLOCK=16)
        launch()
        print(min(launch_time(launch, 1000) for _ in range(5)))
    sys.exit(0)
if case.endswith(", in a later cell"):
    time.sleep(0.5)
    case = case.removesuffix(", in a later cell")
if case.endswith(", llvmlite imported"):
    import llvmlite.binding, llvmlite.ir
    llvmlite.binding.initialize_native_target()
    case = case.removesuffix(", llvmlite imported")
if case == "vector add":
    n = 1 << 16
    x, y, out = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    print(cold(lambda: add_kernel[(n // 1024,)](x, y, out, n, BLOCK=1024, target="cpu")))
elif case == "f16 matmul":
    s = 256
    a, b = (rng.standard_normal((s, s)).astype(np.float16) for _ in range(2))
    c = np.empty((s, s), np.float16)
    print(cold(lambda: matmul_kernel[(s // 64, s // 64)](a, b, c, s, s, s, BM=64, BN=64, BK=32, target="cpu")))
else:
    x = rng.standard_normal(16).astype(np.float32)
    launch = lambda: add_kernel[(1,)](x, x, x, 16, BLOCK=16, target="cpu")
    launch()
    print(min(launch_time(launch, 1000) for _ in range(5)))
"""

CASES = {
    "cpu": ("vector add", "vector add, llvmlite imported", "vector add, in a later cell", "f16 matmul", "warm launch"),
    "cuda": ("vector add (cuda)", "warm launch (cuda)"),
}


def run_child(case: str, pycache: str) -> float:
    """Seconds measured by one fresh process for ``case`` (with an empty kernel cache)."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TILELAB_CACHE_DIR=cache, PYTHONPATH=str(ROOT), PYTHONPYCACHEPREFIX=pycache)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        done = subprocess.run(
            [sys.executable, "-c", CHILD, case], capture_output=True, text=True, env=env, cwd=ROOT, check=True
        )
    return float(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per measurement (median shown)")
    parser.add_argument("--target", choices=sorted(CASES), default="cpu", help="cuda: on a GPU, with torch tensors")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as pycache:
        for case in CASES[args.target]:
            run_child(case, pycache)  # primes the bytecode cache (and the first time anything is loaded)
        cases = CASES[args.target]
        runs = {case: [] for case in cases}
        for _ in range(args.runs):  # round-robin: a slow spell of the machine falls on every case alike
            for case in cases:
                runs[case].append(run_child(case, pycache))
        for case in cases:
            seconds = statistics.median(runs[case])
            warm = case.startswith("warm launch")
            label = f"{case} overhead (16 elements)" if warm else f"cold compile, {case}"
            value = f"{seconds * 1e6:.1f} us" if warm else f"{seconds * 1e3:.1f} ms"
            print(f"{label:<50}{value:>12}")


if __name__ == "__main__":
    main()
