"""CPU backend tests split every grid over threads, however small, so races would show."""

import pytest

from tilelab.runtime import cpu_target


@pytest.fixture(autouse=True)
def threads_for_every_grid(monkeypatch):
    monkeypatch.setattr(cpu_target, "MIN_WORK_PER_THREAD", 1)
