"""The corpus cases: inputs, launch arguments, the config list both compilers sweep, references.

A case is a function of a materializer ``t`` (``t.randn(shape, dtype)``, ``t.empty(...)``,
``t.zeros(...)``, ``t.descriptor(x, block_shape)``, ``t.torch``): on a GPU it makes torch
tensors (and Triton's host descriptors), for ``--compile-only`` it makes ``Spec`` placeholders
from which the driver derives a signature, so that every kernel can be compiled for sm_90 on a
machine without a GPU. A case returns a ``Setup``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from benchmarks.corpus import kernels as K


@dataclass
class Setup:
    kernel: Callable
    args: Callable  # cfg -> positional runtime arguments
    grid: Callable  # cfg -> grid tuple
    configs: list  # dicts of constexprs plus num_warps / num_stages
    outs: list = field(default_factory=list)  # tensors compared with ref() after a launch
    ref: Callable | None = None  # -> list of expected tensors, same order as outs
    torch_fn: Callable | None = None  # what torch runs for the same work (timed)
    reset: Callable | None = None  # restores in-place inputs before a checked launch
    before: Callable | None = None  # run before every launch, timed too (split-K zeroing)
    nbytes: int = 0
    flops: int = 0
    tol: float = 1e-4  # on max |err| / max |ref|


def cfg(warps=4, stages=3, **meta):
    return {"num_warps": warps, "num_stages": stages, **meta}


def cdiv(a, b):
    return (a + b - 1) // b


def _p2(n):
    return 1 << (n - 1).bit_length()


# ----------------------------------------------------------------------------- elementwise


def add(t, n=2**28 - 3):
    x, y, out = t.randn(n), t.randn(n), t.empty(n)
    return Setup(
        K.add_kernel, lambda c: (x, y, out, n), lambda c: (cdiv(n, c["BLOCK_SIZE"]),),
        [cfg(4, BLOCK_SIZE=1024), cfg(8, BLOCK_SIZE=2048), cfg(4, BLOCK_SIZE=4096)],
        [out], lambda: [x + y], lambda: x + y, nbytes=3 * n * 4,
    )  # fmt: skip


def swiglu(t, m=8192, n=5504):
    a, b, c = t.randn(m, n, dtype="bf16"), t.randn(m, n, dtype="bf16"), t.empty(m, n, dtype="bf16")
    F = t.torch.nn.functional if t.torch else None
    return Setup(
        K.swiglu_kernel, lambda cf: (a, b, c, a.stride(0), n), lambda cf: (m,),
        [cfg(4, BLOCK_SIZE=8192), cfg(8, BLOCK_SIZE=8192), cfg(16, BLOCK_SIZE=8192)],
        [c], lambda: [(F.silu(a.float()).to(a.dtype) * b)], lambda: F.silu(a) * b,
        nbytes=3 * m * n * 2, tol=1e-2,
    )  # fmt: skip


def dropout(t, n=2**26):
    x, out = t.randn(n), t.empty(n)

    def ref():  # kept elements are x / (1 - p); about half are kept
        kept = out != 0
        assert 0.45 < kept.float().mean().item() < 0.55, "dropout keeps about half"
        return [t.torch.where(kept, x * 2, t.torch.zeros_like(x))]

    return Setup(
        K.dropout_kernel, lambda c: (x, out, n, 0.5, 1234), lambda c: (cdiv(n, c["BLOCK_SIZE"]),),
        [cfg(4, BLOCK_SIZE=1024), cfg(8, BLOCK_SIZE=2048)],
        [out], ref, lambda: t.torch.nn.functional.dropout(x, 0.5), nbytes=2 * n * 4,
    )  # fmt: skip


def rope(t, batch=4, seq=4096, heads=32, d=128):
    q = t.randn(batch * seq, heads, d, dtype="bf16")
    q0 = t.clone(q)
    angle = t.randn(seq, d // 2)
    cos, sin = (t.torch.cos(angle), t.torch.sin(angle)) if t.torch else (angle, t.clone(angle))

    def ref():
        x = q0.float().view(batch, seq, heads, d)
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        c, s = cos[None, :, None, :], sin[None, :, None, :]
        return [t.torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1).view(batch * seq, heads, d).to(q.dtype)]

    def torch_fn():
        x = q.view(batch, seq, heads, d)
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        c, s = cos[None, :, None, :], sin[None, :, None, :]
        return t.torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)

    return Setup(
        K.rope_kernel, lambda c: (q, cos, sin, q.stride(0), cos.stride(0), seq), lambda c: (batch * seq,),
        [cfg(4, n_heads=heads, HEAD_DIM=d), cfg(8, n_heads=heads, HEAD_DIM=d)],
        [q], ref, torch_fn, reset=lambda: q.copy_(q0), nbytes=2 * q.numel() * 2, tol=2e-2,
    )  # fmt: skip


# ----------------------------------------------------------------------------- rows


def softmax(t, m=8192, n=3000, persistent=False):
    x, out = t.randn(m, n), t.empty(m, n)
    block = _p2(n)
    progs = 132 * 4 if persistent else m
    return Setup(
        K.softmax_kernel, lambda c: (out, x, x.stride(0), out.stride(0), m, n), lambda c: (progs,),
        [cfg(4, 2, BLOCK_SIZE=block), cfg(8, 2, BLOCK_SIZE=block), cfg(16, 2, BLOCK_SIZE=block)],
        [out], lambda: [t.torch.softmax(x, 1)], lambda: t.torch.softmax(x, 1), nbytes=2 * m * n * 4,
    )  # fmt: skip


def layernorm_fwd(t, m=4096, n=5000):
    x, y = t.randn(m, n, dtype="f16"), t.empty(m, n, dtype="f16")
    w, b = t.randn(n, dtype="f16"), t.randn(n, dtype="f16")
    mean, rstd = t.empty(m), t.empty(m)
    F = t.torch.nn.functional if t.torch else None
    return Setup(
        K.layernorm_fwd_kernel, lambda c: (x, y, w, b, mean, rstd, x.stride(0), n, 1e-5), lambda c: (m,),
        [cfg(4, BLOCK_SIZE=1024), cfg(8, BLOCK_SIZE=1024), cfg(8, BLOCK_SIZE=2048), cfg(8, BLOCK_SIZE=4096)],
        [y], lambda: [F.layer_norm(x, (n,), w, b, 1e-5)], lambda: F.layer_norm(x, (n,), w, b, 1e-5),
        nbytes=2 * m * n * 2, tol=1e-2,
    )  # fmt: skip


class Summed:
    """Partial rows summed, compared like an output (``poison`` fills the rows)."""

    def __init__(self, p):
        self.p = p

    def float(self):
        return self.p.float().sum(0, keepdim=True)

    def fill_(self, v):
        self.p.fill_(v)

    def is_floating_point(self):
        return self.p.is_floating_point()


def layernorm_bwd(t, m=4096, n=5000, rows=16):
    x, dy, dx = t.randn(m, n, dtype="f16"), t.randn(m, n, dtype="f16"), t.empty(m, n, dtype="f16")
    w = t.randn(n, dtype="f16")
    progs = cdiv(m, rows)
    dw_p, db_p = t.empty(progs, n), t.empty(progs, n)
    xf = x.float() if t.torch else None
    mean = xf.mean(1) if t.torch else t.empty(m)
    rstd = (1 / (xf.var(1, unbiased=False) + 1e-5).sqrt()) if t.torch else t.empty(m)

    def ref():
        xr = x.float().requires_grad_()
        wr = w.float().requires_grad_()
        br = t.torch.zeros(n, device=x.device, requires_grad=True)
        t.torch.nn.functional.layer_norm(xr, (n,), wr, br, 1e-5).backward(dy.float())
        return [xr.grad.to(dx.dtype), wr.grad.unsqueeze(0), br.grad.unsqueeze(0)]

    def torch_fn():
        xr = x.detach().requires_grad_()
        wr = w.detach().requires_grad_()
        out = t.torch.nn.functional.layer_norm(xr, (n,), wr, None, 1e-5)
        return t.torch.autograd.grad(out, (xr, wr), dy)

    return Setup(
        K.layernorm_bwd_kernel, lambda c: (dx, dy, dw_p, db_p, x, w, mean, rstd, x.stride(0), m, n),
        lambda c: (progs,),
        [cfg(8, 1, ROWS_PER_PROGRAM=rows, BLOCK_N=_p2(n)), cfg(16, 1, ROWS_PER_PROGRAM=rows, BLOCK_N=_p2(n))],
        [dx, Summed(dw_p), Summed(db_p)], ref, torch_fn, nbytes=3 * m * n * 2, tol=2e-2,
    )  # fmt: skip


def rmsnorm(t, m=8192, n=4096):
    x, y, w, rstd = t.randn(m, n, dtype="bf16"), t.empty(m, n, dtype="bf16"), t.randn(n, dtype="bf16"), t.empty(m)

    def torch_fn():
        xf = x.float()
        return (xf * t.torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w

    return Setup(
        K.rmsnorm_kernel, lambda c: (y, y.stride(0), x, x.stride(0), w, rstd, n, 1e-6), lambda c: (m,),
        [cfg(4, BLOCK_SIZE=_p2(n)), cfg(8, BLOCK_SIZE=_p2(n)), cfg(16, BLOCK_SIZE=_p2(n))],
        [y], lambda: [torch_fn()], torch_fn, nbytes=2 * m * n * 2, tol=2e-2,
    )  # fmt: skip


def cross_entropy(t, m=4096, v=32000):
    x = t.randn(m, v, dtype="bf16")
    x0 = t.clone(x)
    y = t.randint(v, (m,))
    loss = t.empty(m)

    def ref():
        xr = x0.float().requires_grad_()
        lo = t.torch.nn.functional.cross_entropy(xr, y.long(), reduction="none")
        lo.sum().backward()
        return [lo, xr.grad.to(x.dtype)]

    return Setup(
        K.cross_entropy_kernel, lambda c: (x, x.stride(0), y, loss, v), lambda c: (m,),
        [cfg(8, BLOCK_SIZE=4096), cfg(16, BLOCK_SIZE=8192), cfg(32, BLOCK_SIZE=32768)],
        [loss, x], ref, lambda: t.torch.nn.functional.cross_entropy(x0, y.long()),
        reset=lambda: x.copy_(x0), nbytes=3 * m * v * 2, tol=2e-2,
    )  # fmt: skip


def cumsum(t, m=16384, n=1000):
    x, out = t.randn(m, n), t.empty(m, n)
    return Setup(
        K.cumsum_kernel, lambda c: (x, out, x.stride(0), n), lambda c: (m,),
        [cfg(4, BLOCK_SIZE=1024), cfg(8, BLOCK_SIZE=1024)],
        [out], lambda: [t.torch.cumsum(x, 1)], lambda: t.torch.cumsum(x, 1), nbytes=2 * m * n * 4, tol=1e-4,
    )  # fmt: skip


def transpose(t, m=8000, n=8192):
    x, y = t.randn(m, n), t.empty(n, m)
    return Setup(
        K.transpose_kernel, lambda c: (x, y, m, n, x.stride(0), x.stride(1), y.stride(0), y.stride(1)),
        lambda c: (cdiv(m, c["BM"]), cdiv(n, c["BN"])),
        [cfg(4, BM=64, BN=64), cfg(8, BM=128, BN=64), cfg(4, BM=32, BN=32)],
        [y], lambda: [x.t()], lambda: x.t().contiguous(), nbytes=2 * m * n * 4,
    )  # fmt: skip


# ----------------------------------------------------------------------------- matmul

MATMUL_CONFIGS = [
    (128, 256, 64, 8, 3),
    (128, 128, 64, 4, 4),
    (128, 128, 64, 8, 3),
    (256, 128, 64, 8, 3),
    (64, 128, 64, 4, 4),
]


def _mm_inputs(t, m, n, k, dtype, b_k_major=False):
    a = t.randn(m, k, dtype=dtype)
    b = t.transpose(t.randn(n, k, dtype=dtype)) if b_k_major else t.randn(k, n, dtype=dtype)
    c = t.empty(m, n, dtype="f32" if dtype == "fp8e4" else dtype)
    return a, b, c


def _mm_args(a, b, c, m, n, k):
    return (a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))


def _tf32(t, fn):
    """``fn()`` with torch's f32 matmuls in tf32, the precision ``tl.dot`` of f32 tiles asks for (then restored)."""
    flags = t.torch.backends.cuda.matmul
    before, flags.allow_tf32 = flags.allow_tf32, True
    try:
        return fn()
    finally:
        flags.allow_tf32 = before


