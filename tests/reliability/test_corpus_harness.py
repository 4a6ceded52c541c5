"""The corpus benchmark's harness on the CPU: every case's setup builds, and its outputs take the poison.

A GPU run checks each config after filling its outputs with NaN (``poison``); an output object
that cannot be filled that way failed every config of its case, under both compilers.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from benchmarks.corpus.cases import CASES  # noqa: E402
from benchmarks.corpus.run import TorchMaker, poison  # noqa: E402


class OneElementMaker(TorchMaker):
    """Tensors of the requested rank and dtype, one element each, on the CPU: enough to build a setup."""

    def __init__(self):
        self.torch = torch
        self.dtypes = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
                       "fp8e4": torch.float8_e4m3fn, "i32": torch.int32}  # fmt: skip
        self.one = torch.tensor(1.0)

    def empty(self, *shape, dtype="f32"):
        return torch.zeros((1,) * len(shape), dtype=self.dtypes[dtype])

    randn = zeros = empty

    def randint(self, high, shape):
        return torch.zeros((1,) * len(shape), dtype=torch.int32)

    def int8(self, *shape):
        return torch.zeros((1,) * len(shape), dtype=torch.int8)


@pytest.mark.parametrize("name", sorted(CASES))
def test_outputs_take_the_poison(name):
    setup = CASES[name](OneElementMaker())
    if setup.reset:
        return  # the case sets its outputs itself
    poison(setup.outs)
    for out in setup.outs:
        value = out.float() if hasattr(out, "float") else out
        assert torch.isnan(value).all() or (value == -(2**31) + 7).all()
