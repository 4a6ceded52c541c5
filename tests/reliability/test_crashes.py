"""Inputs that crashed the whole process now give an error or a result (each run in a fresh process).

* tiles over 2**20 elements: a compile error naming the line (Triton's limit); a 2**20-element
  softmax row, whose tiles overflowed a thread's stack on the CPU target, runs;
* ``sanitize=True`` launches from several threads of a warm kernel (two threads compiled the
  sanitized variant at once inside LLVM);
* cache entries damaged but consistent (checksums and MAC recomputed): a grid symbol that names
  nothing, a string where a number belongs, a missing key, a FIFO in place of ``metadata.json``.
  Each reads as a miss, and the kernel is compiled again and runs.
"""

import os

import numpy as np
import pytest

from .helpers import entry_metadata, reseal, run_script

LAUNCH = """
x = np.arange(1000, dtype=np.float32)
out = np.zeros_like(x)
add[(8,)](x, out, 1000, BLOCK=128, target="cpu")
assert (out == x + 1).all(), out
print("ran")
"""


def test_tile_over_two_to_the_twenty_is_a_compile_error(tmp_path):
    body = """
    x = np.ones(1000, np.float32)
    try:
        add[(1,)](x, np.zeros_like(x), 1000, BLOCK=2**21, target="cpu")
    except Exception as e:
        print(type(e).__name__, e)
    """
    result = run_script(body, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "CompilationError" in result.stdout and "2097152 elements" in result.stdout
    assert "over the limit of 1048576" in result.stdout and ".py:8:" in result.stdout  # the arange line


def test_softmax_row_of_two_to_the_twenty_runs_on_cpu(tmp_path):
    body = """
    @tilelab.jit
    def softmax(x, out, n, BLOCK: tl.constexpr):
        i = tl.arange(0, BLOCK)
        v = tl.load(x + i, mask=i < n, other=-float("inf"))
        e = tl.exp(v - tl.max(v, axis=0))
        tl.store(out + i, e / tl.sum(e, axis=0), mask=i < n)

    x = np.random.default_rng(1).standard_normal(5000).astype(np.float32)
    out = np.zeros_like(x)
    softmax[(1,)](x, out, x.size, BLOCK=2**20, target="cpu")
    e = np.exp(x - x.max())
    np.testing.assert_allclose(out, e / e.sum(), rtol=1e-5)
    print("ran")
    """
    result = run_script(body, tmp_path)
    assert result.returncode == 0 and "ran" in result.stdout, result.stderr[-2000:]


def test_sanitized_launches_from_four_threads(tmp_path):
    body = """
    import threading
    x = np.arange(1000, dtype=np.float32)
    add[(8,)](x, np.zeros_like(x), 1000, BLOCK=128, target="cpu")  # warm

    def work():
        for _ in range(10):
            out = np.zeros_like(x)
            add[(8,)](x, out, 1000, BLOCK=128, target="cpu", sanitize=True)
            assert (out == x + 1).all()

    threads = [threading.Thread(target=work) for _ in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    print("ran")
    """
    for _ in range(2):
        result = run_script(body, tmp_path)
        assert result.returncode == 0 and "ran" in result.stdout, result.stderr[-2000:]


def _edit_grid_symbol(meta):
    meta["body"]["payload"]["artifact_metadata"]["grid_symbol"] = "no_such_function"


def _edit_number_to_string(meta):
    meta["body"]["payload"]["passes"][0]["seconds"] = "fast"


def _edit_missing_passes(meta):
    del meta["body"]["payload"]["passes"]


def _edit_blob_path(meta):
    for info in meta["body"]["blobs"].values():
        info["file"] = "../../../outside.bin"


@pytest.mark.parametrize("edit", [_edit_grid_symbol, _edit_number_to_string, _edit_missing_passes, _edit_blob_path])
def test_consistent_but_damaged_entry_is_a_miss_and_rebuilt(tmp_path, edit):
    env = {"TILELAB_TIERED": "0"}
    first = run_script(LAUNCH, tmp_path, env)
    assert first.returncode == 0, first.stderr
    (meta,) = entry_metadata(tmp_path / "cache")
    reseal(meta, edit)
    second = run_script(LAUNCH, tmp_path, env)
    assert second.returncode == 0 and "ran" in second.stdout, second.stderr[-2000:]
    assert "no_such_function" not in meta.read_text() and "outside.bin" not in meta.read_text()  # rebuilt


def test_fifo_in_place_of_metadata_does_not_hang(tmp_path):
    env = {"TILELAB_TIERED": "0"}
    assert run_script(LAUNCH, tmp_path, env).returncode == 0
    (meta,) = entry_metadata(tmp_path / "cache")
    meta.unlink()
    os.mkfifo(meta)
    second = run_script(LAUNCH, tmp_path, env, timeout=60)
    assert second.returncode == 0 and "ran" in second.stdout, second.stderr[-2000:]


def test_launch_after_damage_matches_numpy(tmp_path, rng):
    """The rebuilt kernel computes the right values (checked in-process against numpy)."""
    x = rng.standard_normal(300).astype(np.float32)
    body = f"""
    x = np.array({x.tolist()}, dtype=np.float32)
    out = np.zeros_like(x)
    add[(3,)](x, out, x.size, BLOCK=128, target="cpu")
    np.save("out.npy", out)
    """
    env = {"TILELAB_TIERED": "0"}
    assert run_script(body, tmp_path, env).returncode == 0
    (meta,) = entry_metadata(tmp_path / "cache")
    reseal(meta, _edit_grid_symbol)
    assert run_script(body, tmp_path, env).returncode == 0
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), x + 1, rtol=1e-6)
