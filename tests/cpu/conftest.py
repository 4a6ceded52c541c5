"""CPU backend tests split every grid over threads, however small, so races would show."""

import pytest

from tilelab.runtime import cpu_launch, options

#: the runtime's own choice of threads (``threads_for_every_grid`` replaces it in these tests)
REAL_THREADS_FOR = cpu_launch.CpuLauncher._threads_for


@pytest.fixture(autouse=True)
def threads_for_every_grid(monkeypatch):
    monkeypatch.setattr(
        cpu_launch.CpuLauncher, "_threads_for", lambda self, programs: min(options.num_threads(), programs)
    )


@pytest.fixture
def real_thread_policy(monkeypatch):
    """The runtime's own choice of threads, for the tests of that choice."""
    monkeypatch.setattr(cpu_launch.CpuLauncher, "_threads_for", REAL_THREADS_FOR)
