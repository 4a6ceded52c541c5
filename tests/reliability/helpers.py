"""What the reliability tests share: running a script in a fresh process, resealing a cache entry."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: a vector add kernel for the scripts (``PRELUDE`` defines it)
PRELUDE = """
import numpy as np
import tilelab
import tilelab.language as tl

@tilelab.jit
def add(x, out, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + i, tl.load(x + i, mask=i < n) + 1, mask=i < n)
"""


def run_script(body: str, tmp_path: Path, env: dict | None = None, timeout: float = 120, prelude=True):
    """Run ``PRELUDE`` + ``body`` as a script file in a fresh Python; returns the ``CompletedProcess``.

    A crash (a signal) shows as a negative return code instead of taking pytest down.
    """
    script = tmp_path / f"script_{abs(hash(body)) % 10**8}.py"
    script.write_text((PRELUDE if prelude else "") + textwrap.dedent(body))
    full_env = dict(os.environ, PYTHONPATH=str(ROOT), TILELAB_CACHE_DIR=str(tmp_path / "cache"), **(env or {}))
    return subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=timeout, env=full_env, cwd=tmp_path
    )


def entry_metadata(cache: Path) -> list[Path]:
    return sorted(cache.rglob("metadata.json"))


def reseal(meta_path: Path, edit) -> None:
    """Apply ``edit(meta)`` to an entry's metadata and make it consistent again as its owner could.

    The checksum and the MAC are recomputed with the cache's secret: what is left to catch
    the edit is the field-by-field validation.
    """
    from tilelab.runtime.cache import SECRET_FILE, sha256, to_json

    meta = json.loads(meta_path.read_text())
    edit(meta)
    root = meta_path.parents[2]
    meta["checksum"] = sha256(to_json(meta["body"]).encode())
    secret = (root / SECRET_FILE).read_bytes()
    meta["mac"] = hmac.new(secret, f"{meta['key']}:{meta['checksum']}".encode(), hashlib.sha256).hexdigest()
    meta_path.write_text(to_json(meta))
