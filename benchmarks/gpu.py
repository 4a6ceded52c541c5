"""GPU benchmark: tilelab vs Triton vs torch on the same kernel sources, on one CUDA device.

    python benchmarks/gpu.py                 # every case
    python benchmarks/gpu.py add softmax     # some cases
    python benchmarks/gpu.py --quick         # smaller sizes (a smoke run)

Each kernel is written once against ``tl`` (``benchmarks/gpu_kernels.py``) and compiled twice:
with ``tilelab`` and with ``triton`` (when installed), by handing the same Python source to each ``jit``. Every
case first checks tilelab's (and Triton's) output against torch, then times each with
CUDA events (median of many runs after a warmup, like ``do_bench``) and prints a
markdown table: milliseconds, GB/s or TFLOP/s, and tilelab's time over Triton's and
torch's. A case that fails prints its error; the others still run.
"""

from __future__ import annotations

import argparse
import inspect
import math
import sys
import textwrap
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.gpu_kernels import (  # noqa: E402  (the kernel sources, plain ``tl``)
    add_kernel,
    attention_kernel,
    cumsum_kernel,
    dropout_kernel,
    layernorm_kernel,
    matmul_kernel,
    softmax_kernel,
    transpose_kernel,
)

try:
    import torch
except ImportError:  # pragma: no cover - the benchmark needs torch for inputs and references
    sys.exit("benchmarks/gpu.py needs torch with CUDA")

try:
    import triton
except ImportError:
    triton = None

# ----------------------------------------------------------------------------- compiling one source twice


def jit_both(fn):
    """``{"tilelab": kernel, "triton": kernel}`` from one source: only the imports differ."""
    source = textwrap.dedent(inspect.getsource(fn))
    out = {"tilelab": _jit_from_file(source, fn.__name__, "tilelab")}
    if triton is not None:
        out["triton"] = _jit_from_file(source, fn.__name__, "triton")
    return out


def _jit_from_file(source: str, name: str, package: str):
    """The kernel compiled by ``package``'s jit (both read the source back from a file)."""
    import importlib.util
    import tempfile

    header = f"import {package} as triton\nimport {package}.language as tl\n\n\n@triton.jit\n"
    with tempfile.NamedTemporaryFile("w", suffix=f"_{package}_{name}.py", delete=False) as f:
        f.write(header + source)
    spec = importlib.util.spec_from_file_location(f"bench_{package}_{name}", f.name)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)


def bench(fn, warmup=10, reps=50) -> float:
    """Median milliseconds of ``fn()`` with CUDA events (L2 flushed before each run)."""
    cache = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        cache.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


# ----------------------------------------------------------------------------- cases


