"""The on-disk kernel cache: JSON metadata plus binary blobs, written atomically, never pickled.

Compiling is slow next to launching, so a compiled kernel is saved under a key that
changes whenever anything that could change the result changes (sources, tilelab's
version, signature, constants, options, target). An entry is a folder::

    <cache dir>/ab/abcdef.../metadata.json      payload + checksum + MAC + blob table
    <cache dir>/ab/abcdef.../<sha256>.bin       one file per blob, named by its content
    <cache dir>/.secret                         this user's key for the MACs (mode 0600)

Every file is written to a temporary name and moved into place with ``os.replace``, the
metadata last, so a reader sees a complete entry or none; concurrent writers of the same
key write identical names. A reader checks everything before it trusts anything:

* the cache directory belongs to this user and no one else may write it; otherwise one
  warning, and the cache is off (kernels compile in memory);
* the entry's MAC: an HMAC-SHA256 of the key and the body's checksum under the secret in
  ``.secret``. Entries hold native code that launches run, so an entry someone else
  planted (or edited, recomputing sizes and hashes) is refused: without the secret no one
  can make a valid MAC;
* every field of the metadata, by type (``conforms``), and the caller's schema of the payload;
* each blob: a name of the form ``<sha256>.bin`` (so its path stays inside the entry),
  a regular file (opened without following links or blocking on a FIFO), its length and hash.

A damaged, tampered or foreign entry reads as a miss, and the caller rebuilds it::

    cache = DiskCache(tmp_path)
    cache.put("abcd", {"name": "add"}, {"obj": b"..."})
    payload, blobs = cache.get("abcd")
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import stat
import tempfile
import warnings
from pathlib import Path

from .options import cache_dir

FORMAT = 2
SECRET_FILE = ".secret"
MAX_METADATA_BYTES = 64 << 20
_BLOB_NAME = re.compile(r"[0-9a-f]{64}\.bin")
_refused: set[str] = set()  # cache directories already warned about


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
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of ``path`` if it is a regular file (not a link, FIFO or device) of at most ``limit`` bytes.

    ``O_NONBLOCK`` makes opening a FIFO return at once (a plain open would wait for a writer).
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            raise OSError(f"{path}: not a regular file of at most {limit} bytes")
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(limit + 1)
    finally:
        os.close(fd)


def conforms(value, schema) -> bool:
    """Whether ``value`` has the shape ``schema`` describes.

    A schema is a type or tuple of types (``isinstance``), a dict of required keys to
    schemas (other keys allowed), ``[schema]`` (a list of such items) or ``{str: schema}``
    (a dict of any string keys to such values)::

        conforms({"n": 1, "names": ["a"]}, {"n": int, "names": [str]})   # True
    """
    if isinstance(schema, (type, tuple)):
        return isinstance(value, schema) and not (isinstance(value, bool) and bool not in _types(schema))
    if isinstance(schema, list):
        return isinstance(value, list) and all(conforms(v, schema[0]) for v in value)
    if list(schema) == [str]:
        items = value.items() if isinstance(value, dict) else None
        return items is not None and all(isinstance(k, str) and conforms(v, schema[str]) for k, v in items)
    return isinstance(value, dict) and all(k in value and conforms(value[k], s) for k, s in schema.items())


def _types(schema) -> tuple:
    return schema if isinstance(schema, tuple) else (schema,)


#: the metadata file's fields (the payload's are the caller's ``schema``)
METADATA_SCHEMA = {
    "format": int,
    "key": str,
    "checksum": str,
    "mac": str,
    "body": {"payload": dict, "blobs": {str: {"file": str, "size": int, "sha256": str}}},
}


def _create_secret(path: Path) -> None:
    """Write 32 random bytes to ``path`` (mode 0600) whole or not at all: another process never reads half.

    The bytes go to a private temporary file first, then ``os.link`` puts it at ``path``
    unless another process was first (then that process's secret is everyone's).
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-secret-")  # mkstemp files are 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(32))
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
    finally:
        os.unlink(tmp)