def _mm_ref(t, a, b, c):
    return lambda: [(a.float() @ b.float()).to(c.dtype)]


def matmul(t, m=4096, n=4096, k=4096, dtype="f16", hints=False):
    a, b, c = _mm_inputs(t, m, n, k, dtype, b_k_major=dtype == "fp8e4")
    configs = [cfg(w, s, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, HINTS=hints)
               for bm, bn, bk, w, s in MATMUL_CONFIGS]  # fmt: skip
    if dtype == "fp8e4":  # as Triton's tutorial for fp8: BK 128
        configs = [dict(c, BLOCK_SIZE_K=128, num_stages=min(c["num_stages"], 3)) for c in configs]
    if dtype == "f32":  # tl.dot of f32 tiles is tf32 (its default input_precision): BK 32 is 128 bytes of K, as 64 f16
        configs = [dict(c, BLOCK_SIZE_K=32) for c in configs]
    torch_fn = (lambda: t.torch._scaled_mm(a, b, t.one, t.one, out_dtype=t.torch.float32)) if dtype == "fp8e4" else (
        (lambda: _tf32(t, lambda: a @ b)) if dtype == "f32" else (lambda: a @ b))  # fmt: skip
    return Setup(
        K.matmul_kernel, lambda c_: _mm_args(a, b, c, m, n, k),
        lambda c_: (cdiv(m, c_["BLOCK_SIZE_M"]) * cdiv(n, c_["BLOCK_SIZE_N"]),), configs,
        [c], _mm_ref(t, a, b, c), torch_fn, flops=2 * m * n * k, tol=1e-2,
    )  # fmt: skip


