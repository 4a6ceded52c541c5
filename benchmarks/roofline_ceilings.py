"""Measures this machine's roofline ceilings with tilelab kernels and stores them for the roofline view.

* memory bandwidth: a tilelab copy kernel over arrays much larger than the caches (bytes read + written);
* compute peak: a tilelab kernel doing a long chain of fused multiply-adds per element in registers;
* on GPUs, f16 tensor-core peak: a tilelab ``tl.dot`` kernel on f16 tiles.

Each is the median of ``tilelab.testing.do_bench``; results go to ``roofline_ceilings.json`` in the
tilelab cache dir, under this device's key. Run: ``python benchmarks/roofline_ceilings.py [--target cuda]``.
"""

from __future__ import annotations

import argparse

import numpy as np

import tilelab
import tilelab.language as tl
from tilelab.testing import do_bench
from tilelab.viz.plugins.roofline import Ceilings, device_key, save_ceilings

BLOCK = 1024
FMA_STEPS = 256


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


def bandwidth_gbs(target: str, n: int) -> float:
    src = np.random.default_rng().standard_normal(n).astype(np.float32)
    dst = np.empty_like(src)
    run = lambda: copy[(tilelab.cdiv(n, BLOCK),)](src, dst, n, BLOCK=BLOCK, target=target)  # noqa: E731
    run()
    np.testing.assert_array_equal(dst, src)
    ms = do_bench(run, return_mode="median")
    return 2 * n * 4 / (ms * 1e-3) / 1e9


def peak_gflops(target: str, n: int) -> float:
    x = np.random.default_rng().standard_normal(n).astype(np.float32)
    out = np.empty_like(x)
    run = lambda: fma_chain[(n // BLOCK,)](x, out, STEPS=FMA_STEPS, BLOCK=BLOCK, target=target)  # noqa: E731
    run()
    ms = do_bench(run, return_mode="median")
    return n * FMA_STEPS * 2 * 2 / (ms * 1e-3) / 1e9  # two FMAs (2 FLOPs each) per step and element


def main(argv=None) -> Ceilings:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--elements", type=int, default=1 << 24, help="elements of the copy (default 16M)")
    args = parser.parse_args(argv)
    bw = bandwidth_gbs(args.target, args.elements)
    peak = peak_gflops(args.target, 1 << 16)
    tensor = None  # f16 tensor-core peak: measured once the CUDA backend lowers tl.dot to mma
    ceilings = Ceilings(device_key(args.target), bw, peak, tensor, measured=True)
    save_ceilings(ceilings)
    print(f"{ceilings.device}: {bw:.1f} GB/s, {peak:.1f} GFLOP/s (stored)")
    return ceilings


if __name__ == "__main__":
    main()