def case_add(q):
    n = 2**24 if q else 2**28
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    ks = jit_both(add_kernel)
    runs = {k: (lambda k=k: ks[k][(triton_cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)) for k in ks}
    return runs, lambda: x + y, out, 3 * n * 4, 0


def case_softmax(q):
    m, n = (2048 if q else 16384), 4096
    x = torch.randn(m, n, device="cuda")
    out = torch.empty_like(x)
    ks = jit_both(softmax_kernel)
    runs = {k: (lambda k=k: ks[k][(m,)](x, out, n, n, BLOCK=4096, num_warps=8)) for k in ks}
    return runs, lambda: torch.softmax(x, dim=1), out, 2 * m * n * 4, 0


def case_layernorm(q):
    m, n = (2048 if q else 16384), 8192
    x = torch.randn(m, n, device="cuda", dtype=torch.float16)
    w, b = torch.randn(n, device="cuda", dtype=torch.float16), torch.randn(n, device="cuda", dtype=torch.float16)
    out = torch.empty_like(x)
    ks = jit_both(layernorm_kernel)
    runs = {k: (lambda k=k: ks[k][(m,)](x, out, w, b, n, n, 1e-5, BLOCK=8192, num_warps=8)) for k in ks}
    ref = lambda: torch.nn.functional.layer_norm(x, (n,), w, b, 1e-5)  # noqa: E731
    return runs, ref, out, 2 * m * n * 2, 0


def case_transpose(q):
    n = 2048 if q else 8192
    x = torch.randn(n, n, device="cuda")
    out = torch.empty_like(x)
    ks = jit_both(transpose_kernel)
    runs = {k: (lambda k=k: ks[k][(n // 64, n // 64)](x, out, n, B=64)) for k in ks}
    return runs, lambda: x.t().contiguous(), out, 2 * n * n * 4, 0


def case_cumsum(q):
    m, n = (2048 if q else 16384), 1024
    x = torch.randn(m, n, device="cuda")
    out = torch.empty_like(x)
    ks = jit_both(cumsum_kernel)
    runs = {k: (lambda k=k: ks[k][(m,)](x, out, n, BLOCK=1024)) for k in ks}
    return runs, lambda: torch.cumsum(x, dim=1), out, 2 * m * n * 4, 0


def case_dropout(q):
    n = 2**22 if q else 2**26
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    ks = jit_both(dropout_kernel)
    runs = {k: (lambda k=k: ks[k][(triton_cdiv(n, 1024),)](x, out, n, 0.5, 123, BLOCK=1024)) for k in ks}

    def check_ref():  # dropout: kept elements are x / (1 - p), the rest 0
        return torch.where(out != 0, x * 2, torch.zeros_like(x))

    return runs, check_ref, out, 2 * n * 4, 0


def case_matmul(q):
    n = 1024 if q else 4096
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    c = torch.empty(n, n, device="cuda", dtype=torch.float16)
    ks = jit_both(matmul_kernel)
    grid = (n // 128, n // 128)
    runs = {k: (lambda k=k: ks[k][grid](a, b, c, n, n, n, BM=128, BN=128, BK=32, num_warps=8)) for k in ks}
    return runs, lambda: a @ b, c, 3 * n * n * 2, 2 * n**3


def case_attention(q):
    bh, s, d = (16, 1024, 128) if q else (128, 4096, 128)
    qkv = [torch.randn(bh, s, d, device="cuda", dtype=torch.float16) for _ in range(3)]
    o = torch.empty_like(qkv[0])
    scale = 1 / math.sqrt(d)
    ks = jit_both(attention_kernel)
    runs = {k: (lambda k=k: ks[k][(s // 128, bh)](*qkv, o, s, scale, D=d, BM=128, BN=64, num_warps=8)) for k in ks}

    def ref():
        return torch.nn.functional.scaled_dot_product_attention(*(t[None] for t in qkv))[0]

    return runs, ref, o, 4 * bh * s * d * 2, 4 * bh * s * s * d


CASES = {
    "add": case_add,
    "softmax": case_softmax,
    "layernorm": case_layernorm,
    "transpose": case_transpose,
    "cumsum": case_cumsum,
    "dropout": case_dropout,
    "matmul": case_matmul,
    "attention": case_attention,
}


def triton_cdiv(a, b):
    return (a + b - 1) // b


def run_case(name, quick) -> str:
    runs, ref, out, nbytes, flops = CASES[name](quick)
    row = {"case": name}
    for impl in ("tilelab", "triton"):
        if impl not in runs:
            row[impl] = "n/a"
            continue
        try:
            out.fill_(float("nan")) if out.is_floating_point() else None
            runs[impl]()
            torch.cuda.synchronize()
            expect = ref()
            err = (out.float() - expect.float()).abs().max().item()
            tol = 2e-2 if out.dtype == torch.float16 or flops else 1e-4
            if not err <= tol * max(1.0, expect.float().abs().max().item()):
                row[impl] = f"WRONG (max err {err:.3g})"
                continue
            row[impl] = bench(runs[impl])
        except Exception as e:  # a failing case reports and the others go on
            row[impl] = f"ERROR {type(e).__name__}: {str(e).splitlines()[0][:80]}"
            traceback.print_exc(file=sys.stderr)
    row["torch"] = bench(ref)
    return _format(row, nbytes, flops)


def _format(row, nbytes, flops) -> str:
    def cell(v):
        if not isinstance(v, float):
            return str(v)
        rate = f"{flops / v / 1e9:.1f} TFLOP/s" if flops else f"{nbytes / v / 1e6:.0f} GB/s"
        return f"{v:.3f} ms ({rate})"

    t, tr, th = row["tilelab"], row.get("triton"), row["torch"]
    ratio_tr = f"{t / tr:.2f}x" if isinstance(t, float) and isinstance(tr, float) else "-"
    ratio_th = f"{t / th:.2f}x" if isinstance(t, float) else "-"
    return f"| {row['case']} | {cell(t)} | {cell(tr)} | {cell(th)} | {ratio_tr} | {ratio_th} |"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", default=list(CASES), help=f"some of: {', '.join(CASES)}")
    parser.add_argument("--quick", action="store_true", help="smaller problem sizes")
    args = parser.parse_args(argv)
    print(f"device: {torch.cuda.get_device_name()}, triton: {getattr(triton, '__version__', 'not installed')}")
    print("| case | tilelab | triton | torch | tilelab/triton | tilelab/torch |")
    print("|---|---|---|---|---|---|")
    for name in args.cases:
        try:
            print(run_case(name, args.quick), flush=True)
        except Exception as e:
            print(f"| {name} | ERROR {type(e).__name__}: {str(e).splitlines()[0][:100]} | | | | |", flush=True)


if __name__ == "__main__":
    main()