def matmul_int8(t, m=4096, n=4096, k=4096, b_k_major=True):
    """int8 x int8 -> int32, exact; B K-major (``x @ w.T`` of a row-major ``w``) or row-major (N-contiguous)."""
    a = t.int8(m, k)
    b = t.transpose(t.int8(n, k)) if b_k_major else t.int8(k, n)
    c = t.empty(m, n, dtype="i32")
    configs = [cfg(w, s, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=128, GROUP_SIZE_M=8)
               for bm, bn, _, w, s in MATMUL_CONFIGS]  # fmt: skip
    return Setup(
        K.matmul_int8_kernel, lambda c_: _mm_args(a, b, c, m, n, k),
        lambda c_: (cdiv(m, c_["BLOCK_SIZE_M"]) * cdiv(n, c_["BLOCK_SIZE_N"]),), configs,
        [c], lambda: [(a.double() @ b.double()).to(t.torch.int32)], lambda: t.torch._int_mm(a, b),
        flops=2 * m * n * k, tol=0,
    )  # fmt: skip


def matmul_block_ptr(t, m=4096, n=4096, k=4096):
    a, b, c = _mm_inputs(t, m, n, k, "f16")
    configs = [cfg(w, s, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk) for bm, bn, bk, w, s in MATMUL_CONFIGS]
    return Setup(
        K.matmul_block_ptr_kernel, lambda c_: _mm_args(a, b, c, m, n, k),
        lambda c_: (cdiv(m, c_["BLOCK_M"]), cdiv(n, c_["BLOCK_N"])), configs,
        [c], _mm_ref(t, a, b, c), lambda: a @ b, flops=2 * m * n * k, tol=1e-2,
    )  # fmt: skip


