"""The corpus's flash-attention backward (``benchmarks/corpus``) on the GPU, at small sizes (marker ``gpu``).

The benchmark's own case (``cases.attention_bwd``) built on CUDA torch tensors, launched under
``import tilelab as triton`` with its configs, head dims 64 and 128, causal and not, and sequence
lengths no block divides; dq, dk and dv against torch autograd within the case's tolerance. Its dk/dv
loop copies q, do and the statistics lse and delta iterations ahead (``software-pipeline``), and
its dots start from zero accumulators (``scale-d`` 0).
"""

from __future__ import annotations

import pytest

from benchmarks.corpus import cases
from benchmarks.corpus.run import jit_from_source

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize(
    ("bh", "s", "d", "causal", "config"),
    [
        (4, 256, 128, False, 3),  # 64 x 128 blocks on 8 warps: the d128 benchmark's best config
        (4, 200, 128, True, 1),  # 32 x 128, tails in every block size
        (3, 300, 64, True, 2),
        (2, 256, 64, False, 5),
        (2, 150, 128, False, 0),  # 5 stages
    ],
)
def test_attention_bwd_matches_torch_autograd(bh, s, d, causal, config):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from benchmarks.corpus.run import TorchMaker

    torch.manual_seed(bh * s + d)
    setup = cases.attention_bwd(TorchMaker(), bh, s, d, causal)
    cfg = setup.configs[config]
    kern = jit_from_source(setup.kernel, "tilelab")
    kern[setup.grid(cfg)](*setup.args(cfg), **cfg)
    torch.cuda.synchronize()
    for name, got, want in zip(("dq", "dk", "dv"), setup.outs, setup.ref()):
        assert not got.isnan().any(), f"{name}: elements left unwritten"
        err = (got.float() - want.float()).abs().max().item() / want.float().abs().max().item()
        assert err <= setup.tol, (name, err)


@pytest.mark.parametrize("config", [0, 1, 2])
@pytest.mark.parametrize(("bh", "s", "d"), [(3, 256, 128), (2, 200, 64)])
def test_attention_bwd_delta_matches_torch(bh, s, d, config):
    """The backward's preprocess (``delta = rowsum(o * do)``): each row's sum, a reduction's slice, is spread
    over the threads before its store (``coalesce``); every config, a sequence no block divides."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from benchmarks.corpus.run import TorchMaker

    torch.manual_seed(bh * s + d)
    setup = cases.attention_bwd_preprocess(TorchMaker(), bh, s, d)
    setup.outs[0].fill_(float("nan"))
    cfg = setup.configs[config]
    kern = jit_from_source(setup.kernel, "tilelab")
    kern[setup.grid(cfg)](*setup.args(cfg), **cfg)
    torch.cuda.synchronize()
    (got,), (want,) = setup.outs, setup.ref()
    assert not got.isnan().any(), "rows left unwritten"
    assert (got - want).abs().max().item() <= setup.tol * want.abs().max().item()
