"""The disk cache cannot be turned into code execution by anyone but its owner.

Entries hold native code that launches run. Before, anyone who could write to the cache
could replace an entry's ``obj`` blob with their own code and recompute its size, sha256
and checksum (they live in the same JSON): the next ordinary launch ran it. Now:

* each entry carries an HMAC under a per-user secret (``.secret``, mode 0600): a planted
  or edited entry is refused and rebuilt;
* a cache directory owned by another user, or writable by group or others, is not used
  (one warning; kernels compile in memory);
* blob names are their content's ``<sha256>.bin`` (no ``../`` or absolute paths).
"""

import json
import os
import stat
import warnings

import numpy as np
import pytest

from tilelab.runtime.cache import DiskCache, sha256, to_json

from .helpers import entry_metadata, run_script

#: the attacker's kernel: the same name (so the same symbols), other code
PLANTED = """
@tilelab.jit
def add(x, out, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + i, tl.zeros([BLOCK], tl.float32) + 42.0, mask=i < n)
"""

LAUNCH = """
x = np.arange(1000, dtype=np.float32)
out = np.zeros_like(x)
KERNEL[(8,)](x, out, 1000, BLOCK=128, target="cpu")
print("sum", float(out.sum()))
"""


def _obj_blob(meta_path):
    meta = json.loads(meta_path.read_text())
    info = meta["body"]["blobs"]["obj"]
    return meta, info, meta_path.parent / info["file"]


def test_planted_object_code_with_consistent_hashes_is_not_run(tmp_path):
    env = {"TILELAB_TIERED": "0"}
    other = tmp_path / "other"
    other.mkdir()
    assert "sum 42000.0" in run_script(PLANTED + LAUNCH.replace("KERNEL", "add"), other, env).stdout
    (planted_meta,) = entry_metadata(other / "cache")
    _, _, planted = _obj_blob(planted_meta)
    first = run_script(LAUNCH.replace("KERNEL", "add"), tmp_path, env)
    assert "sum 500500.0" in first.stdout, first.stderr
    (meta_path,) = entry_metadata(tmp_path / "cache")
    meta, info, _ = _obj_blob(meta_path)
    code = planted.read_bytes()
    digest = sha256(code)
    (meta_path.parent / f"{digest}.bin").write_bytes(code)
    info.update(file=f"{digest}.bin", size=len(code), sha256=digest)
    meta["checksum"] = sha256(to_json(meta["body"]).encode())  # everything but the MAC, which needs the secret
    meta_path.write_text(to_json(meta))
    second = run_script(LAUNCH.replace("KERNEL", "add"), tmp_path, env)
    assert "sum 500500.0" in second.stdout, second.stdout + second.stderr[-2000:]  # x + 1, not 42s


def test_secret_is_private_and_entries_round_trip(tmp_path):
    cache = DiskCache(tmp_path / "c")
    cache.put("ab" * 32, {"name": "k"}, {"obj": b"code"})
    assert stat.S_IMODE(os.stat(tmp_path / "c" / ".secret").st_mode) == 0o600
    assert cache.get("ab" * 32) == ({"name": "k"}, {"obj": b"code"})
    assert DiskCache(tmp_path / "c").get("ab" * 32) is not None  # a new reader with the same secret
    (tmp_path / "c" / ".secret").write_bytes(os.urandom(32))  # another secret: every MAC fails
    assert DiskCache(tmp_path / "c").get("ab" * 32) is None


@pytest.mark.parametrize("why", ["group-writable", "other-writable", "foreign"])
def test_unsafe_cache_directory_is_refused_with_one_warning(tmp_path, why, monkeypatch, rng):
    import tilelab
    from tilelab.runtime import cache as cache_module
    from tilelab.runtime import tiers

    from .test_target_agreement import scale_f16

    root = tmp_path / "shared"
    root.mkdir()
    if why == "foreign":
        if os.getuid() != 0:
            pytest.skip("only root can give a folder to another user")
        os.chown(root, 65534, -1)
    else:
        os.chmod(root, 0o775 if why == "group-writable" else 0o757)
    monkeypatch.setenv("TILELAB_CACHE_DIR", str(root))
    monkeypatch.setattr(cache_module, "_refused", set())
    x = rng.standard_normal(32).astype(np.float16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            kernel = tilelab.jit(scale_f16.fn)  # a fresh memory cache: each launch asks the disk
            out = np.zeros(32, np.float16)
            kernel[(1,)](x, out, BLOCK=32, target="cpu")
            tiers.wait()
    assert len([w for w in caught if "not using the kernel cache" in str(w.message)]) == 1
    assert not list(root.rglob("metadata.json")) and not (root / ".secret").exists()
    with np.errstate(over="ignore", invalid="ignore"):
        np.testing.assert_array_equal(out, x * np.float16(np.inf))


def test_blob_name_outside_the_entry_is_refused(tmp_path):
    cache = DiskCache(tmp_path / "c")
    key = "cd" * 32
    cache.put(key, {"name": "k"}, {"obj": b"code"})
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"code")
    meta_path = cache.entry_dir(key) / "metadata.json"
    meta = json.loads(meta_path.read_text())
    meta["body"]["blobs"]["obj"]["file"] = str(outside)
    meta_path.write_text(to_json(meta))
    assert cache.get(key) is None


def test_processes_starting_on_an_empty_cache_share_one_secret(tmp_path):
    """Eight processes make the secret at once: none reads half of it (which would turn its cache off)."""
    import subprocess
    import sys

    from .helpers import ROOT

    root = tmp_path / "c"
    code = (
        "import warnings; warnings.simplefilter('error');"
        f"from tilelab.runtime.cache import DiskCache; c = DiskCache({str(root)!r});"
        "c.put('ab' * 32, {'x': 1}, {'o': b'1'}); assert c.get('ab' * 32) is not None; print('ok')"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        for _ in range(8)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(out.strip() == b"ok" for out, _ in outs), [err[-300:] for _, err in outs]
    assert sorted(p.name for p in root.iterdir()) == [".secret", "ab"]  # no temporary file left