def matmul_persistent(t, m=4096, n=4096, k=4096, sms=132):
    a, b, c = _mm_inputs(t, m, n, k, "f16")
    configs = [cfg(w, s, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, NUM_SMS=sms)
               for bm, bn, bk, w, s in MATMUL_CONFIGS[:3]]  # fmt: skip
    return Setup(
        K.matmul_persistent_kernel, lambda c_: _mm_args(a, b, c, m, n, k),
        lambda c_: (min(sms, cdiv(m, c_["BLOCK_SIZE_M"]) * cdiv(n, c_["BLOCK_SIZE_N"])),), configs,
        [c], _mm_ref(t, a, b, c), lambda: a @ b, flops=2 * m * n * k, tol=1e-2,
    )  # fmt: skip


def matmul_descriptor_persistent(t, m=4096, n=4096, k=4096, sms=132):
    a, b_nk, c = t.randn(m, k, dtype="f16"), t.randn(n, k, dtype="f16"), t.empty(m, n, dtype="f16")
    configs = [cfg(w, s, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, NUM_SMS=sms)
               for bm, bn, bk, w, s in MATMUL_CONFIGS[:3]]  # fmt: skip

    def args(c_):
        bm, bn, bk = c_["BLOCK_SIZE_M"], c_["BLOCK_SIZE_N"], c_["BLOCK_SIZE_K"]
        return (t.descriptor(a, [bm, bk]), t.descriptor(b_nk, [bn, bk]), t.descriptor(c, [bm, bn]), m, n, k)

    return Setup(
        K.matmul_descriptor_persistent_kernel, args,
        lambda c_: (min(sms, cdiv(m, c_["BLOCK_SIZE_M"]) * cdiv(n, c_["BLOCK_SIZE_N"])),), configs,
        [c], lambda: [(a.float() @ b_nk.float().T).to(c.dtype)], lambda: a @ b_nk.T, flops=2 * m * n * k, tol=1e-2,
    )  # fmt: skip


