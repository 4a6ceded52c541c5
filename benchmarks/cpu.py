"""CPU backend benchmarks: tilelab's compiled kernels against numpy (and Triton's interpreter).

Run ``python benchmarks/cpu.py`` (``--quick`` for smaller sizes, ``--only matmul`` for some kernels). For each kernel it
prints the median time of tilelab on the CPU target, of the numpy equivalent, of
Triton's interpreter when ``triton`` and ``torch`` are installed, and the ratios. Then
cold compile times (a fresh process and an empty cache) and the warm launch overhead.
Numbers depend on the machine and its load: this is a report, never a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

TRITON = os.environ.get("TILELAB_BENCH_AS_TRITON") == "1"  # the same kernels, run by Triton's interpreter
if TRITON:
    import torch
    import triton as tilelab
    import triton.language as tl
else:
    import tilelab
    import tilelab.language as tl

from benchmarks.corpus import kernels as corpus_kernels  # noqa: E402
from benchmarks.corpus.run import jit_from_source  # noqa: E402


@tilelab.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@tilelab.jit
def softmax_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=mask)


@tilelab.jit
def layernorm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(xc * xc, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(y_ptr + row * stride + cols, xc * rstd * w + b, mask=mask)


@tilelab.jit
def transpose_kernel(x_ptr, out_ptr, m, n, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    tile = tl.load(x_ptr + rows[:, None] * n + cols[None, :])
    tl.store(out_ptr + cols[:, None] * m + rows[None, :], tl.trans(tile))


@tilelab.jit
def cumsum_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols)
    tl.store(out_ptr + row * n_cols + cols, tl.cumsum(x, axis=0))


@tilelab.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty))


#: the corpus's matmul, as Triton's tutorial writes it (grouped programs, ``% M`` wrap-around, runtime
#: strides, a masked K tail, pointers advanced with ``+=``, ``tl.dot``'s default tf32 precision)
tutorial_matmul_kernel = jit_from_source(corpus_kernels.matmul_kernel, "triton" if TRITON else "tilelab")


def median_time(fn, repeat: int = 15) -> float:
    fn()  # warm up (compiles)
    if not TRITON:
        from tilelab.runtime import tiers

        tiers.wait()  # a kernel's optimized code replaces its quick first code in the background
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def cases(quick: bool):
    """(name, tilelab launch, numpy equivalent) per kernel, on fresh random inputs.

    Under ``TILELAB_BENCH_AS_TRITON=1`` the launches are Triton's, on torch CPU tensors.
    """
    rng = np.random.default_rng(0)
    cpu = {} if TRITON else {"target": "cpu"}
    array = torch.from_numpy if TRITON else np.asarray
    n = 1 << (18 if quick else 20)
    x, y, out = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    rows, cols = (256, 1024) if quick else (1024, 1024)
    m = rng.standard_normal((rows, cols)).astype(np.float32)
    mo = np.empty_like(m)
    w, b = rng.standard_normal(cols).astype(np.float32), rng.standard_normal(cols).astype(np.float32)
    t_in = rng.standard_normal((1024, 1024)).astype(np.float32)
    t_out = np.empty_like(t_in)
    ci = rng.integers(-9, 9, (rows, cols)).astype(np.int32)
    co = np.empty_like(ci)
    s = 256 if quick else 512
    a, bb = rng.standard_normal((s, s)).astype(np.float32), rng.standard_normal((s, s)).astype(np.float32)
    c = np.empty((s, s), np.float32)

    def softmax_np():
        e = np.exp(m - m.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def layernorm_np():
        xc = m - m.mean(axis=1, keepdims=True)
        return xc / np.sqrt((xc * xc).mean(axis=1, keepdims=True) + 1e-5) * w + b

    x, y, out, m, mo, w, b, t_in, t_out, ci, co, a, bb, c = (
        array(v) for v in (x, y, out, m, mo, w, b, t_in, t_out, ci, co, a, bb, c)
    )
    yield "vector add", lambda: add_kernel[(n // 1024,)](x, y, out, n, BLOCK=1024, **cpu), lambda: np.add(x, y, out=out)
    yield "softmax", lambda: softmax_kernel[(rows,)](m, mo, cols, cols, BLOCK=cols, **cpu), softmax_np
    yield (
        "layernorm",
        lambda: layernorm_kernel[(rows,)](m, mo, w, b, cols, cols, 1e-5, BLOCK=cols, **cpu),
        layernorm_np,
    )
    yield (
        "transpose 1024^2",
        lambda: transpose_kernel[(32, 32)](t_in, t_out, 1024, 1024, BLOCK=32, **cpu),
        lambda: np.copyto(t_out, t_in.T),
    )
    yield (
        "cumsum rows",
        lambda: cumsum_kernel[(rows,)](ci, co, cols, BLOCK=cols, **cpu),
        lambda: np.cumsum(ci, 1, out=co),
    )
    yield (
        f"matmul f32 {s}^3",
        lambda: matmul_kernel[(s // 64, s // 64)](a, bb, c, s, s, s, BM=64, BN=64, BK=32, **cpu),
        lambda: np.matmul(a, bb, out=c),
    )
    tutorial = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8, "HINTS": False}
    yield (
        f"tutorial matmul {s}^3",
        lambda: tutorial_matmul_kernel[((s // 64) ** 2,)](a, bb, c, s, s, s, s, 1, s, 1, s, 1, **tutorial, **cpu),
        lambda: np.matmul(a, bb, out=c),
    )


TRITON_RUN = """
import time, statistics
from benchmarks.cpu import cases
for name, run, _ in cases({quick}):
    try:
        run()
    except Exception as e:  # e.g. runtime-bound loops under numpy 2.x
        print(name, "=", "fails", type(e).__name__)
        continue
    times = []
    for _ in range(3):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    print(name, "=", statistics.median(times))
