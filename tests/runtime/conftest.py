"""Fixtures of the runtime tests: an isolated cache folder, a clean environment, compile counting."""

from __future__ import annotations

import pytest

from tilelab.runtime import stages


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """Each test gets its own disk cache and no target or sanitizer override from the environment."""
    monkeypatch.setenv("TILELAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TILELAB_TARGET", raising=False)
    monkeypatch.delenv("TILELAB_SANITIZE", raising=False)
    return tmp_path / "cache"


@pytest.fixture
def builds(monkeypatch):
    """A list that records the signature of every fresh frontend build (disk or memory hits add nothing)."""
    calls = []
    real = stages.build

    def counting(fn, signature, constants, divisibility):
        calls.append((fn.__name__, dict(signature), dict(constants), dict(divisibility)))
        return real(fn, signature, constants, divisibility)

    monkeypatch.setattr(stages, "build", counting)
    return calls
