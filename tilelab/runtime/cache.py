"""The on-disk kernel cache: JSON metadata plus binary blobs, written atomically, never pickled.

Compiling is slow next to launching, so a compiled kernel is saved under a key that
changes whenever anything that could change the result changes (sources, tilelab's
version, signature, constants, options, target). An entry is a folder::

    <cache dir>/ab/abcdef.../metadata.json      payload + checksum + blob table
    <cache dir>/ab/abcdef.../<sha256>.bin       one file per blob, named by its content

Every file is written to a temporary name and moved into place with ``os.replace``, the
metadata last, so a reader sees a complete entry or none; concurrent writers of the same
key write identical names. A reader checks the payload checksum and each blob's length
and hash: a truncated or tampered entry reads as a miss and is rebuilt.

    cache = DiskCache(tmp_path)
    cache.put("abcd", {"name": "add"}, {"obj": b"..."})
    payload, blobs = cache.get("abcd")
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from .options import cache_dir

FORMAT = 1


def default_cache_dir() -> Path:
    """``TILELAB_CACHE_DIR``, else ``~/.cache/tilelab`` (read by ``options.cache_dir``)."""
    return cache_dir()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def to_json(obj) -> str:
    """Canonical JSON (sorted keys); values JSON cannot hold become their ``str``."""
    return json.dumps(obj, sort_keys=True, default=str)


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers never see a partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class DiskCache:
    """Entries in a folder, keyed by hex digests."""

    def __init__(self, root: str | Path | None = None):
        self.root = Path(root) if root is not None else default_cache_dir()

    def entry_dir(self, key: str) -> Path:
        return self.root / key[:2] / key

    def put(self, key: str, payload: dict, blobs: dict[str, bytes]) -> None:
        """Store ``payload`` (JSON-able) and ``blobs``; failures to write are ignored (the cache is optional)."""
        folder = self.entry_dir(key)
        table = {}
        try:
            for name, data in blobs.items():
                digest = sha256(data)
                atomic_write(folder / f"{digest}.bin", data)
                table[name] = {"file": f"{digest}.bin", "size": len(data), "sha256": digest}
            body = to_json({"payload": payload, "blobs": table})
            meta = {"format": FORMAT, "key": key, "checksum": sha256(body.encode()), "body": json.loads(body)}
            atomic_write(folder / "metadata.json", to_json(meta).encode())
        except OSError:
            return

    def get(self, key: str) -> tuple[dict, dict[str, bytes]] | None:
        """``(payload, blobs)`` of a complete, intact entry; ``None`` for a missing or damaged one."""
        folder = self.entry_dir(key)
        try:
            meta = json.loads((folder / "metadata.json").read_text())
            body = meta["body"]
            if meta.get("format") != FORMAT or meta.get("key") != key:
                return None
            if sha256(to_json(body).encode()) != meta["checksum"]:
                return None
            blobs = {}
            for name, info in body["blobs"].items():
                data = (folder / info["file"]).read_bytes()
                if len(data) != info["size"] or sha256(data) != info["sha256"]:
                    return None
                blobs[name] = data
            return body["payload"], blobs
        except (OSError, ValueError, KeyError, TypeError):
            return None
