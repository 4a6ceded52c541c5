"""``LazyTexts``: a kernel's ``asm`` mapping whose costly texts are produced on first access.

Why: some texts a compiler can show are expensive and rarely read. The CPU target's x86
assembly costs as much to emit as the object code itself, yet only the inspector and the
CLI look at it. So the target stores a *maker* for it: the mapping lists the key at once,
runs the maker on the first ``texts["asm"]`` and then remembers the result::

    texts = LazyTexts({"llir": llir}, {"asm": lambda: emit_assembly(llir)})
    "asm" in texts, texts.is_ready("asm")     # True, False
    texts["asm"]                              # emitted now, kept for next time

``ready()`` is the plain dict of the texts produced so far: what the disk cache stores
(a reloaded kernel gets fresh makers from its target, see ``with_makers``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping


class LazyTexts(Mapping):
    """A read-only ``str -> str`` mapping; keys in ``makers`` are computed on first access."""

    def __init__(self, texts: Mapping | None = None, makers: dict[str, Callable[[], str]] | None = None):
        self._texts = dict(texts or {})
        self._makers = {k: f for k, f in (makers or {}).items() if k not in self._texts}

    def __getitem__(self, key: str) -> str:
        if key not in self._texts:
            maker = self._makers[key]  # KeyError for an unknown key, as a dict would raise
            self._texts[key] = maker()
            del self._makers[key]
        return self._texts[key]

    def __iter__(self):
        yield from self._texts
        yield from list(self._makers)

    def __len__(self) -> int:
        return len(self._texts) + len(self._makers)

    def __contains__(self, key) -> bool:
        return key in self._texts or key in self._makers

    def __repr__(self) -> str:
        pending = ", ".join(self._makers)
        return f"LazyTexts(ready={list(self._texts)}, pending=[{pending}])"

    def is_ready(self, key: str) -> bool:
        """Whether ``key``'s text exists already (never runs a maker)."""
        return key in self._texts

    def ready(self) -> dict[str, str]:
        """The texts produced so far, as a plain dict (makers are not run)."""
        return dict(self._texts)


def ready_texts(texts: Mapping) -> dict[str, str]:
    """The texts of ``texts`` that exist without running a maker (a plain dict passes through whole)."""
    return texts.ready() if isinstance(texts, LazyTexts) else dict(texts)


def merged(*parts: Mapping) -> Mapping:
    """One mapping holding every part's texts (later parts win), keeping lazy texts lazy."""
    texts, makers = {}, {}
    for part in parts:
        if isinstance(part, LazyTexts):
            texts.update(part._texts)
            makers.update(part._makers)
            for key in part._makers:
                texts.pop(key, None)
            for key in part._texts:
                makers.pop(key, None)
        else:
            texts.update(part)
            for key in part:
                makers.pop(key, None)
    return LazyTexts(texts, makers) if makers else texts


def with_makers(target, texts: Mapping, options) -> Mapping:
    """``texts`` plus the lazy texts ``target`` can rebuild from them (its ``deferred_texts(texts, options)`` hook)."""
    hook = getattr(target, "deferred_texts", None)
    makers = hook(texts, options) if hook is not None else {}
    return LazyTexts(texts, makers) if makers else texts