"""


def triton_interpreter_times(quick: bool) -> dict[str, float | str]:
    """Seconds per launch of each kernel under Triton's interpreter (empty without triton and torch).

    A kernel the interpreter cannot run maps to ``"fails"`` (its matmul's runtime-bound
    ``for k in range(0, K, BK)`` loop fails under numpy 2.x).
    """
    try:
        import torch  # noqa: F401
        import triton  # noqa: F401
    except ImportError:
        return {}
    env = dict(os.environ, TILELAB_BENCH_AS_TRITON="1", TRITON_INTERPRET="1", PYTHONPATH=os.getcwd())
    done = subprocess.run(
        [sys.executable, "-c", TRITON_RUN.format(quick=quick)], capture_output=True, text=True, env=env
    )
    times = {}
    for line in done.stdout.splitlines():
        name, _, seconds = line.rpartition(" = ")
        times[name] = "fails" if seconds.startswith("fails") else float(seconds)
    return times


COLD = """
import os, time
t = time.perf_counter()
import numpy as np, tilelab
from benchmarks.cpu import {kernel}
from tilelab.compiler.backends.cpu import target_machine
target_machine()
t0 = time.perf_counter()
k = tilelab.compile({kernel}, signature={signature}, constants={constants}, target="cpu", snapshots=False)
print(time.perf_counter() - t0, k.metadata.get("phase_seconds"))
"""


def cold_compile(kernel: str, signature: dict, constants: dict) -> str:
    """Compile ``kernel`` in a fresh process with an empty cache; returns its report line."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TILELAB_CACHE_DIR=cache, PYTHONPATH=os.getcwd())
        code = COLD.format(kernel=kernel, signature=signature, constants=constants)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    return done.stdout.strip() or done.stderr.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--only", default="", help="the kernels whose name contains this, and no compile report")
    args = parser.parse_args()
    triton = triton_interpreter_times(args.quick) if not args.only else {}
    print(f"{'kernel':<20}{'tilelab cpu':>14}{'numpy':>12}{'ratio':>8}{'triton interp':>16}{'ratio':>8}")
    for name, run, ref in cases(args.quick):
        if args.only not in name:
            continue
        t_cpu, t_np = median_time(run), median_time(ref)
        line = f"{name:<20}{t_cpu * 1e3:>12.3f}ms{t_np * 1e3:>10.3f}ms{t_cpu / t_np:>8.2f}"
        if triton.get(name) == "fails":
            line += f"{'fails':>16}"
        elif name in triton:
            line += f"{triton[name] * 1e3:>14.1f}ms{triton[name] / t_cpu:>7.0f}x"
        else:
            line += f"{'n/a':>16}"
        print(line)
    if args.only:
        return
    print("\ncold compile (fresh process, empty cache): seconds, phases")
    print(
        "  vector add:",
        cold_compile(
            "add_kernel", {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 1024}
        ),
    )
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32"}
    print("  f16 matmul:", cold_compile("matmul_kernel", sig, {"BM": 64, "BN": 64, "BK": 32}))
    x = np.ones(1024, np.float32)
    overhead = median_time(lambda: add_kernel[(1,)](x, x, x, 1024, BLOCK=1024, target="cpu"), repeat=200)
    print(f"\nwarm launch overhead (1 program, 1024 elements): {overhead * 1e6:.1f} us")


if __name__ == "__main__":
    main()
