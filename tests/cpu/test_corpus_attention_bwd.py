"""The corpus's flash-attention backward (``benchmarks/corpus``) on the CPU backend, at small sizes.

Each test builds the benchmark's own case with CPU torch tensors (o and the log-sum-exp as the forward
saves them, delta as the preprocess computes it), launches the kernel text the benchmark hands to both
compilers under ``import tilelab as triton`` with one of the case's configs, and compares dq, dk, dv
with torch autograd of softmax(q k^T * scale) v within the case's tolerance. Sequence lengths that no
block divides exercise the masks on the sequence; causal and not.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from benchmarks.corpus import cases, kernels  # noqa: E402
from benchmarks.corpus.run import jit_from_source  # noqa: E402


class CpuMaker:
    """The materializer of ``benchmarks/corpus/cases.py`` on CPU torch tensors."""

    torch = torch
    dtypes = {"f32": torch.float32, "f16": torch.float16}

    def __init__(self, seed):
        self.gen = torch.Generator().manual_seed(seed)

    def randn(self, *shape, dtype="f32"):
        return torch.randn(*shape, generator=self.gen).to(self.dtypes[dtype])

    def empty(self, *shape, dtype="f32"):
        return torch.full(shape, float("nan"), dtype=self.dtypes[dtype])


def max_rel_err(got, want):
    got, want = got.float(), want.float()
    return (got - want).abs().max().item() / want.abs().max().item()


@pytest.mark.parametrize(
    ("bh", "s", "d", "causal", "config"),
    [
        (2, 80, 32, False, 0),  # blocks 32 / 128: a tail in every block size, one program of 128 queries
        (2, 80, 32, True, 2),  # blocks 64 / 64
        (3, 200, 64, True, 0),
        (1, 150, 64, False, 3),  # blocks 64 / 128
    ],
)
def test_attention_bwd_matches_torch_autograd(bh, s, d, causal, config):
    setup = cases.attention_bwd(CpuMaker(bh * s + d), bh, s, d, causal)
    cfg = setup.configs[config]
    kern = jit_from_source(setup.kernel, "tilelab")
    kern[setup.grid(cfg)](*setup.args(cfg), **cfg, target="cpu")
    for name, got, want in zip(("dq", "dk", "dv"), setup.outs, setup.ref()):
        assert not got.isnan().any(), f"{name}: elements left unwritten"
        assert max_rel_err(got, want) <= setup.tol, name


def test_attention_bwd_delta_matches_torch():
    setup = cases.attention_bwd_preprocess(CpuMaker(7), 3, 100, 64)
    for cfg in setup.configs:
        setup.outs[0].fill_(float("nan"))
        jit_from_source(setup.kernel, "tilelab")[setup.grid(cfg)](*setup.args(cfg), **cfg, target="cpu")
        assert max_rel_err(setup.outs[0], setup.ref()[0]) <= setup.tol


def test_attention_bwd_blocks_must_agree():
    setup = cases.attention_bwd(CpuMaker(0), 1, 64, 32, False)
    cfg = dict(setup.configs[0], BLOCK_M2=64)  # BLOCK_N1 is 128: one program would own two query blocks
    with pytest.raises(Exception, match="static_assert|BLOCK_N1 == BLOCK_M2"):
        jit_from_source(kernels.attention_bwd_kernel, "tilelab")[setup.grid(cfg)](*setup.args(cfg), **cfg, target="cpu")
