"""LLM-training kernels (tests/compat/llm_kernels.py), forward and backward, against torch.

Inputs are torch tensors with storage offsets and row strides wider than the rows, as the
libraries get them from ``view``/``narrow``; backward passes are checked against autograd,
weight *and* bias gradients included.
"""

from __future__ import annotations

import pytest

import tilelab as triton

from . import llm_kernels as K

torch = pytest.importorskip("torch")
F = torch.nn.functional


def rand(gen, *shape, device="cpu", dtype=None):
    return torch.randn(*shape, generator=gen, dtype=dtype or torch.float32).to(device)


def strided_rows(gen, rows, cols, device):
    """A [rows, cols] view with a storage offset and a row stride wider than ``cols``."""
    big = rand(gen, rows + 3, cols + 29, device=device)
    view = big[3:, 5 : 5 + cols]
    assert view.storage_offset() > 0 and view.stride(0) == cols + 29
    return view


def close(got, want, tol=2e-4):
    torch.testing.assert_close(got.cpu().double(), want.cpu().double(), rtol=tol, atol=tol)


def test_rms_norm_forward_and_backward(target, device, gen):
    rows, cols, eps, offset = 37, 100, 1e-6, 1.0
    x = strided_rows(gen, rows, cols, device)
    w = rand(gen, cols, device=device)
    block = triton.next_power_of_2(cols)
    y = torch.empty(rows, cols, device=device)
    rstd = torch.empty(rows, device=device)
    K.rms_norm_fwd[(rows,)](y, y.stride(0), x, x.stride(0), w, rstd, cols, eps, offset, BLOCK_SIZE=block, target=target)
    xr, wr = x.cpu().double().requires_grad_(), w.cpu().double().requires_grad_()
    ref = xr * torch.rsqrt(xr.pow(2).mean(-1, keepdim=True) + eps) * (offset + wr)
    close(y, ref)

    dy = rand(gen, rows, cols, device=device)
    ref.backward(dy.cpu().double())
    programs, per = 8, triton.cdiv(rows, 8)
    dx = torch.empty_like(dy)  # contiguous, with dy's row stride
    dw_partial = torch.empty(programs, cols, device=device)
    K.rms_norm_bwd[(programs,)](
        dy,
        dy.stride(0),
        dx,
        x,
        x.stride(0),
        w,
        rstd,
        dw_partial,
        dw_partial.stride(0),
        rows,
        cols,
        offset,
        per,
        BLOCK_SIZE=block,
        num_warps=32,
        target=target,
    )
    close(dx, xr.grad)
    close(dw_partial.sum(0), wr.grad, 1e-3)


def test_layer_norm_weight_and_bias_gradients(target, device, gen):
    rows, cols, eps = 29, 72, 1e-5
    x = rand(gen, rows, cols, device=device)
    w, b = rand(gen, cols, device=device), rand(gen, cols, device=device)
    block = triton.next_power_of_2(cols)
    y, mean, rstd = torch.empty_like(x), torch.empty(rows, device=device), torch.empty(rows, device=device)
    K.layer_norm_fwd[(rows,)](y, x, w, b, mean, rstd, x.stride(0), cols, eps, BLOCK_SIZE=block, target=target)
    xr, wr, br = (t.cpu().double().requires_grad_() for t in (x, w, b))
    ref = F.layer_norm(xr, (cols,), wr, br, eps)
    close(y, ref)

    dy = rand(gen, rows, cols, device=device)
    ref.backward(dy.cpu().double())
    per = 4
    programs = triton.cdiv(rows, per)
    dx = torch.empty_like(x)
    dw, db = torch.empty(programs, cols, device=device), torch.empty(programs, cols, device=device)
    K.layer_norm_bwd[(programs,)](
        dx, dy, dw, db, x, w, mean, rstd, x.stride(0), rows, cols, ROWS=per, BLOCK_SIZE=block, target=target
    )
    close(dx, xr.grad, 1e-3)
    close(dw.sum(0), wr.grad, 1e-3)
    close(db.sum(0), br.grad, 1e-3)
    assert db.abs().sum() > 0  # the bias gradient is computed, not left at zero


def test_swiglu_forward_and_backward(target, device, gen):
    rows, cols = 17, 200
    a, b = rand(gen, rows, cols, device=device), rand(gen, rows, cols, device=device)
    c = torch.empty_like(a)
    block = triton.next_power_of_2(cols)
    K.swiglu_fwd[(rows,)](a, b, c, a.stride(0), n_cols=cols, BLOCK_SIZE=block, target=target)
    ar, br = a.cpu().double().requires_grad_(), b.cpu().double().requires_grad_()
    ref = F.silu(ar) * br
    close(c, ref)
    dc = rand(gen, rows, cols, device=device)
    ref.backward(dc.cpu().double())
    da, db = a.clone(), b.clone()
    K.swiglu_bwd[(rows,)](dc, da, db, a.stride(0), n_cols=cols, BLOCK_SIZE=block, target=target)
    close(da, ar.grad)
    close(db, br.grad)


