"""Fixtures of the compatibility tests: the target (the CPU, and CUDA under the ``gpu`` marker) and tensors on it.

The kernels take torch tensors, as the kernel libraries' tests do; references are torch's own
ops (autograd for the backward passes) on the CPU in float64 where it matters.
"""

from __future__ import annotations

import os
import secrets

import pytest

torch = pytest.importorskip("torch")


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def target(request) -> str:
    """Where the kernels run: ``"cpu"`` or ``"cuda"``."""
    return request.param


@pytest.fixture
def device(target) -> str:
    """The torch device of the target's tensors."""
    return "cuda" if target == "cuda" else "cpu"


@pytest.fixture
def gen(request):
    """A seeded torch generator (the seed is printed; ``TILELAB_TEST_SEED`` replays a failure)."""
    seed = int(os.environ.get("TILELAB_TEST_SEED", secrets.randbits(31)))
    print(f"{request.node.nodeid}: TILELAB_TEST_SEED={seed}")
    return torch.Generator().manual_seed(seed)