def matmul_splitk(t, m=1024, n=1024, k=16384):
    a, b = t.randn(m, k, dtype="f16"), t.randn(k, n, dtype="f16")
    c = t.zeros(m, n)
    configs = [cfg(4, 3, BLOCK_M=64, BLOCK_N=64, BLOCK_K=64, SPLIT_K=8),
               cfg(8, 3, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, SPLIT_K=8),
               cfg(4, 4, BLOCK_M=128, BLOCK_N=64, BLOCK_K=64, SPLIT_K=4)]  # fmt: skip
    return Setup(
        K.matmul_splitk_kernel, lambda c_: _mm_args(a, b, c, m, n, k),
        lambda c_: (cdiv(m, c_["BLOCK_M"]), cdiv(n, c_["BLOCK_N"]), c_["SPLIT_K"]), configs,
        [c], lambda: [a.float() @ b.float()], lambda: a @ b, before=lambda: c.zero_(),
        flops=2 * m * n * k, tol=1e-2,
    )  # fmt: skip


def bmm3d(t, z=4096, m=64, n=64, k=64):
    """Many small products, ``BLOCK_Z`` of them per program through one 3-d ``tl.dot``."""
    a, b, c = t.randn(z, m, k, dtype="f16"), t.randn(z, k, n, dtype="f16"), t.empty(z, m, n, dtype="f16")
    configs = [cfg(w, s, BLOCK_Z=bz, BLOCK_M=m, BLOCK_N=n, BLOCK_K=bk)
               for bz, bk, w, s in ((2, 64, 4, 3), (4, 32, 4, 3), (4, 64, 8, 3), (8, 32, 8, 3))]  # fmt: skip
    return Setup(
        K.bmm3d_kernel,
        lambda c_: (a, b, c, z, m, n, k, *(x.stride(d) for x in (a, b, c) for d in range(3))),
        lambda c_: (cdiv(z, c_["BLOCK_Z"]), cdiv(m, c_["BLOCK_M"]), cdiv(n, c_["BLOCK_N"])), configs,
        [c], lambda: [(a.float() @ b.float()).to(c.dtype)], lambda: t.torch.bmm(a, b),
        nbytes=2 * z * (m * k + k * n + m * n), flops=2 * z * m * n * k, tol=1e-2,
    )  # fmt: skip