def test_gelu_with_erf_and_libdevice_tanh(target, device, gen):
    n = 1000
    x = rand(gen, n, device=device) * 3
    y_erf, y_tanh = torch.empty_like(x), torch.empty_like(x)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    K.gelu_fwd[grid](x, y_erf, y_tanh, n, BLOCK=256, target=target)
    close(y_erf, F.gelu(x.cpu().double()))
    close(y_tanh, F.gelu(x.cpu().double(), approximate="tanh"))


def test_rope_rotates_in_place(target, device, gen):
    batch, seq, heads, hd = 2, 6, 3, 16
    q = rand(gen, batch, seq, heads, hd, device=device)
    pos = torch.arange(seq, dtype=torch.float64)[:, None] * (1e-4 ** (torch.arange(hd // 2) / (hd // 2)))
    cos, sin = pos.cos().float().to(device), pos.sin().float().to(device)
    ref = q.cpu().double().clone()
    q1, q2 = ref[..., : hd // 2].clone(), ref[..., hd // 2 :].clone()
    c, s = cos.cpu().double()[None, :, None, :], sin.cpu().double()[None, :, None, :]
    ref[..., : hd // 2], ref[..., hd // 2 :] = q1 * c - q2 * s, q2 * c + q1 * s
    flat = q.view(batch * seq, heads, hd)
    K.rope_fwd[(batch * seq,)](
        flat,
        flat.stride(0),
        cos,
        cos.stride(0),
        sin,
        sin.stride(0),
        seq,
        n_qh=heads,
        hd=hd,
        pad_n_qh=triton.next_power_of_2(heads),
        pad_hd=hd,
        target=target,
    )
    close(q, ref)


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_cross_entropy_with_ignored_rows(target, device, gen, label_smoothing):
    rows, vocab, ignore = 12, 300, -100
    logits = rand(gen, rows, vocab, device=device)
    labels = torch.randint(0, vocab, (rows,), generator=gen)
    labels[[2, 7]] = ignore
    labels = labels.to(device)
    n_non_ignore = int((labels != ignore).sum())
    grad, loss = logits.clone(), torch.zeros(rows, device=device)
    K.cross_entropy_fwd_bwd[(rows,)](
        grad,
        grad.stride(0),
        labels,
        loss,
        vocab,
        n_non_ignore,
        ignore,
        label_smoothing=label_smoothing,
        BLOCK_SIZE=128,
        target=target,
    )
    xr = logits.cpu().double().requires_grad_()
    ref = F.cross_entropy(xr, labels.cpu(), ignore_index=ignore, label_smoothing=label_smoothing)
    ref.backward()
    close(loss.sum(), ref)
    close(grad, xr.grad)
    assert torch.all(grad[2] == 0) and torch.all(loss[7] == 0)  # the ignored rows returned early


def test_kl_div_rows(target, device, gen):
    rows, cols = 9, 130
    y_pred = F.log_softmax(rand(gen, rows, cols), -1).to(device)
    y_true = F.softmax(rand(gen, rows, cols), -1).to(device)
    loss = torch.empty(rows, device=device)
    K.kl_div_fwd[(rows,)](
        y_pred, y_pred.stride(0), y_true, y_true.stride(0), loss, cols, 1e-10, BLOCK_SIZE=64, target=target
    )
    ref = F.kl_div(y_pred.cpu().double(), y_true.cpu().double(), reduction="none").sum(-1)
    close(loss, ref)


def test_moe_grouped_gemm_autotuned(target, device, gen):
    experts, hidden, inter = 4, 48, 40
    counts = [5, 0, 33, 18]  # an expert without tokens, tiles that end past an expert's last token
    tokens = sum(counts)
    x = rand(gen, tokens, hidden, device=device)
    w = rand(gen, experts, hidden, inter, device=device)
    offsets = torch.tensor([0, *torch.tensor(counts).cumsum(0).tolist()], dtype=torch.int32)
    tiles = [(e, r) for e in range(experts) for r in range(int(offsets[e]), int(offsets[e + 1]), 16)]
    tiles_t = torch.tensor(tiles, dtype=torch.int32).flatten().to(device)
    out = torch.zeros(tokens, inter, device=device)
    grid = lambda meta: (len(tiles), triton.cdiv(inter, meta["BLOCK_N"]))  # noqa: E731
    args = (
        x,
        w,
        out,
        offsets.to(device),
        tiles_t,
        inter,
        hidden,
        x.stride(0),
        x.stride(1),
        w.stride(0),
        w.stride(1),
        w.stride(2),
        out.stride(0),
        out.stride(1),
    )
    K.moe_grouped_gemm[grid](*args, target=target)  # tunes (out is reset to zero before each trial)
    out.zero_()
    K.moe_grouped_gemm[grid](*args, target=target)  # the tuned config, from the cache
    ref = torch.cat([x[int(offsets[e]) : int(offsets[e + 1])].cpu() @ w[e].cpu() for e in range(experts)])
    close(out, ref, 1e-3)
