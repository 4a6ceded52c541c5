"""Time from running a ``%%tile_kernel`` cell to its inspector being displayed (goal: < 1 s, vector add, CPU).

Runs the cell in a real IPython shell: the first run of a fresh kernel (cold: imports, pipeline,
LLVM) and later runs of new kernels (warm: a new name each time, so nothing is cached), then
the parts of a warm run: ``tilelab.compile`` alone and the inspector alone. The anchor is a plain
Python cell defining the same function, run the same way.

    python benchmarks/cell_latency.py [--target cpu|interpret] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

KERNEL = """def {name}(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)
"""
LINE = '--target {target} --signature "x=*fp32, y=*fp32, out=*fp32, n=i32" --const BLOCK=1024 --show passes'


def _shell():
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython()
    ip.run_line_magic("load_ext", "tilelab")
    return ip


def _time_cell(ip, name: str, target: str) -> float:
    import tilelab.magics.magics as magics

    shown = []
    magics.display = shown.append  # "displayed" = the widget handed to IPython's display
    start = time.perf_counter()
    ip.run_cell_magic("tile_kernel", LINE.format(target=target), KERNEL.format(name=name))
    elapsed = time.perf_counter() - start
    assert shown, "the cell displayed nothing"
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    t0 = time.perf_counter()
    ip = _shell()
    shell_s = time.perf_counter() - t0
    cold = _time_cell(ip, "add_cold", args.target)
    warm = [_time_cell(ip, f"add_{i}", args.target) for i in range(args.repeat)]
    anchor = []
    for i in range(args.repeat):
        start = time.perf_counter()
        ip.run_cell(KERNEL.format(name=f"plain_{i}"))
        anchor.append(time.perf_counter() - start)
    import tilelab
    from tilelab.viz import Inspector

    kernel = ip.user_ns[f"add_{args.repeat - 1}"]
    sig = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32"}
    start = time.perf_counter()
    compiled = tilelab.compile(kernel, signature=sig, constants={"BLOCK": 1024}, target=args.target, cache=False)
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    Inspector(compiled, show="passes")
    inspector_s = time.perf_counter() - start
    w = statistics.median(warm)
    a = statistics.median(anchor)
    print(f"target {args.target}: IPython shell start {shell_s:.3f} s")
    print(f"  cold cell (first in the kernel)  {cold:.3f} s   goal < 1 s: {'ok' if cold < 1 else 'MISSED'}")
    print(f"  warm cell (median of {args.repeat})       {w:.3f} s   goal < 1 s: {'ok' if w < 1 else 'MISSED'}")
    print(f"    of which tilelab.compile       {compile_s:.3f} s")
    print(f"    of which the inspector         {inspector_s:.3f} s")
    print(f"  anchor: plain Python cell        {a * 1e3:.3f} ms   (warm cell / anchor = {w / a:.0f}x)")


if __name__ == "__main__":
    main()
