"""Tiered compilation on the CPU target (runtime/tiers.py): quick code first, optimized code swapped in.

The quick tier and the optimized tier compile the same optimized LLVM IR with two code
generators: every kernel here must compute the very same bits with both, and the same
values as numpy.
"""

import threading

import numpy as np
import pytest

import tilelab
import tilelab.language as tl
from tests.support.cpu_kernels import F32_SIG, add
from tilelab.compiler.backends import cpu as backend
from tilelab.runtime import tiers
from tilelab.runtime.cpu_launch import CpuLauncher
from tilelab.runtime.targets import Artifact


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TILELAB_TIERED", raising=False)
    yield tmp_path / "cache"
    tiers.wait()


@tilelab.jit
def math_1d(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    y = tl.exp(x) / (1.0 + tl.sqrt(tl.abs(x))) + tl.log(tl.abs(x) + 1.0) * tl.sigmoid(x)
    tl.store(out_ptr + offs, tl.where(x > 0.5, y, x * x - 3.0), mask=mask)


@tilelab.jit
def int_1d(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + offs, (x * 7 + 3) // 5 - (x >> 2) ^ (x & 12), mask=mask)


def both_tiers(kernel, sig, constants, grid, args):
    """``args`` run by the quick and the optimized object code of ``kernel`` (copies of the arrays)."""
    ck = tilelab.compile(kernel, signature=sig, constants=constants, target="cpu", cache=False)
    compiled = backend.compile_kernel(ck.module, want_asm=False, quick=True)
    assert compiled.tier == "quick"
    objects = {"quick": compiled.obj, "optimized": backend.emit_optimized(compiled.asm["llir"])}
    results = {}
    for tier, obj in objects.items():
        launcher = CpuLauncher(Artifact(metadata=ck.artifact.metadata, blobs={"obj": obj}), ck.module)
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        launcher(grid, copies)
        results[tier] = copies
    return results


def test_the_two_tiers_compute_the_same_bits_as_each_other_and_numpy(rng):
    n = 3000
    x = (rng.standard_normal(n) * 3).astype(np.float32)
    got = both_tiers(math_1d, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 256}, (12, 1, 1),
                     [x, np.zeros_like(x), n])  # fmt: skip
    quick, optimized = got["quick"][1], got["optimized"][1]
    np.testing.assert_array_equal(quick.view(np.uint32), optimized.view(np.uint32))
    with np.errstate(all="ignore"):
        y = np.exp(x) / (1 + np.sqrt(np.abs(x))) + np.log(np.abs(x) + 1) / (1 + np.exp(-x))
    np.testing.assert_allclose(optimized, np.where(x > 0.5, y, x * x - 3), rtol=2e-5, atol=1e-5)


def test_the_two_tiers_agree_on_integer_kernels(rng):
    n = 1000
    x = rng.integers(-(2**20), 2**20, n).astype(np.int32)
    got = both_tiers(int_1d, {"x_ptr": "*i32", "out_ptr": "*i32", "n": "i32"}, {"BLOCK": 128}, (8, 1, 1),
                     [x, np.zeros_like(x), n])  # fmt: skip
    np.testing.assert_array_equal(got["quick"][1], got["optimized"][1])
    ref = tilelab.compile(int_1d, signature={"x_ptr": "*i32", "out_ptr": "*i32", "n": "i32"},
                          constants={"BLOCK": 128}, target="interpret", cache=False)  # fmt: skip
    out = np.zeros_like(x)
    ref[(8,)](x, out, n)
    np.testing.assert_array_equal(got["optimized"][1], out)


def test_a_launch_starts_on_quick_code_and_the_optimized_code_replaces_it(rng, own_cache):
    kernel = tilelab.jit(add.fn)
    n = 5000
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    ck = kernel[(tilelab.cdiv(n, 512),)](x, y, out, n, BLOCK=512, target="cpu")
    np.testing.assert_array_equal(out, x + y)
    for _ in range(50):  # launches while the upgrade runs beside them
        out[:] = np.nan
        kernel[(tilelab.cdiv(n, 512),)](x, y, out, n, BLOCK=512, target="cpu")
        np.testing.assert_array_equal(out, x + y)
    tiers.wait()
    assert ck.metadata["tier"] == "optimized" and "tier_error" not in ck.metadata
    assert ck.artifact.upgrade is None and len(ck.launcher.retired) == 1  # the quick code, kept mapped
    out[:] = np.nan
    kernel[(tilelab.cdiv(n, 512),)](x, y, out, n, BLOCK=512, target="cpu")
    np.testing.assert_array_equal(out, x + y)


def test_the_disk_cache_receives_the_optimized_tier_only(rng, own_cache):
    first = tilelab.compile(add, signature=F32_SIG, constants={"BLOCK": 256}, target="cpu")
    # a second compile of the same kernel waits for the optimized entry rather than compiling again
    second = tilelab.compile(add, signature=F32_SIG, constants={"BLOCK": 256}, target="cpu")
    assert second.from_cache and second.metadata["tier"] == "optimized" and second.artifact.upgrade is None
    assert second.artifact.blobs["obj"] == first.artifact.blobs["obj"]
    assert second.artifact.blobs["obj"] == backend.emit_optimized(first.asm["llir"])
    n = 700
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.zeros_like(x)
    second[(3,)](x, y, out, n)
    np.testing.assert_array_equal(out, x + y)


def test_tiered_off_compiles_the_optimized_code_first(monkeypatch):
    monkeypatch.setenv("TILELAB_TIERED", "0")
    ck = tilelab.compile(add, signature=F32_SIG, constants={"BLOCK": 128}, target="cpu", cache=False)
    assert ck.metadata["tier"] == "optimized" and ck.artifact.upgrade is None


def test_kernels_with_accumulators_are_never_tiered():
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    ck = tilelab.compile(row_sum, signature=sig, constants={"BLOCK": 64}, target="cpu", cache=False)
    assert ck.metadata["tier"] == "optimized" and ck.artifact.upgrade is None


@tilelab.jit
def row_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0))