# ----------------------------------------------------------------------------- attention

ATTENTION_CONFIGS = [(128, 64, 8, 3), (128, 128, 8, 3), (64, 64, 4, 3), (128, 64, 4, 3)]


def attention(t, bh=128, s=4096, d=128, causal=False):
    q, k, v = (t.randn(bh, s, d, dtype="f16") for _ in range(3))
    o = t.empty(bh, s, d, dtype="f16")
    scale = 1 / math.sqrt(d)
    configs = [cfg(w, st, HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal) for bm, bn, w, st in ATTENTION_CONFIGS]

    def sdpa():
        return t.torch.nn.functional.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=causal)[0]

    flops = 4 * bh * s * s * d // (2 if causal else 1)
    return Setup(
        K.attention_fwd_kernel,
        lambda c: (q, k, v, o, scale, q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0),
                   v.stride(1), o.stride(0), o.stride(1), s),
        lambda c: (cdiv(s, c["BLOCK_M"]), bh), configs, [o], lambda: [sdpa()], sdpa, flops=flops, tol=1e-2,
    )  # fmt: skip


def attention_descriptors(t, bh=128, s=4096, d=128, causal=False):
    q, k, v = (t.randn(bh, s, d, dtype="f16") for _ in range(3))
    o = t.empty(bh, s, d, dtype="f16")
    scale = 1 / math.sqrt(d)
    configs = [cfg(w, st, HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal) for bm, bn, w, st in ATTENTION_CONFIGS]

    def args(c):
        bm, bn = c["BLOCK_M"], c["BLOCK_N"]
        rows = [x.reshape(bh * s, d) for x in (q, k, v, o)]
        blocks = ([bm, d], [bn, d], [bn, d], [bm, d])
        return (*(t.descriptor(x, b) for x, b in zip(rows, blocks)), scale, s)

    def sdpa():
        return t.torch.nn.functional.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=causal)[0]

    flops = 4 * bh * s * s * d // (2 if causal else 1)
    return Setup(
        K.attention_fwd_descriptor_kernel, args, lambda c: (cdiv(s, c["BLOCK_M"]), bh), configs, [o],
        lambda: [sdpa()], sdpa, flops=flops, tol=1e-2,
    )  # fmt: skip


# the config tuple: (BLOCK_M1, BLOCK_N1, BLOCK_M2, BLOCK_N2, num_warps, num_stages), BLOCK_N1 == BLOCK_M2
# (Triton's tutorial: 32, 128, 128, 32 on 4 warps, 5 stages)
ATTENTION_BWD_CONFIGS = [(32, 128, 128, 32, 4, 5), (32, 128, 128, 32, 8, 3), (64, 64, 64, 64, 4, 3),
                         (64, 128, 128, 64, 8, 3), (32, 64, 64, 32, 4, 3), (64, 64, 64, 64, 8, 3)]  # fmt: skip


