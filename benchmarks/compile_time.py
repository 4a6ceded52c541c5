"""Compile time of the frontend and the pass pipeline, per kernel and per target pipeline.

Run: ``python benchmarks/compile_time.py [--repeat 5] [--pipeline interpret]``. Each
measurement is a fresh compile (the runtime's caches are bypassed: the frontend and the
pass manager are called directly); the table shows the best of ``--repeat`` runs, in
milliseconds, and the slowest pass.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.cpu import add_kernel, matmul_kernel, softmax_kernel  # noqa: E402  (one copy of each kernel)
from tilelab.runtime import stages  # noqa: E402

KERNELS = {
    "vector_add": (add_kernel, {"x_ptr": "*f32", "y_ptr": "*f32", "out_ptr": "*f32", "n": "i32"}, {"BLOCK": 1024}),
    "softmax": (
        softmax_kernel,
        {"x_ptr": "*f32", "out_ptr": "*f32", "stride": "i32", "n_cols": "i32"},
        {"BLOCK": 1024},
    ),
    "matmul": (
        matmul_kernel,
        {"a_ptr": "*f16", "b_ptr": "*f16", "c_ptr": "*f32", "M": "i32", "N": "i32", "K": "i32"},
        {"BM": 64, "BN": 64, "BK": 32},
    ),
}


def compile_once(kernel, signature, constants, pipeline) -> tuple[float, float, list]:
    """One fresh compile: (frontend seconds, passes seconds, pass records)."""
    divisibility = {name: 16 for name in signature}
    shared_choice = sys.modules.get("tilelab.compiler.passes.convert_through_shared")
    if shared_choice is not None:  # a fresh compile chooses its shared buffers again
        shared_choice._choose.cache_clear()
    start = time.perf_counter()
    module = stages.build(kernel.fn, signature, constants, divisibility)
    built = time.perf_counter()
    records = stages.run_passes(module, pipeline, snapshots=False)
    return built - start, time.perf_counter() - built, records


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="fresh compiles per kernel (best is shown)")
    parser.add_argument("--pipeline", default="interpret", help="interpret, cpu or cuda")
    args = parser.parse_args(argv)
    print(f"{'kernel':<12} {'frontend ms':>12} {'passes ms':>10} {'total ms':>9}  slowest pass")
    for name, (kernel, signature, constants) in KERNELS.items():
        runs = [compile_once(kernel, signature, constants, args.pipeline) for _ in range(args.repeat)]
        front, passes, records = min(runs, key=lambda r: r[0] + r[1])
        slowest = max(records, key=lambda r: r.seconds, default=None)
        worst = f"{slowest.name} ({slowest.seconds * 1e3:.2f} ms)" if slowest else "-"
        print(f"{name:<12} {front * 1e3:12.2f} {passes * 1e3:10.2f} {(front + passes) * 1e3:9.2f}  {worst}")


if __name__ == "__main__":
    main()
