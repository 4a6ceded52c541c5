"""Execute every course notebook headless on one target and print how long each took.

    python notebooks/run.py --target cuda      # on an NVIDIA GPU
    python notebooks/run.py                    # the CPU target

The notebooks read the target from ``TILELAB_TARGET`` (their ``TARGET`` variable and the
``%%tile_kernel`` default); the tour names its target in its cells, so those are switched too.
Executed copies go to a temporary folder: the committed notebooks stay without outputs.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent


def run_one(path: Path, target: str, workdir: Path) -> float:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = cell.source.replace("--target cpu", f"--target {target}")
            cell.source = cell.source.replace('target="cpu"', f'target="{target}"')
    start = time.perf_counter()
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(workdir)}})
    client.execute()
    return time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="cpu", help="cpu, cuda or interpret")
    parser.add_argument("names", nargs="*", help="notebooks to run (default: all)")
    args = parser.parse_args(argv)
    os.environ["TILELAB_TARGET"] = args.target
    os.environ["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")])
    paths = [HERE / n for n in args.names] if args.names else sorted(HERE.glob("*.ipynb"))
    failed = 0
    print(f"| notebook ({args.target}) | seconds | result |\n|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for path in paths:
            try:
                seconds = run_one(path, args.target, Path(tmp))
                print(f"| {path.name} | {seconds:.1f} | ok |", flush=True)
            except Exception as e:  # report and go on: one broken notebook must not hide the others
                failed += 1
                first = str(e).strip().splitlines()[-1][:200] if str(e).strip() else type(e).__name__
                print(f"| {path.name} | - | FAILED: {first} |", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