def _attention_probs(t, q, k, scale, causal):
    """softmax's input q k^T * scale (f32, causal: -inf above the diagonal) of heads ``q``, ``k``."""
    scores = (q.float() @ k.float().transpose(1, 2)) * scale
    if causal:
        s = q.shape[1]
        above = t.torch.ones(s, s, dtype=t.torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(above, float("-inf"))
    return scores


def _attention_fwd_saved(t, q, k, v, scale, causal, heads=8):
    """o (f16) and the log-sum-exp of each query row (f32), the forward's outputs the backward reads."""
    o, lse = t.torch.empty_like(q), t.torch.empty(q.shape[:2], device=q.device)
    for i in range(0, q.shape[0], heads):  # a few heads at a time: the scores are s x s floats each
        scores = _attention_probs(t, q[i : i + heads], k[i : i + heads], scale, causal)
        lse[i : i + heads] = t.torch.logsumexp(scores, -1)
        o[i : i + heads] = (scores.softmax(-1) @ v[i : i + heads].float()).to(q.dtype)
    return o, lse


def attention_bwd(t, bh=128, s=2048, d=128, causal=False):
    q, k, v, do = (t.randn(bh, s, d, dtype="f16") for _ in range(4))
    dq, dk, dv = (t.empty(bh, s, d, dtype="f16") for _ in range(3))
    scale = 1 / math.sqrt(d)
    if t.torch:  # o and lse as the forward pass saves them; delta as the preprocess kernel computes it
        o, lse = _attention_fwd_saved(t, q, k, v, scale, causal)
        delta = (o.float() * do.float()).sum(-1)
    else:
        lse, delta = t.empty(bh, s), t.empty(bh, s)
    configs = [cfg(w, st, HEAD_DIM=d, BLOCK_M1=m1, BLOCK_N1=n1, BLOCK_M2=m2, BLOCK_N2=n2, CAUSAL=causal)
               for m1, n1, m2, n2, w, st in ATTENTION_BWD_CONFIGS]  # fmt: skip

    def ref(heads=8):  # torch autograd of softmax(q k^T * scale) v, in f32
        grads = [t.torch.empty_like(x) for x in (q, k, v)]
        for i in range(0, bh, heads):
            qr, kr, vr = (x[i : i + heads].float().requires_grad_() for x in (q, k, v))
            out = _attention_probs(t, qr, kr, scale, causal).softmax(-1) @ vr
            for g, got in zip(grads, t.torch.autograd.grad(out, (qr, kr, vr), do[i : i + heads].float())):
                g[i : i + heads] = got.to(g.dtype)
        return grads

    saved = {}

    def torch_fn():  # the backward of torch's fused attention, its forward run once beforehand
        if not saved:
            qr, kr, vr = (x.detach().requires_grad_() for x in (q, k, v))
            sdpa = t.torch.nn.functional.scaled_dot_product_attention
            saved.update(ins=(qr, kr, vr), out=sdpa(qr[None], kr[None], vr[None], is_causal=causal)[0])
        return t.torch.autograd.grad(saved["out"], saved["ins"], do, retain_graph=True)

    flops = 10 * bh * s * s * d // (2 if causal else 1)  # 2.5x the forward's 4 bh s^2 d, as Triton's tutorial
    return Setup(
        K.attention_bwd_kernel,
        lambda c: (q, k, v, do, dq, dk, dv, lse, delta, scale, q.stride(0), q.stride(1), s),
        lambda c: (cdiv(s, c["BLOCK_N1"]), bh), configs, [dq, dk, dv], ref, torch_fn, flops=flops, tol=1e-2,
    )  # fmt: skip


def attention_bwd_preprocess(t, bh=128, s=2048, d=128):
    o, do, delta = t.randn(bh, s, d, dtype="f16"), t.randn(bh, s, d, dtype="f16"), t.empty(bh, s)

    def torch_fn():
        return (o.float() * do.float()).sum(-1)

    return Setup(
        K.attention_bwd_preprocess_kernel, lambda c: (o, do, delta, o.stride(0), o.stride(1), s),
        lambda c: (cdiv(s, c["BLOCK_M"]), bh),
        [cfg(4, HEAD_DIM=d, BLOCK_M=64), cfg(4, HEAD_DIM=d, BLOCK_M=128), cfg(8, HEAD_DIM=d, BLOCK_M=128)],
        [delta], lambda: [torch_fn()], torch_fn, nbytes=2 * bh * s * d * 2 + bh * s * 4, tol=1e-4,
    )  # fmt: skip


CASES = {
    "add 2^28-3 f32": add,
    "swiglu 8192x5504 bf16": swiglu,
    "dropout 2^26 f32": dropout,
    "rope 4x4096x32x128 bf16": rope,
    "softmax 8192x3000 f32": softmax,
    "softmax 8192x781 f32 persistent": lambda t: softmax(t, 8192, 781, persistent=True),
    "softmax 8192x3000 f32 persistent": lambda t: softmax(t, 8192, 3000, persistent=True),
    "layernorm fwd 4096x5000 f16": layernorm_fwd,
    "layernorm fwd 16384x8192 f16": lambda t: layernorm_fwd(t, 16384, 8192),
    "layernorm bwd 4096x5000 f16": layernorm_bwd,
    "rmsnorm 8192x4096 bf16": rmsnorm,
    "cross-entropy 4096x32000 bf16": cross_entropy,
    "cumsum 16384x1000 f32": cumsum,
    "transpose 8000x8192 f32": transpose,
    "matmul 4096^3 f16": matmul,
    "matmul 4096^3 f16 hints": lambda t: matmul(t, hints=True),
    "matmul 4000^3 f16": lambda t: matmul(t, 4000, 4000, 4000),
    "matmul 512x4096x4096 f16": lambda t: matmul(t, 512, 4096, 4096),
    "matmul 8192x12288x4096 f16": lambda t: matmul(t, 8192, 12288, 4096),
    "matmul 8192^3 f16": lambda t: matmul(t, 8192, 8192, 8192),  # the stretch goal: cuBLAS on 8192^3
    "matmul 4096^3 bf16": lambda t: matmul(t, dtype="bf16"),
    "matmul 4096^3 f32 (tf32)": lambda t: matmul(t, dtype="f32"),
    "matmul 4096^3 int8 (i32 out)": matmul_int8,
    "matmul 4096^3 int8 (i32 out), B row-major": lambda t: matmul_int8(t, b_k_major=False),
    "matmul 4096^3 fp8e4 (f32 out)": lambda t: matmul(t, dtype="fp8e4"),
    "matmul block-ptr 4096^3 f16": matmul_block_ptr,
    "matmul persistent 4096^3 f16": matmul_persistent,
    "matmul persistent descriptors 4096^3 f16": matmul_descriptor_persistent,
    # the stretch goal in the spelling with TMA copies
    "matmul persistent descriptors 8192^3 f16": lambda t: matmul_descriptor_persistent(t, 8192, 8192, 8192),
    "matmul split-K 1024x1024x16384 f16": matmul_splitk,
    "batched matmul 3-d dot 4096x64x64x64 f16": bmm3d,
    "attention fwd bh128 s4096 d128": attention,
    "attention fwd bh128 s4096 d128 causal": lambda t: attention(t, causal=True),
    "attention fwd bh256 s1024 d64": lambda t: attention(t, 256, 1024, 64),
    "attention fwd bh64 s4000 d64 causal": lambda t: attention(t, 64, 4000, 64, causal=True),
    "attention fwd descriptors bh128 s4096 d128": attention_descriptors,
    "attention fwd descriptors bh128 s4096 d128 causal": lambda t: attention_descriptors(t, causal=True),
    "attention bwd bh128 s2048 d128": attention_bwd,
    "attention bwd bh128 s2048 d128 causal": lambda t: attention_bwd(t, causal=True),
    "attention bwd bh64 s4096 d64 causal": lambda t: attention_bwd(t, 64, 4096, 64, causal=True),
    "attention bwd bh64 s4000 d64": lambda t: attention_bwd(t, 64, 4000, 64),
    "attention bwd delta bh128 s2048 d128": attention_bwd_preprocess,
}
