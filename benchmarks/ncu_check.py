"""Checks the coalescing and bank-conflict models against Nsight Compute on tilelab's own CUDA code.

Why: the inspector predicts, from the layouts of the compiled tile IR and the addresses of one
launch, the sectors per request of every global load/store and the wavefronts of every shared
access. Here each of four kernels is compiled for the GPU (4 warps), its model numbers are
computed, then the script runs itself under ``ncu`` once per kernel and compares:

    python benchmarks/ncu_check.py            # model, then ncu per case, then a markdown table
    python benchmarks/ncu_check.py --model    # model numbers only (also what happens without ncu)

Global: ``sectors / requests`` of ``l1tex__t_{sectors,requests}_pipe_lsu_mem_global_op_{ld,st}``
against the model's whole-kernel ratio (it is the same in every program: bases are aligned).
Shared: ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}`` against the model's
conflicts (wavefronts beyond one per scalar request) times the number of programs; within 5%.
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tilelab  # noqa: E402
import tilelab.language as tl  # noqa: E402

NUM_WARPS = 4
N = 4096
METRICS = [
    f"l1tex__t_{what}_pipe_lsu_mem_global_op_{kind}.sum" for what in ("sectors", "requests") for kind in ("ld", "st")
] + [f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{kind}.sum" for kind in ("ld", "st")]


@tilelab.jit
def copy(x, out, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs))


@tilelab.jit
def stride2(x, out, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + 2 * offs))


@tilelab.jit
def column(x, out, N: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + tl.program_id(1) * N + rows, tl.load(x + rows * N + tl.program_id(1)))


@tilelab.jit
def transpose(x, out, N: tl.constexpr, B: tl.constexpr):
    rows = tl.program_id(0) * B + tl.arange(0, B)
    cols = tl.program_id(1) * B + tl.arange(0, B)
    tile = tl.load(x + rows[:, None] * N + cols[None, :])
    tl.store(out + cols[:, None] * N + rows[None, :], tl.trans(tile))


@dataclass
class Case:
    """One kernel: its constants, grid, and the element counts of ``x`` and ``out``."""

    kernel: object
    constants: dict
    grid: tuple
    x_elems: int
    out_elems: int

    @property
    def programs(self) -> int:
        return math.prod(self.grid)


CASES = {
    "copy": Case(copy, {"BLOCK": 1024}, (N * N // 1024,), N * N, N * N),
    "stride2": Case(stride2, {"BLOCK": 1024}, (N * N // 2048,), N * N, N * N // 2),
    "column": Case(column, {"N": N, "BLOCK": 1024}, (N // 1024, N), N * N, N * N),
    "transpose": Case(transpose, {"N": N, "B": 64}, (N // 64, N // 64), N * N, N * N),
}


def compile_case(case: Case):
    sig = {"x": "*fp32", "out": "*fp32"}
    return tilelab.compile(
        case.kernel, signature=sig, constants=case.constants, target="cuda:sm_90a", num_warps=NUM_WARPS, cache=False
    )


# --------------------------------------------------------------------------- the model


def model_numbers(case: Case, compiled=None) -> dict:
    """Whole-kernel model figures: sectors and requests per kind, shared conflicts per kind."""
    from tilelab.compiler.analysis.memory_access import shared_round_trips
    from tilelab.viz.plugins.coalescing import kernel_accesses
    from tilelab.viz.plugins.launch import set_launch

    compiled = compiled or compile_case(case)
    x, out = np.empty(case.x_elems, np.float32), np.empty(case.out_elems, np.float32)
    set_launch(compiled, case.grid, x, out)
    rows, _ = kernel_accesses(compiled)
    out_numbers = {}
    for kind, short in (("load", "ld"), ("store", "st")):
        mine = [r.cost for r in rows if r.access.kind == kind]
        sectors = sum(c.sectors for c in mine) * case.programs
        requests = sum(c.requests for c in mine) * case.programs
        out_numbers[short] = (sectors, requests)
    trips = shared_round_trips(compiled.module, NUM_WARPS)
    for kind in ("ld", "st"):
        out_numbers[f"shared_{kind}"] = sum(t.conflicts(kind) for t in trips) * case.programs
    out_numbers["shared_ptx"] = ("st.shared" in compiled.asm["ptx"], "ld.shared" in compiled.asm["ptx"])
    return out_numbers


# --------------------------------------------------------------------------- the GPU side


def run_child(name: str) -> None:
    """Launch one case's kernel once on the GPU (what ``ncu`` profiles) and check its result."""
    import torch

    case = CASES[name]
    compiled = compile_case(case)
    x = torch.randn(case.x_elems, device="cuda", dtype=torch.float32)
    out = torch.empty(case.out_elems, device="cuda", dtype=torch.float32)
    compiled[case.grid](x, out)
    torch.cuda.synchronize()
    expected = {
        "copy": lambda: x,
        "stride2": lambda: x[::2],
        "column": lambda: x.view(N, N).t().reshape(-1),
        "transpose": lambda: x.view(N, N).t().reshape(-1),
    }[name]()
    if not torch.equal(out, expected):
        raise SystemExit(f"{name}: wrong result on the GPU")


