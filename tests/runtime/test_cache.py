"""The caches: in memory per kernel, on disk across processes; damaged entries are rebuilt."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

import tilelab
from tilelab.runtime import tiers
from tilelab.runtime.cache import DiskCache
from tilelab.runtime.sources import called_jit_functions, source_digest

from . import kernels
from .kernels import add


def run_add(rng, n=100, block=32, kernel=None):
    kernel = kernel or fresh_add()
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.full_like(x, np.nan)
    ck = kernel[(tilelab.cdiv(n, block),)](x, y, out, n, BLOCK=block)
    np.testing.assert_allclose(out, x + y, rtol=1e-6)
    tiers.wait()  # on the CPU target the entry is written once the optimized code is made (tiers.py)
    return ck


def fresh_add():
    """A new JITFunction over the same Python function: an empty memory cache."""
    return tilelab.jit(add.fn)


def entry_dirs(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.rglob("metadata.json"))


def test_memory_cache_compiles_each_specialization_once(builds, rng, monkeypatch, tmp_path):
    kernel = fresh_add()
    run_add(rng, n=100, kernel=kernel)
    monkeypatch.setenv("TILELAB_CACHE_DIR", str(tmp_path / "empty"))  # hits must come from memory
    run_add(rng, n=200, kernel=kernel)  # same signature, same divisibility (1): no new compile
    assert len(builds) == 1
    run_add(rng, n=256, kernel=kernel)  # n % 16 == 0: a new specialization
    run_add(rng, n=100, block=64, kernel=kernel)  # a new constexpr value
    assert len(builds) == 3


def test_disk_cache_skips_the_frontend(builds, rng, isolated):
    first = run_add(rng, kernel=fresh_add())
    second = run_add(rng, kernel=fresh_add())
    assert len(builds) == 1
    assert not first.from_cache and second.from_cache
    assert second.asm["tile"] == first.asm["tile"]
    assert second.arg_names == first.arg_names == ["x", "y", "out", "n"]
    assert len(entry_dirs(isolated)) == 1


def test_disk_cache_keeps_function_attributes(rng, isolated):
    """Facts the IR text leaves out (alignment, source) come back from a cache entry too."""
    first = run_add(rng, n=256, kernel=fresh_add())
    second = run_add(rng, n=256, kernel=fresh_add())
    assert second.from_cache
    before, after = first.module.kernel.attrs, second.module.kernel.attrs
    assert after["arg_divisibility"] == before["arg_divisibility"] == (16, 16, 16, 16)
    assert after["source"] == before["source"] and after["first_line"] == before["first_line"]


def test_entry_without_function_attributes_reads_the_source(rng, isolated):
    """An entry that lacks the kernel's recorded origin (older tilelab) gets it from the Python function."""
    first = run_add(rng, kernel=fresh_add())
    (entry,) = entry_dirs(isolated)
    payload, blobs = DiskCache(isolated).get(entry.name)
    del payload["func_attrs"]
    DiskCache(isolated).put(entry.name, payload, blobs)
    second = run_add(rng, kernel=fresh_add())
    assert second.from_cache and "source" not in second.module.kernel.attrs
    assert "def add(" in second.source and second.source == first.source
    assert (second.filename, second.first_line) == (first.filename, first.first_line)


ADD_SIGNATURE = {"x": "*f32", "y": "*f32", "out": "*f32", "n": "i32"}


def compile_for_cuda(kernel):
    """``add`` compiled for sm_90a through the disk cache (no GPU: the launcher loads on its first launch)."""
    return tilelab.compile(kernel, ADD_SIGNATURE, {"BLOCK": 32}, target="cuda:sm_90a", snapshots=False)


def test_cuda_entry_launches_without_parsing_its_tile_ir(isolated, monkeypatch):
    """A CUDA kernel loaded from the disk cache parses its tile IR only when something reads ``module``."""
    from tilelab.runtime import stages

    first = compile_for_cuda(fresh_add())
    parses = []
    real = stages.parse_ir
    monkeypatch.setattr(stages, "parse_ir", lambda text: parses.append(text) or real(text))
    second = compile_for_cuda(fresh_add())
    assert second.from_cache and parses == []
    for field in ("entry", "names", "kinds", "scalar_types", "arity"):
        assert getattr(second.launcher, field) == getattr(first.launcher, field), field
    assert second.launcher.names == ["x", "y", "out", "n"] and second.launcher.kinds == ["ptr"] * 3 + ["i32"]
    assert second.written() == first.written() == {"out"}
    assert second.promised() == first.promised() == [("x", 16), ("y", 16), ("out", 16)]
    assert (second.source, second.filename, second.first_line) == (first.source, first.filename, first.first_line)
    assert stages.print_ir(second.module) == first.asm["tile"] and len(parses) == 1
    assert second.module.kernel.attrs["arg_divisibility"] == first.module.kernel.attrs["arg_divisibility"]
    assert second.module is second.module and len(parses) == 1  # parsed once


def test_entry_stores_each_text_once(isolated):
    """The artifact's texts (LLVM IR, PTX) are stored under ``artifact_asm`` only, and come back whole."""
    first = compile_for_cuda(fresh_add())
    (entry,) = entry_dirs(isolated)
    payload, _ = DiskCache(isolated).get(entry.name)
    assert set(payload["asm"]) == {"tile"} and {"llir", "ptx"} <= set(payload["artifact_asm"])
    second = compile_for_cuda(fresh_add())
    assert second.from_cache
    for kind in ("tile", "llir", "ptx"):
        assert second.asm[kind] == first.asm[kind], kind