class DiskCache:
    """Entries in a folder, keyed by hex digests."""

    def __init__(self, root: str | Path | None = None):
        self.root = Path(root) if root is not None else default_cache_dir()
        self._secret: bytes | None = None

    def entry_dir(self, key: str) -> Path:
        return self.root / key[:2] / key

    def secret(self) -> bytes | None:
        """This user's MAC key, made on first use; ``None`` (cache off) when the folder is not safe to use."""
        if self._secret is None:
            try:
                self._secret = self._load_secret()
            except OSError as e:
                self._refuse(f"cannot use it ({e})")
        return self._secret

    def _load_secret(self) -> bytes | None:
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.stat(self.root)
        if info.st_uid != os.getuid():
            return self._refuse("it belongs to another user")
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return self._refuse("other users may write to it")
        path = self.root / SECRET_FILE
        if not path.exists():
            _create_secret(path)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
                return self._refuse(f"{SECRET_FILE} is not a private file of this user")
            data = f.read(64)
        return data if len(data) == 32 else self._refuse(f"{SECRET_FILE} is damaged")

    def _refuse(self, why: str) -> None:
        if str(self.root) not in _refused:
            _refused.add(str(self.root))
            warnings.warn(f"tilelab: not using the kernel cache {self.root}: {why}; compiling in memory", stacklevel=4)
        return None

    def _mac(self, key: str, checksum: str) -> str | None:
        secret = self.secret()
        return hmac.new(secret, f"{key}:{checksum}".encode(), hashlib.sha256).hexdigest() if secret else None

    def put(self, key: str, payload: dict, blobs: dict[str, bytes]) -> None:
        """Store ``payload`` (JSON-able) and ``blobs``; failures to write are ignored (the cache is optional)."""
        folder = self.entry_dir(key)
        table = {}
        try:
            body = to_json({"payload": payload, "blobs": {}})  # fails early on a payload JSON cannot hold
            if self.secret() is None:
                return
            for name, data in blobs.items():
                digest = sha256(data)
                atomic_write(folder / f"{digest}.bin", data)
                table[name] = {"file": f"{digest}.bin", "size": len(data), "sha256": digest}
            body = to_json({"payload": payload, "blobs": table})
            checksum = sha256(body.encode())
            meta = {"format": FORMAT, "key": key, "checksum": checksum, "mac": self._mac(key, checksum)}
            meta["body"] = json.loads(body)
            atomic_write(folder / "metadata.json", to_json(meta).encode())
        except (OSError, TypeError, ValueError):
            return

    def get(self, key: str, schema=dict) -> tuple[dict, dict[str, bytes]] | None:
        """``(payload, blobs)`` of a complete, intact, authentic entry whose payload conforms to ``schema``.

        ``None`` for a missing, damaged, tampered or foreign one.
        """
        if self.secret() is None:
            return None
        folder = self.entry_dir(key)
        try:
            meta = json.loads(read_regular(folder / "metadata.json", MAX_METADATA_BYTES))
            if not conforms(meta, METADATA_SCHEMA) or meta["format"] != FORMAT or meta["key"] != key:
                return None
            body = meta["body"]
            if sha256(to_json(body).encode()) != meta["checksum"]:
                return None
            if not hmac.compare_digest(meta["mac"], self._mac(key, meta["checksum"]) or ""):
                return None
            if not conforms(body["payload"], schema):
                return None
            blobs = {}
            for name, info in body["blobs"].items():
                if not _BLOB_NAME.fullmatch(info["file"]) or info["file"] != f"{info['sha256']}.bin":
                    return None  # a path outside the entry, or a name that is not its content's
                data = read_regular(folder / info["file"], info["size"])
                if len(data) != info["size"] or sha256(data) != info["sha256"]:
                    return None
                blobs[name] = data
            return body["payload"], blobs
        except (OSError, ValueError, RecursionError):
            return None