def run_ncu(ncu: str, name: str) -> dict:
    """Profile ``--child name`` and return ``{metric: value}`` summed over the kernel launches."""
    cmd = [ncu, "--clock-control", "none", "--csv", "--metrics", ",".join(METRICS)]
    # only tilelab's kernel: the child's torch kernels (random inputs, the check) are not profiled
    cmd += ["--kernel-name-base", "function", "--kernel-name", name, "--launch-count", "1"]
    cmd += [sys.executable, os.path.abspath(__file__), "--child", name]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"ncu failed for {name}: {done.stderr[-2000:] or done.stdout[-2000:]}")
    return parse_csv(done.stdout)


def parse_csv(text: str) -> dict:
    """Metric sums of ``ncu --csv`` output (lines before the header are the program's own output)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    totals: dict = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        value = row["Metric Value"].replace(",", "")
        try:
            totals[row["Metric Name"]] = totals.get(row["Metric Name"], 0.0) + float(value)
        except ValueError:
            continue
    return totals


def ratio(sectors: float, requests: float) -> str:
    return f"{sectors / requests:.2f}" if requests else "-"


def within(model: float, measured: float, tolerance: float = 0.05) -> bool:
    return abs(model - measured) <= tolerance * max(abs(measured), 1.0)


def table_row(name: str, model: dict, ncu: dict | None) -> list[str]:
    """One markdown row: model vs ncu for ld and st sectors/request and shared conflicts, and a verdict."""
    row = [name, ratio(*model["ld"]), "", ratio(*model["st"]), "", f"{model['shared_ld']}/{model['shared_st']}", ""]
    if ncu is None:
        return row[:-1] + ["(no ncu)", "model only"]
    got = {k: ncu.get(f"l1tex__t_{w}_pipe_lsu_mem_global_op_{k}.sum", 0.0) for k in ("ld", "st") for w in ("sectors",)}
    req = {k: ncu.get(f"l1tex__t_requests_pipe_lsu_mem_global_op_{k}.sum", 0.0) for k in ("ld", "st")}
    shared = {k: ncu.get(f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{k}.sum", 0.0) for k in ("ld", "st")}
    row[2], row[4] = ratio(got["ld"], req["ld"]), ratio(got["st"], req["st"])
    row[6] = f"{shared['ld']:.0f}/{shared['st']:.0f}"
    ok = all(row[1 + 2 * i] == row[2 + 2 * i] for i in range(2))
    ok = ok and within(model["shared_ld"], shared["ld"]) and within(model["shared_st"], shared["st"])
    return row + ["match" if ok else "MISMATCH"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help="launch one case (run under ncu)")
    parser.add_argument("--model", action="store_true", help="model numbers only")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated cases")
    args = parser.parse_args()
    if args.child:
        run_child(args.child)
        return
    ncu = None if args.model else shutil.which("ncu")
    if ncu is None and not args.model:
        print("ncu not found on PATH: printing the model numbers only\n")
    header = ["case", "ld sectors/req model", "ld ncu", "st sectors/req model", "st ncu"]
    header += ["shared conflicts ld/st model", "ncu", "verdict"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name in args.cases.split(","):
        model = model_numbers(CASES[name])
        measured = run_ncu(ncu, name) if ncu else None
        label = f"{name} (PTX has st.shared+ld.shared)" if all(model["shared_ptx"]) else name
        print("| " + " | ".join(table_row(label, model, measured)) + " |", flush=True)
        if measured is not None:
            print(f"<!-- {name} raw ncu: {measured} -->", flush=True)


if __name__ == "__main__":
    main()
