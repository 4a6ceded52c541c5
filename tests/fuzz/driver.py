"""The fuzzer's command line: run any number of random programs and print the counts.

    python -m tests.fuzz.driver --count 1000 --seed 0 --targets interpret,cpu

Programs run in a worker process, a chunk at a time, so a program that crashes the
process (a segfault in generated code) is counted as a crash, logged with its seed, and
the next worker goes on after it. Each mismatch, crash and rejected program is written
to ``--log`` (one line each: seed, status, detail); ``generate(seed).source`` replays it.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time


def worker(first: int, count: int, targets: list[str]) -> None:
    """Run seeds ``first .. first+count-1``, one JSON line per program on stdout (flushed)."""
    from .differential import run
    from .programs import generate

    abort_at = os.environ.get("TILELAB_FUZZ_ABORT_AT")  # the driver's own test: a worker that dies here
    for seed in range(first, first + count):
        print(json.dumps({"seed": seed, "start": True}), flush=True)
        if abort_at == str(seed):
            os.abort()
        program = generate(seed)
        outcome = run(program, targets)
        line = {"seed": seed, "status": outcome.status, "detail": outcome.detail, "features": sorted(program.features)}
        print(json.dumps(line), flush=True)


def run_chunk(first: int, count: int, targets: list[str], env: dict, cwd=None):
    """Yield one record per program of the chunk; a worker that dies yields a crash for the program it was on.

    The programs after a crash go to a new worker. A worker that ends before it starts any program (it cannot
    import tilelab, a target's package is missing) is an error of the run itself, raised with its last message.
    """
    end = first + count
    while first < end:
        cmd = [sys.executable, "-m", "tests.fuzz.driver", "--worker", "--seed", str(first), "--count", str(end - first)]
        cmd += ["--targets", ",".join(targets)]
        errors = tempfile.TemporaryFile("w+")  # a file, not a pipe: a worker's warnings never fill a pipe and stall it
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errors, text=True, env=env, cwd=cwd)
        current, done = None, first
        for text in proc.stdout:
            record = json.loads(text)
            if record.get("start"):
                current = record["seed"]
                continue
            done = record["seed"] + 1
            yield record
        code = proc.wait()
        errors.seek(0)
        tail = (errors.read().strip().splitlines()[-1:] or [""])[0][:200]
        errors.close()
        if code != 0 and current is not None and current >= done:
            yield {"seed": current, "status": "crash", "detail": f"exit {code}: {tail}", "features": []}
            done = current + 1
        if done == first:
            raise RuntimeError(f"a fuzz worker ended (exit {code}) before its first program: {tail}")
        first = done


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="differential fuzzer of tilelab's targets")
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0, help="the first program's seed")
    parser.add_argument("--targets", default="interpret,cpu", help="comma-separated; the first is the reference")
    parser.add_argument("--chunk", type=int, default=500, help="programs per worker process")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes running at once")
    parser.add_argument("--log", default=None, help="append mismatches, crashes and rejections here")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    targets = args.targets.split(",")
    if args.worker:
        worker(args.seed, args.count, targets)
        return 0
    env = dict(os.environ, TILELAB_TIERED="0", TILELAB_PREFETCH="0")
    counts, classes = collections.Counter(), collections.Counter()
    start, log = time.time(), open(args.log, "a") if args.log else None
    chunks = [(first, min(args.chunk, args.seed + args.count - first))
              for first in range(args.seed, args.seed + args.count, args.chunk)]  # fmt: skip

    def one_chunk(chunk):
        with _cache_dir(env) as chunk_env:
            return list(run_chunk(*chunk, targets, chunk_env))

    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:  # a worker process per thread
        for future in concurrent.futures.as_completed([pool.submit(one_chunk, chunk) for chunk in chunks]):
            records = future.result()
            for record in records:
                counts[record["status"]] += 1
                if record["status"] != "ok":
                    classes[(record["status"], record["detail"][:90])] += 1
                    if log:
                        log.write(json.dumps(record) + "\n")
                        log.flush()
            print(f"{sum(counts.values())} programs in {time.time() - start:.0f} s: {dict(counts)}", flush=True)
    for (status, detail), k in classes.most_common(40):
        print(f"{k:6d}  {status}: {detail}")
    return 1 if counts["mismatch"] or counts["crash"] else 0


class _cache_dir:
    """A fresh disk cache per chunk (every program is new: the entries would only pile up)."""

    def __init__(self, env: dict):
        self.env = env

    def __enter__(self) -> dict:
        self.folder = tempfile.TemporaryDirectory(prefix="tilelab-fuzz-cache-")
        return dict(self.env, TILELAB_CACHE_DIR=self.folder.name)

    def __exit__(self, *exc):
        self.folder.cleanup()


if __name__ == "__main__":
    sys.exit(main())