def test_a_failed_upgrade_keeps_the_quick_code_and_caches_nothing(rng, own_cache, monkeypatch):
    def broken(llir):
        raise RuntimeError("no optimizing code generator today")

    monkeypatch.setattr(backend, "emit_optimized", broken)
    kernel = tilelab.jit(add.fn)
    n = 300
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.zeros_like(x)
    ck = kernel[(3,)](x, y, out, n, BLOCK=128, target="cpu")
    tiers.wait()
    assert ck.metadata["tier"] == "quick" and "no optimizing code generator" in ck.metadata["tier_error"]
    assert not list(own_cache.rglob("metadata.json"))
    out[:] = 0
    kernel[(3,)](x, y, out, n, BLOCK=128, target="cpu")
    np.testing.assert_array_equal(out, x + y)


def test_wait_from_many_threads_while_upgrades_run():
    kernels = [tilelab.jit(add.fn) for _ in range(3)]
    for i, k in enumerate(kernels):
        tilelab.compile(k, signature=F32_SIG, constants={"BLOCK": 64 << i}, target="cpu", cache=False)
    waiters = [threading.Thread(target=tiers.wait) for _ in range(4)]
    for t in waiters:
        t.start()
    for t in waiters:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in waiters)


def test_a_process_that_exits_right_after_its_first_launch_still_leaves_the_optimized_entry(tmp_path):
    """The interpreter's exit waits for the upgrade: the next process loads the optimized code, no LLVM work."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    child = (
        "import sys, numpy as np\n"
        "from tests.support.cpu_kernels import add\n"
        "x = np.arange(300, dtype=np.float32)\n"
        "out = np.zeros_like(x)\n"
        "ck = add[(3,)](x, x, out, 300, BLOCK=128, target='cpu')\n"
        "assert (out == x + x).all()\n"
        "print(ck.from_cache, ck.metadata['tier'])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(root), "TILELAB_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("TILELAB_TIERED", None)
    run = lambda: subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, env=env, cwd=root)  # noqa: E731
    first = run()
    assert first.returncode == 0, first.stderr
    assert first.stdout.split()[0] == "False"  # compiled (its tier: quick, unless the upgrade already landed)
    (entry,) = [json.loads(p.read_text()) for p in (tmp_path / "cache").rglob("metadata.json")]
    assert entry["body"]["payload"]["metadata"]["tier"] == "optimized"
    second = run()
    assert second.returncode == 0, second.stderr
    assert second.stdout.split() == ["True", "optimized"]
