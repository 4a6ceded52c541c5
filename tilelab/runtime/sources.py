"""The code a disk cache key covers: the kernel's sources and the compiler's own.

A kernel's entry must change when its source changes, when a jit function it calls changes
(found through the global and closure names its code uses, transitively), and when tilelab
itself changes (so a changed pass invalidates old entries). ``Specialization.digest``
(``keys.py``) hashes these two digests with the specialization::

    source_digest(add)        # add's source and its callees'
    compiler_fingerprint()    # tilelab's version and its sources' sizes and mtimes
"""

from __future__ import annotations

import hashlib
import inspect
import os
import types
from functools import lru_cache

from tilelab._version import __version__


def function_source(fn) -> str:
    """The source text of ``fn`` (its bytecode's repr when the source is not available)."""
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return repr(fn.__code__.co_code)


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def called_jit_functions(fn) -> list:
    """The Python functions of the jit functions ``fn`` may call, transitively, in a stable order."""
    seen: dict[str, object] = {}
    stack = [fn]
    while stack:
        current = stack.pop()
        for callee in _direct_callees(current):
            ident = f"{callee.__module__}.{callee.__qualname__}"
            if ident not in seen and callee is not fn:
                seen[ident] = callee
                stack.append(callee)
    return [seen[k] for k in sorted(seen)]


def _direct_callees(fn) -> list:
    names = _code_names(fn.__code__)
    scope = dict(fn.__globals__)
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            scope[name] = cell.cell_contents
        except ValueError:
            continue
    found = []
    for name in names:
        obj = scope.get(name)
        if isinstance(obj, types.ModuleType):
            found += [getattr(obj, attr, None) for attr in names]
        else:
            found.append(obj)
    return [f._tilelab_fn for f in found if callable(getattr(f, "_tilelab_fn", None))]


def source_fingerprint(root: str, version: str) -> str:
    """A digest of ``version`` and of each Python source's path (under ``root``), size and modification time.

    Why not the sources' bytes: reading and hashing them all took ~8 ms of every process's
    first launch. Size and ``mtime`` change whenever a file is edited (the rule Python's own
    bytecode cache trusts), so an edited compiler still never reuses an old cache entry.
    Why ``scandir``: its entries already say which are folders, so a source costs one ``stat``
    and little else: about half the time of ``os.walk`` with ``os.stat``.
    """
    entries: list[str] = []
    _scan_sources(root, "", entries)
    h = hashlib.sha256(version.encode())
    h.update("".join(sorted(entries)).encode())
    return h.hexdigest()


def _scan_sources(folder: str, prefix: str, entries: list[str]) -> None:
    """Append ``path:size:mtime;`` of each ``.py`` file under ``folder`` (not in ``__pycache__`` or linked folders)."""
    with os.scandir(folder) as it:
        for entry in it:
            if entry.is_dir():
                if entry.name != "__pycache__" and not entry.is_symlink():
                    _scan_sources(entry.path, f"{prefix}{entry.name}/", entries)
            elif entry.name.endswith(".py"):
                st = entry.stat()
                entries.append(f"{prefix}{entry.name}:{st.st_size}:{st.st_mtime_ns};")


@lru_cache(maxsize=1)
def compiler_fingerprint() -> str:
    """``source_fingerprint`` of tilelab's own sources and version, taken once per process (at its first compile)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return source_fingerprint(package, __version__)


def source_digest(fn) -> str:
    """A digest of ``fn``'s source and the sources of the jit functions it calls."""
    h = hashlib.sha256(function_source(fn).encode())
    for callee in called_jit_functions(fn):
        h.update(function_source(callee).encode())
    return h.hexdigest()
