"""A table filled by decorators, that names the modules holding its entries and imports them itself.

The lowering of an op, the interpreter's handler of it, its axis-info rule: each is a small
function next to its kin, registered with a decorator. A plain dict filled that way only has
its entries once somebody has imported the right modules for their side effect -- nothing
in the code says which. A ``Registry`` says it where it is made, and imports those modules
the first time it is read::

    LOWERINGS = Registry(
        "CPU lowering",
        __package__,
        modules=("lower_control", "lower_memory"),    # imported on the first lookup
        on_demand={"lower_dot": (DotOp,)},            # imported when one of these keys is looked up
    )

    @LOWERINGS.register(LoadOp)
    def lower_load(lw, op): ...

    LOWERINGS.get(LoadOp)

``on_demand`` keeps modules that few kernels need off the first compile of the others (the
backends' tests check that such a module registers exactly the keys it is listed for).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping


class Registry(Mapping):
    """``key -> entry``; the entries live in ``modules`` and ``on_demand`` (module names relative to ``package``)."""

    def __init__(self, what: str, package: str, modules: Iterable[str] = (), on_demand: dict | None = None):
        self.what = what
        self.package = package
        self.modules = tuple(modules)
        self.on_demand = {module: tuple(keys) for module, keys in (on_demand or {}).items()}
        self._module_of = {key: module for module, keys in self.on_demand.items() for key in keys}
        self._entries: dict = {}
        self._loaded = False
        self._lock = threading.RLock()

    def register(self, *keys) -> Callable:
        """Decorator: the function becomes the entry of every key in ``keys``."""

        def add(fn):
            for key in keys:
                self._entries[key] = fn
            return fn

        return add

    def load(self) -> None:
        """Import ``modules`` (once): after this, every entry but the on-demand ones is present."""
        if self._loaded:
            return
        with self._lock:
            if not self._loaded:
                for module in self.modules:
                    importlib.import_module(f"{self.package}.{module}")
                self._loaded = True

    def load_all(self) -> None:
        """Import the on-demand modules too (for views and tests that list every entry)."""
        self.load()
        for module in self.on_demand:
            importlib.import_module(f"{self.package}.{module}")

    def get(self, key, default=None):
        entry = self._entries.get(key)  # the common case: one dict lookup
        if entry is None:
            entry = self._find(key)
        return default if entry is None else entry

    def _find(self, key):
        """The entry of ``key`` once ``modules`` and, when ``key`` is one of theirs, its on-demand module are in."""
        self.load()
        if key not in self._entries and key in self._module_of:
            importlib.import_module(f"{self.package}.{self._module_of[key]}")
        return self._entries.get(key)

    def __getitem__(self, key):
        entry = self.get(key)
        if entry is None:
            raise KeyError(f"no {self.what} for {key!r}")
        return entry

    def __iter__(self) -> Iterator:
        self.load_all()
        return iter(dict(self._entries))

    def __len__(self) -> int:
        self.load_all()
        return len(self._entries)

    def __contains__(self, key) -> bool:
        return self.get(key) is not None

    def loaded(self) -> dict:
        """The entries registered so far, without importing anything (what a first compile has loaded)."""
        return dict(self._entries)
