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

import tilelab  # noqa: E402
import tilelab.language as tl  # noqa: E402
from tilelab.runtime import stages  # noqa: E402


@tilelab.jit
def vector_add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


@tilelab.jit
def softmax(x, out, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    v = tl.load(x + row * stride + cols, mask=mask, other=-float("inf"))
    v = v - tl.max(v, axis=0)
    e = tl.exp(v)
    tl.store(out + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


@tilelab.jit
def matmul(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        ta = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
        tb = tl.load(b + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(ta, tb)
    tl.store(c + rm[:, None] * N + rn[None, :], acc)


KERNELS = {
    "vector_add": (vector_add, {"x": "*f32", "y": "*f32", "out": "*f32", "n": "i32"}, {"BLOCK": 1024}),
    "softmax": (softmax, {"x": "*f32", "out": "*f32", "stride": "i32", "n_cols": "i32"}, {"BLOCK": 1024}),
    "matmul": (
        matmul,
        {"a": "*f16", "b": "*f16", "c": "*f32", "M": "i32", "N": "i32", "K": "i32"},
        {"BM": 64, "BN": 64, "BK": 32},
    ),
}


def compile_once(kernel, signature, constants, pipeline) -> tuple[float, float, list]:
    """One fresh compile: (frontend seconds, passes seconds, pass records)."""
    divisibility = {name: 16 for name in signature}
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