def test_lazily_parsed_entry_names_the_loading_file(isolated, tmp_path):
    """The same kernel text at another line of another file: the parsed module's locations follow the loader."""
    import importlib.util

    text = textwrap.dedent(Path(kernels.__file__).read_text().split("@tilelab.jit\n", 2)[1].split("\n\n\n")[0])
    header = "import tilelab\nimport tilelab.language as tl\n\n\n"

    def load(name, padding):
        path = tmp_path / f"{name}.py"
        path.write_text(header + "\n" * padding + "@tilelab.jit\n" + text + "\n")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.add, str(path)

    (a, a_path), (b, b_path) = load("lines_a", 0), load("lines_b", 7)
    first, second = compile_for_cuda(a), compile_for_cuda(b)
    assert second.from_cache and (second.filename, second.first_line) == (b_path, first.first_line + 7)
    lines = {(op.loc.file, op.loc.line) for op in second.module.walk() if op.loc.file in (a_path, b_path)}
    expected = {(b_path, op.loc.line + 7) for op in first.module.walk() if op.loc.file == a_path}
    assert lines and lines == expected
    assert second.module.kernel.attrs["first_line"] == second.first_line


def test_disk_entry_is_json_and_blobs(rng, isolated):
    run_add(rng)
    (entry,) = entry_dirs(isolated)
    meta = json.loads((entry / "metadata.json").read_text())
    assert meta["body"]["payload"]["name"] == "add"
    assert "tt.func" in meta["body"]["payload"]["asm"]["tile"]
    assert {p.suffix for p in entry.iterdir()} <= {".json", ".bin"}


@pytest.mark.parametrize("damage", ["truncate", "garbage", "edit_payload", "drop_blob", "edit_blob"])
def test_damaged_disk_entry_is_rebuilt(damage, builds, rng, isolated, monkeypatch):
    from tilelab.runtime import targets

    class BlobTarget(targets.InterpretTarget):
        def compile(self, module, options):
            return targets.Artifact({"llir": "; text"}, {"shared": 0}, {"obj": b"\x7fELF" + bytes(range(64))})

    monkeypatch.setitem(targets.TARGETS, "blobby", lambda arch=None: BlobTarget())
    run_add_on = lambda: fresh_add()[(4,)]  # noqa: E731
    x, y = rng.standard_normal(100).astype(np.float32), rng.standard_normal(100).astype(np.float32)
    run_add_on()(x, y, np.empty_like(x), 100, BLOCK=32, target="blobby")
    (entry,) = entry_dirs(isolated)
    meta_path = entry / "metadata.json"
    blob = next(entry.glob("*.bin"))
    if damage == "truncate":
        meta_path.write_text(meta_path.read_text()[:-40])
    elif damage == "garbage":
        meta_path.write_bytes(b"\x00\xff not json")
    elif damage == "edit_payload":
        meta_path.write_text(meta_path.read_text().replace('"name": "add"', '"name": "evil"'))
    elif damage == "drop_blob":
        blob.unlink()
    else:
        blob.write_bytes(blob.read_bytes()[:-1] + b"X")
    out = np.full_like(x, np.nan)
    ck = run_add_on()(x, y, out, 100, BLOCK=32, target="blobby")
    np.testing.assert_allclose(out, x + y, rtol=1e-6)
    assert len(builds) == 2 and not ck.from_cache and ck.name == "add"
    assert ck.artifact.blobs["obj"].startswith(b"\x7fELF")
    assert DiskCache(isolated).get(entry.name) is not None  # the rebuild rewrote a valid entry


def test_disk_cache_roundtrip_and_miss(tmp_path):
    cache = DiskCache(tmp_path)
    assert cache.get("ab" * 32) is None
    cache.put("ab" * 32, {"text": "é", "n": [1, 2]}, {"a": b"\x00\x01", "b": b""})
    assert cache.get("ab" * 32) == ({"text": "é", "n": [1, 2]}, {"a": b"\x00\x01", "b": b""})
    assert cache.get("cd" * 32) is None


def test_concurrent_writers_leave_one_valid_entry(tmp_path):
    key = "ef" * 32
    blobs = {"obj": bytes(range(256)) * 512}

    def write(i):
        DiskCache(tmp_path).put(key, {"writer": "same", "i": 0}, blobs)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    code = f"from tilelab.runtime.cache import DiskCache; DiskCache({str(tmp_path)!r}).put({key!r}, {{'p': 1}}, {{}})"
    procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(3)]
    assert all(p.wait() == 0 for p in procs)
    payload, got = DiskCache(tmp_path).get(key)
    assert payload in ({"writer": "same", "i": 0}, {"p": 1})
    assert not [p for p in tmp_path.rglob(".tmp-*")], "temporary files left behind"


def test_source_digest_follows_called_jit_functions(tmp_path, monkeypatch):
    assert [f.__name__ for f in called_jit_functions(kernels.add_twice.fn)] == ["twice"]
    module = tmp_path / "mykern.py"
    body = """
        import tilelab

        @tilelab.jit
        def helper(v):
            return v {op} 2

        @tilelab.jit
        def kern(x):
            helper(x)
    """
    monkeypatch.syspath_prepend(str(tmp_path))
    digests = []
    for op in "*+":
        module.write_text(textwrap.dedent(body.format(op=op)))
        sys.modules.pop("mykern", None)
        import mykern

        digests.append(source_digest(mykern.kern.fn))
    sys.modules.pop("mykern", None)
    assert digests[0] != digests[1]


def test_cache_dir_defaults_to_home(monkeypatch, tmp_path):
    monkeypatch.delenv("TILELAB_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert DiskCache().root == tmp_path / ".cache" / "tilelab"
