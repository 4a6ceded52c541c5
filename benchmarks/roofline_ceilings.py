"""Measures this machine's roofline ceilings with tilelab kernels and stores them for the roofline view.

* memory bandwidth: a tilelab copy kernel over arrays much larger than the caches (bytes read + written);
* compute peak: a tilelab kernel doing a long chain of fused multiply-adds per element in registers;
* on GPUs, f16 tensor-core peak: a tilelab ``tl.dot`` kernel chaining dots of f16 tiles held in registers.

Each is the median of ``tilelab.testing.do_bench`` (CUDA events on a GPU); results go to
``roofline_ceilings.json`` in the tilelab cache dir, under this device's key. On a GPU the arrays
live in device memory (``tilelab.cuda``), so no host copy is timed. Run:
``python benchmarks/roofline_ceilings.py [--target cuda]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import tilelab  # noqa: E402
import tilelab.language as tl  # noqa: E402
from tilelab.testing import do_bench  # noqa: E402
from tilelab.viz.plugins.roofline import Ceilings, device_key, save_ceilings  # noqa: E402

BLOCK = 1024
FMA_STEPS = 256
DOT_STEPS = 256
DOT_TILE = (128, 128, 32)  # M, N, K of each program's dot (8 warps: no register spills)


@tilelab.jit
def copy(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)


@tilelab.jit
def fma_chain(x, out, STEPS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(x + offs)
    b = a * 0.5
    for _ in range(STEPS):
        a = a * 0.999 + b
        b = b * 0.999 + a
    tl.store(out + offs, a + b)


@tilelab.jit
def dot_chain(a_ptr, b_ptr, out, STEPS: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    acc = tl.zeros((M, N), dtype=tl.float32)
    for _ in range(STEPS):
        acc = tl.dot(a, b, acc)
    tl.store(out + tl.program_id(0) * M * N + rm[:, None] * N + rn[None, :], acc)


def on_target(target: str, host: np.ndarray):
    """``host`` itself on the CPU; a device copy (``tilelab.cuda``) on a GPU, so launches copy nothing."""
    if target != "cuda":
        return host
    import tilelab.cuda

    return tilelab.cuda.to_device(host)


def to_host(array) -> np.ndarray:
    return array if isinstance(array, np.ndarray) else array.numpy()


def bandwidth_gbs(target: str, n: int) -> float:
    host = np.random.default_rng().standard_normal(n).astype(np.float32)
    src, dst = on_target(target, host), on_target(target, np.full_like(host, np.nan))
    run = lambda: copy[(tilelab.cdiv(n, BLOCK),)](src, dst, n, BLOCK=BLOCK, target=target)  # noqa: E731
    run()
    np.testing.assert_array_equal(to_host(dst), host)
    ms = do_bench(run, return_mode="median")
    return 2 * n * 4 / (ms * 1e-3) / 1e9


def peak_gflops(target: str, n: int) -> float:
    x = on_target(target, np.random.default_rng().standard_normal(n).astype(np.float32))
    out = on_target(target, np.empty(n, np.float32))
    run = lambda: fma_chain[(n // BLOCK,)](x, out, STEPS=FMA_STEPS, BLOCK=BLOCK, target=target)  # noqa: E731
    run()
    ms = do_bench(run, return_mode="median")
    return n * FMA_STEPS * 2 * 2 / (ms * 1e-3) / 1e9  # two FMAs (2 FLOPs each) per step and element


def tensor_gflops(programs: int) -> float:
    """f16 tensor-core GFLOP/s of ``dot_chain`` over ``programs`` programs (checked against numpy first)."""
    m, n, k = DOT_TILE
    rng = np.random.default_rng()
    a_host = (rng.standard_normal((m, k)) / 8).astype(np.float16)
    b_host = (rng.standard_normal((k, n)) / 8).astype(np.float16)
    a, b = on_target("cuda", a_host), on_target("cuda", b_host)
    out = on_target("cuda", np.full((programs, m, n), np.nan, np.float32))
    run = lambda: dot_chain[(programs,)](a, b, out, STEPS=DOT_STEPS, M=m, N=n, K=k, num_warps=8)  # noqa: E731
    run()
    expected = DOT_STEPS * (a_host.astype(np.float32) @ b_host.astype(np.float32))
    np.testing.assert_allclose(to_host(out)[-1], expected, rtol=1e-3, atol=1e-3 * DOT_STEPS)
    ms = do_bench(run, return_mode="median")
    return programs * DOT_STEPS * 2 * m * n * k / (ms * 1e-3) / 1e9


def main(argv=None) -> Ceilings:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--elements", type=int, help="elements of the copy (default 16M; 64M on a GPU)")
    args = parser.parse_args(argv)
    gpu = args.target == "cuda"
    bw = bandwidth_gbs(args.target, args.elements or (1 << 26 if gpu else 1 << 24))
    peak = peak_gflops(args.target, 1 << 22 if gpu else 1 << 16)
    tensor = tensor_gflops(programs=4 * _multiprocessors()) if gpu else None
    ceilings = Ceilings(device_key(args.target), bw, peak, tensor, measured=True)
    save_ceilings(ceilings)
    tensor_text = f", {tensor:.1f} f16 tensor-core GFLOP/s" if tensor else ""
    print(f"{ceilings.device}: {bw:.1f} GB/s, {peak:.1f} GFLOP/s{tensor_text} (stored)")
    return ceilings


def _multiprocessors() -> int:
    from tilelab.runtime import cuda_driver

    return cuda_driver.device_info().multiprocessors


if __name__ == "__main__":
    main()
