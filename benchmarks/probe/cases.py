"""The probe's kernels as timed cases: inputs, launch arguments, configs and references, as the corpus has them.

``python benchmarks/probe/run.py --gpu`` runs these through the corpus's GPU driver (``run_gpu``): both
compilers on the same source, every config checked against torch, then timed. Shapes are LLM-sized, so
that each kernel moves tens to hundreds of MB; where a kernel masks, a size is not a multiple of its
block, but the integers the probe specializes as multiples of 16 stay multiples of 16 (so the timed code
is the code the PTX table shows), and each case's configs include the probe's constexprs and warps.

A case is a function of a materializer ``t`` (see ``benchmarks/corpus/cases.py``), with its sizes as
keyword arguments. Element types the corpus's materializers lack (``u8``, ``i64``) come from ``t.torch``
directly, or as ``Spec`` placeholders where ``t`` makes no tensors (compile only).
"""

from __future__ import annotations

from benchmarks.corpus.cases import Setup, Summed, cdiv, cfg
from benchmarks.corpus.run import Spec
from benchmarks.probe import kernels as K


def _p2(n):
    return 1 << (n - 1).bit_length()


def _tensor(t, shape, dtype, make):
    """``make(torch)`` where ``t`` makes torch tensors, else a ``Spec`` of ``shape`` and ``dtype``."""
    return Spec(shape, dtype) if t.torch is None else make(t.torch)


def gelu(t, n=2**26 - 48):
    """Exact (erf) GELU of f16, computed in f32."""
    x, y = t.randn(n, dtype="f16"), t.empty(n, dtype="f16")
    F = t.torch.nn.functional if t.torch else None
    return Setup(
        K.gelu_kernel, lambda c: (x, y, n), lambda c: (cdiv(n, c["BLOCK"]),),
        [cfg(4, BLOCK=1024), cfg(8, BLOCK=2048), cfg(8, BLOCK=4096)],
        [y], lambda: [F.gelu(x.float()).to(x.dtype)], lambda: F.gelu(x), nbytes=2 * n * 2, tol=2e-3,
    )  # fmt: skip


def embedding(t, tokens=16383, dim=4096, vocab=32000):
    """Rows of an f16 table gathered by i64 token ids."""
    w, out = t.randn(vocab, dim, dtype="f16"), t.empty(tokens, dim, dtype="f16")
    ids = _tensor(t, (tokens,), "i64", lambda torch: torch.randint(0, vocab, (tokens,), device=w.device))
    F = t.torch.nn.functional if t.torch else None
    return Setup(
        K.embedding_kernel, lambda c: (ids, w, out, tokens, dim, w.stride(0), out.stride(0)),
        lambda c: (cdiv(tokens, c["BLOCK_T"]), cdiv(dim, c["BLOCK_D"])),
        [cfg(4, BLOCK_T=32, BLOCK_D=128), cfg(4, BLOCK_T=16, BLOCK_D=256), cfg(8, BLOCK_T=64, BLOCK_D=128)],
        [out], lambda: [w[ids]], lambda: F.embedding(ids, w), nbytes=2 * tokens * dim * 2 + tokens * 8, tol=0,
    )  # fmt: skip


def col_sum(t, m=8191, n=8000):
    """Column sums of an f32 matrix (a bias gradient), accumulated in f32 over row blocks."""
    x, out = t.randn(m, n), t.empty(n)
    return Setup(
        K.col_sum_kernel, lambda c: (x, out, m, n, x.stride(0)), lambda c: (cdiv(n, c["BLOCK_N"]),),
        [cfg(4, BLOCK_M=64, BLOCK_N=128), cfg(4, BLOCK_M=128, BLOCK_N=32), cfg(8, BLOCK_M=256, BLOCK_N=64)],
        [out], lambda: [x.double().sum(0)], lambda: x.sum(0), nbytes=m * n * 4 + n * 4,
    )  # fmt: skip


def add_rmsnorm(t, rows=16384, hidden=3072, eps=1e-6):
    """The residual updated in place (``r = x + r``, rounded to bf16) and RMSNorm of the unrounded sum."""
    x, r, w = t.randn(rows, hidden, dtype="bf16"), t.randn(rows, hidden, dtype="bf16"), t.randn(hidden, dtype="bf16")
    y, r0 = t.empty(rows, hidden, dtype="bf16"), t.clone(r)
    block = _p2(hidden)

    def ref():
        h = x.float() + r0.float()
        rstd = 1 / (h.pow(2).mean(1, keepdim=True) + eps).sqrt()
        return [h.to(r.dtype), (h * rstd * w.float()).to(y.dtype)]

    def torch_fn():
        h = x + r0
        hf = h.float()
        return h, (hf * t.torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(y.dtype)

    return Setup(
        K.add_rmsnorm_kernel, lambda c: (x, r, w, y, x.stride(0), r.stride(0), y.stride(0), hidden, eps),
        lambda c: (rows,), [cfg(8, BLOCK=block), cfg(4, BLOCK=block), cfg(16, BLOCK=block)],
        [r, y], ref, torch_fn, reset=lambda: r.copy_(r0), nbytes=4 * rows * hidden * 2 + hidden * 2, tol=2e-2,
    )  # fmt: skip


def softmax_bwd(t, rows=16384, n=2000):
    """``dx = y * (dy - sum(dy * y))`` per row, ``y`` a softmax's output."""
    dy, y, dx = t.randn(rows, n), t.randn(rows, n), t.empty(rows, n)
    if t.torch:
        y = t.torch.softmax(y, 1)
    block = _p2(n)

    def ref():
        dyd, yd = dy.double(), y.double()
        return [yd * (dyd - (dyd * yd).sum(1, keepdim=True))]

    return Setup(
        K.softmax_bwd_kernel, lambda c: (dy, y, dx, y.stride(0), n), lambda c: (rows,),
        [cfg(8, BLOCK=block), cfg(4, BLOCK=block), cfg(16, BLOCK=block)],
        [dx], ref, lambda: t.torch._softmax_backward_data(dy, y, 1, y.dtype), nbytes=3 * rows * n * 4,
    )  # fmt: skip


def int4_dequant(t, n=2**26 - 320):
    """Bytes of two 4-bit values (low nibble first, offset 8) to f16 pairs, one f16 scale per 64 bytes."""
    groups = cdiv(n, 64)
    scale, out = t.randn(groups, dtype="f16"), t.empty(2 * n, dtype="f16")
    q = _tensor(t, (n,), "u8", lambda torch: torch.randint(0, 256, (n,), dtype=torch.uint8, device=out.device))

    def dequant(s):  # s: each byte's scale
        lo = ((q & 0xF).to(t.torch.int8) - 8).to(s.dtype)
        hi = ((q >> 4).to(t.torch.int8) - 8).to(s.dtype)
        return t.torch.stack((lo * s, hi * s), -1).view(-1)

    def torch_fn():
        if n % 64:
            return dequant(scale.repeat_interleave(64)[:n])
        lo = ((q & 0xF).to(t.torch.int8) - 8).to(scale.dtype).view(groups, 64)
        hi = ((q >> 4).to(t.torch.int8) - 8).to(scale.dtype).view(groups, 64)
        return t.torch.stack((lo * scale[:, None], hi * scale[:, None]), -1).view(-1)

    return Setup(
        K.int4_dequant_kernel, lambda c: (q, scale, out, n), lambda c: (cdiv(n, c["BLOCK"]),),
        [cfg(4, BLOCK=1024), cfg(8, BLOCK=2048), cfg(8, BLOCK=4096)],
        [out], lambda: [dequant(scale.repeat_interleave(64)[:n])], torch_fn,
        nbytes=n + groups * 2 + 2 * n * 2, tol=1e-3,
    )  # fmt: skip


def rope_pairs(t, rows=16384 * 32, d=128):
    """Rotary embedding of adjacent pairs ``(x[2i], x[2i+1])`` of f16 rows (one row a head of a token), f16 math;
    the kernel reads the same ``d / 2`` cosines and sines for every row."""
    half = d // 2
    x, out = t.randn(rows, d, dtype="f16"), t.empty(rows, d, dtype="f16")
    if t.torch:
        angle = t.torch.rand(half, device=x.device) * 6.283185307179586
        cos, sin = t.torch.cos(angle).half(), t.torch.sin(angle).half()
    else:
        cos, sin = t.randn(half, dtype="f16"), t.randn(half, dtype="f16")

    def rotate(x, c, s):
        pairs = x.view(rows, half, 2)
        x1, x2 = pairs[..., 0], pairs[..., 1]
        return t.torch.stack((x1 * c - x2 * s, x1 * s + x2 * c), -1).view(rows, d)

    return Setup(
        K.rope_pairs_kernel, lambda c: (x, cos, sin, out, x.stride(0)), lambda c: (rows,),
        [cfg(4, HALF=half, BLOCK=d), cfg(2, HALF=half, BLOCK=d), cfg(1, HALF=half, BLOCK=d)],
        [out], lambda: [rotate(x.float(), cos.float(), sin.float()).to(out.dtype)], lambda: rotate(x, cos, sin),
        nbytes=2 * rows * d * 2 + 2 * half * 2, tol=1e-2,
    )  # fmt: skip


def argmax(t, rows=16384, n=4000):
    """Index of each row's largest f32 (i32 out)."""
    x, out = t.randn(rows, n), t.empty(rows, dtype="i32")
    block = _p2(n)
    return Setup(
        K.argmax_kernel, lambda c: (x, out, n, x.stride(0)), lambda c: (rows,),
        [cfg(8, BLOCK=block), cfg(4, BLOCK=block), cfg(16, BLOCK=block)],
        [out], lambda: [x.argmax(1)], lambda: x.argmax(1), nbytes=rows * n * 4 + rows * 4, tol=0,
    )  # fmt: skip


def fp8_quant(t, rows=16384, n=3584):
    """Per-row fp8 (e4m3) quantization of bf16: ``y = x * 448 / amax`` (saturating, nearest even), the
    inverse scale stored per row."""
    x, y, inv = t.randn(rows, n, dtype="bf16"), t.empty(rows, n, dtype="fp8e4"), t.empty(rows)
    block = _p2(n)

    def quantize():
        xf = x.float()
        scale = 448.0 / xf.abs().amax(1, keepdim=True).clamp_min(1e-12)
        return (xf * scale).to(y.dtype), 1.0 / scale[:, 0]

    def ref():
        # Both compilers divide with div.full.f32 (within 2 ulp), and bf16 inputs put many products x * 448 / amax
        # exactly on an fp8 rounding midpoint, where the last bit of 448 / amax picks the side. So an element may
        # differ from torch's where the exact product (in f64) is the midpoint between the two values (which are then
        # neighbours), nowhere else; where it does, the kernel's value is taken.
        want, inv_want = quantize()
        got, want_f = y.float(), want.float()
        off = got != want_f
        xd = x.double()
        exact = xd * 448.0 / xd.abs().amax(1, keepdim=True).clamp_min(1e-12)
        tie = (exact - (got.double() + want_f.double()) / 2).abs() <= 1e-6 * exact.abs()
        assert (tie | ~off).all(), "an element off where the exact value is no rounding midpoint, or NaN"
        return [t.torch.where(off, got, want_f), inv_want]

    def reset():
        y.view(t.torch.uint8).fill_(0x7F)  # NaN in e4m3fn
        inv.fill_(float("nan"))

    return Setup(
        K.fp8_quant_kernel, lambda c: (x, y, inv, n), lambda c: (rows,),
        [cfg(8, BLOCK=block), cfg(4, BLOCK=block), cfg(16, BLOCK=block)],
        [y, inv], ref, quantize, reset=reset, nbytes=rows * n * (2 + 1) + rows * 4,
    )  # fmt: skip


def colcumsum(t, chunk=64, n=2**18):
    """Running sums down the columns of an f32 ``chunk x n`` block (a chunked scan's chunk: 64 positions,
    the columns 64 sequences x 32 heads x 128 dims); the kernel reads whole columns, no masks."""
    x, y = t.randn(chunk, n), t.empty(chunk, n)
    return Setup(
        K.colcumsum_kernel, lambda c: (x, y, n), lambda c: (n // c["BN"],),
        [cfg(4, BM=chunk, BN=64), cfg(4, BM=chunk, BN=32), cfg(8, BM=chunk, BN=128)],
        [y], lambda: [x.double().cumsum(0)], lambda: x.cumsum(0), nbytes=2 * chunk * n * 4,
    )  # fmt: skip


def softmax_keep(t, rows=32768, n=992):
    """Row softmax of f32, ``BM`` rows a program (no row mask: ``rows`` a multiple of every ``BM``)."""
    x, y = t.randn(rows, n), t.empty(rows, n)
    block = _p2(n)
    return Setup(
        K.softmax_keep_kernel, lambda c: (x, y, x.stride(0), n), lambda c: (rows // c["BM"],),
        [cfg(4, BM=4, BN=block), cfg(4, BM=2, BN=block), cfg(8, BM=8, BN=block)],
        [y], lambda: [t.torch.softmax(x.double(), 1)], lambda: t.torch.softmax(x, 1), nbytes=2 * rows * n * 4,
    )  # fmt: skip


def gemv(t, n=14320, k=4160):
    """Decode-time ``y = W @ x`` of bf16, accumulated in f32, ``BLOCK_N`` rows of ``W`` a program (few programs:
    224 at ``BLOCK_N=64``); ``n`` and ``k`` leave tails of the row and column blocks."""
    w, x, y = t.randn(n, k, dtype="bf16"), t.randn(k, dtype="bf16"), t.empty(n, dtype="bf16")
    return Setup(
        K.gemv_kernel, lambda c: (w, x, y, n, k, w.stride(0)), lambda c: (cdiv(n, c["BLOCK_N"]),),
        [cfg(4, BLOCK_N=32, BLOCK_K=256), cfg(4, BLOCK_N=16, BLOCK_K=512), cfg(8, BLOCK_N=64, BLOCK_K=128)],
        [y], lambda: [(w.double() @ x.double()).to(y.dtype)], lambda: w @ x, nbytes=(n * k + k + n) * 2, tol=1e-2,
    )  # fmt: skip


def welford_layernorm(t, rows=4096, n=8000, eps=1e-5):
    """Layer norm of f16 rows (f32 weight and bias), mean and variance from one Welford pass (a running count,
    mean and M2 per column slot, combined at the end), then a pass that normalizes."""
    x, y = t.randn(rows, n, dtype="f16"), t.empty(rows, n, dtype="f16")
    w, b = t.randn(n), t.randn(n)
    F = t.torch.nn.functional if t.torch else None
    wh, bh = (w.half(), b.half()) if t.torch else (w, b)  # torch's layer norm takes f16 parameters with f16 rows
    return Setup(
        K.welford_layernorm_kernel, lambda c: (x, y, w, b, x.stride(0), n, eps), lambda c: (rows,),
        [cfg(4, BLOCK=1024), cfg(8, BLOCK=2048), cfg(8, BLOCK=1024)],
        [y], lambda: [F.layer_norm(x.double(), (n,), w.double(), b.double(), eps).to(y.dtype)],
        lambda: F.layer_norm(x, (n,), wh, bh, eps), nbytes=2 * rows * n * 2 + 2 * n * 4, tol=1e-2,
    )  # fmt: skip


def online_softmax(t, rows=4096, vocab=32000):
    """Softmax of vocabulary-long bf16 rows (f32 out) in two passes: a running max and a sum rescaled as the
    max grows, then ``exp(x - max) / sum``."""
    x, y = t.randn(rows, vocab, dtype="bf16"), t.empty(rows, vocab)
    return Setup(
        K.online_softmax_kernel, lambda c: (x, y, x.stride(0), y.stride(0), vocab), lambda c: (rows,),
        [cfg(8, BLOCK=2048), cfg(4, BLOCK=1024), cfg(8, BLOCK=4096)],
        [y], lambda: [t.torch.softmax(x.double(), 1)], lambda: t.torch.softmax(x, 1, dtype=t.torch.float32),
        nbytes=rows * vocab * (2 + 4),
    )  # fmt: skip


def swiglu_bwd(t, rows=4096, n=11008):
    """Gradients of ``silu(a) * b`` for bf16, in f32 with one sigmoid: ``da = dy * b * silu'(a)``,
    ``db = dy * silu(a)``; a row a program, one block covering it."""
    dy, a, b = t.randn(rows, n, dtype="bf16"), t.randn(rows, n, dtype="bf16"), t.randn(rows, n, dtype="bf16")
    da, db = t.empty(rows, n, dtype="bf16"), t.empty(rows, n, dtype="bf16")
    F = t.torch.nn.functional if t.torch else None
    block = _p2(n)

    def ref():
        dyf, af, bf = dy.float(), a.float(), b.float()
        sig = t.torch.sigmoid(af)
        silu = af * sig
        return [(dyf * bf * (sig + silu * (1 - sig))).to(da.dtype), (dyf * silu).to(db.dtype)]

    return Setup(
        K.swiglu_bwd_kernel, lambda c: (dy, a, b, da, db, a.stride(0), n), lambda c: (rows,),
        [cfg(16, BLOCK=block), cfg(8, BLOCK=block), cfg(32, BLOCK=block)],
        [da, db], ref, lambda: (t.torch.ops.aten.silu_backward(dy * b, a), dy * F.silu(a)),
        nbytes=5 * rows * n * 2, tol=1e-2,
    )  # fmt: skip


def w8a16_matmul(t, m=2048, n=11008, k=4096):
    """f16 activations times int8 weights (converted to f16 in the K loop), one f16 scale per output column."""
    a, b, c = t.randn(m, k, dtype="f16"), t.int8(k, n), t.empty(m, n, dtype="f16")
    scale = _tensor(t, (n,), "f16", lambda torch: (torch.rand(n, device="cuda") * 2 / (127 * k**0.5)).half())
    configs = [cfg(8, 3, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8),
               cfg(8, 4, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8),
               cfg(4, 4, BLOCK_M=64, BLOCK_N=128, BLOCK_K=64, GROUP_M=8)]  # fmt: skip
    return Setup(
        K.w8a16_matmul_kernel, lambda c_: (a, b, scale, c, m, n, k, k, 1, n, 1, n, 1),
        lambda c_: (cdiv(m, c_["BLOCK_M"]) * cdiv(n, c_["BLOCK_N"]),), configs,
        [c], lambda: [((a.double() @ b.double()) * scale.double()).half()], lambda: (a @ b.half()) * scale,
        nbytes=m * k * 2 + k * n + m * n * 2, flops=2 * m * n * k, tol=1e-2,
    )  # fmt: skip


def linear_gelu(t, m=8190, n=4096, k=4096):
    """``gelu(x @ w.T + bias)`` (tanh GELU) of f16, ``w`` as ``nn.Linear`` keeps it (N, K); ``m`` leaves a tail."""
    x, w, y = t.randn(m, k, dtype="f16"), t.randn(n, k, dtype="f16"), t.empty(m, n, dtype="f16")
    bias = t.randn(n, dtype="f16")
    if t.torch is not None:
        w.mul_(k**-0.5)
    F = t.torch.nn.functional if t.torch else None
    configs = [cfg(8, 3, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64), cfg(8, 3, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64),
               cfg(4, 4, BLOCK_M=128, BLOCK_N=64, BLOCK_K=64)]  # fmt: skip
    return Setup(
        K.linear_gelu_kernel, lambda c: (x, w, bias, y, m, n, k, x.stride(0), w.stride(0), y.stride(0)),
        lambda c: (cdiv(m, c["BLOCK_M"]), cdiv(n, c["BLOCK_N"])), configs,
        [y], lambda: [F.gelu(F.linear(x.double(), w.double(), bias.double()), approximate="tanh").half()],
        lambda: F.gelu(F.linear(x, w, bias), approximate="tanh"),
        nbytes=(m * k + n * k + m * n) * 2, flops=2 * m * n * k, tol=1e-2,
    )  # fmt: skip


def conv2d_nhwc(t, batch=32, h=28, w=28, c=256, k=256):
    """3x3 convolution, padding 1, stride 1, of NHWC f16 images by (R, S, C, K) weights, as an implicit GEMM."""
    x, y = t.randn(batch, h, w, c, dtype="f16"), t.empty(batch, h, w, k, dtype="f16")
    wt = t.randn(3, 3, c, k, dtype="f16")
    if t.torch is not None:
        wt.mul_((9 * c) ** -0.5)
    F = t.torch.nn.functional if t.torch else None
    if t.torch is not None:  # torch's own: the same bytes as channels-last NCHW views, weights (K, C, R, S)
        x_cl, w_cl = x.permute(0, 3, 1, 2), wt.permute(3, 2, 0, 1).contiguous(memory_format=t.torch.channels_last)
    fixed = dict(R=3, S=3, PAD=1, STRIDE=1)
    configs = [cfg(8, 3, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, **fixed),
               cfg(4, 3, BLOCK_M=128, BLOCK_N=64, BLOCK_K=64, **fixed),
               cfg(8, 4, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, **fixed)]  # fmt: skip
    rows = batch * h * w
    return Setup(
        K.conv2d_nhwc_kernel, lambda c_: (x, wt, y, batch, h, w, c, k, h, w),
        lambda c_: (cdiv(rows, c_["BLOCK_M"]), cdiv(k, c_["BLOCK_N"])), configs,
        [y], lambda: [F.conv2d(x_cl.double(), w_cl.double(), padding=1).permute(0, 2, 3, 1).half()],
        lambda: F.conv2d(x_cl, w_cl, padding=1),
        nbytes=(rows * c + 9 * c * k + rows * k) * 2, flops=2 * rows * k * 9 * c, tol=1e-2,
    )  # fmt: skip


def embedding_bwd(t, tokens=16383, dim=4096, vocab=32000):
    """The gradient of an embedding lookup: bf16 rows of ``dy`` added (atomically, f32) to their ids' rows."""
    dy, dw = t.randn(tokens, dim, dtype="bf16"), t.zeros(vocab, dim)
    ids = _tensor(t, (tokens,), "i64", lambda torch: torch.randint(0, vocab, (tokens,), device=dy.device))

    def ref():
        return [t.torch.zeros(vocab, dim, dtype=t.torch.float64, device=dy.device).index_add_(0, ids, dy.double())]

    return Setup(
        K.embedding_bwd_kernel, lambda c: (ids, dy, dw, tokens, dim),
        lambda c: (cdiv(tokens, c["BLOCK_T"]), cdiv(dim, c["BLOCK_D"])),
        [cfg(4, BLOCK_T=32, BLOCK_D=128), cfg(4, BLOCK_T=16, BLOCK_D=256), cfg(8, BLOCK_T=64, BLOCK_D=128)],
        [dw], ref, lambda: dw.index_add_(0, ids, dy.float()), reset=lambda: dw.zero_(),
        nbytes=tokens * dim * (2 + 4) + tokens * 8, tol=1e-5,
    )  # fmt: skip


def linear_scan(t, length=2048, d=32768):
    """``h_t = a_t * h_{t-1} + b_t`` down the rows of f32 ``(length, d)`` arrays, in chunks of ``BLOCK_L``
    steps (cumulative sums of ``log a``), ``0.9 <= a <= 1``. torch's column: ``torch.cumsum`` of ``b``, a
    scan of the same length without the recurrence's second input."""
    a = _tensor(t, (length, d), "f32", lambda torch: 0.9 + 0.1 * torch.rand(length, d, device="cuda"))
    b, h = t.randn(length, d), t.empty(length, d)

    def ref():
        out, state = t.torch.empty(length, d, dtype=t.torch.float64, device="cuda"), 0.0
        a64, b64 = a.double(), b.double()
        for i in range(length):
            state = a64[i] * state + b64[i]
            out[i] = state
        return [out]

    return Setup(
        K.linear_scan_kernel, lambda c: (a, b, h, length, d), lambda c: (cdiv(d, c["BLOCK_D"]),),
        [cfg(4, BLOCK_L=64, BLOCK_D=64), cfg(4, BLOCK_L=32, BLOCK_D=128), cfg(8, BLOCK_L=64, BLOCK_D=128)],
        [h], ref, lambda: t.torch.cumsum(b, 0), nbytes=3 * length * d * 4, tol=1e-4,
    )  # fmt: skip


def moe_router(t, tokens=65535, experts=64):
    """Routing of a mixture of experts: softmax over 64 f32 logits, the two largest probabilities renormalized,
    and their expert ids (i32)."""
    x, wts = t.randn(tokens, experts), t.empty(tokens, 2)
    ids = _tensor(t, (tokens, 2), "i32", lambda torch: torch.empty(tokens, 2, device="cuda", dtype=torch.int32))

    def torch_fn():
        top, which = t.torch.topk(t.torch.softmax(x, 1), 2, dim=1)
        return top / top.sum(1, keepdim=True), which

    def ref():
        top, which = t.torch.topk(t.torch.softmax(x.double(), 1), 2, dim=1)
        return [top / top.sum(1, keepdim=True), which.int()]

    return Setup(
        K.moe_router_kernel, lambda c: (x, wts, ids, tokens), lambda c: (cdiv(tokens, c["BLOCK_T"]),),
        [cfg(4, E=64, TOPK=2, BLOCK_T=32), cfg(4, E=64, TOPK=2, BLOCK_T=16), cfg(8, E=64, TOPK=2, BLOCK_T=64)],
        [wts, ids], ref, torch_fn, nbytes=tokens * experts * 4 + tokens * 2 * 8, tol=1e-5,
    )  # fmt: skip


def group_norm(t, batch=32, channels=512, hw=4096, groups=32, eps=1e-5):
    """Group norm of NCHW f16 activations (f32 weight and bias), a program per (sample, group): two passes over
    the group's ``channels / groups * hw`` contiguous values."""
    x, y = t.randn(batch, channels, hw, dtype="f16"), t.empty(batch, channels, hw, dtype="f16")
    w, b = t.randn(channels), t.randn(channels)
    F = t.torch.nn.functional if t.torch else None
    wh, bh = (w.half(), b.half()) if t.torch else (w, b)
    return Setup(
        K.group_norm_kernel, lambda c: (x, y, w, b, channels, hw, groups, eps), lambda c: (batch * groups,),
        [cfg(8, BLOCK=2048), cfg(4, BLOCK=1024), cfg(8, BLOCK=4096)],
        [y], lambda: [F.group_norm(x.double(), groups, w.double(), b.double(), eps).half()],
        lambda: F.group_norm(x, groups, wh, bh, eps), nbytes=3 * batch * channels * hw * 2, tol=1e-2,
    )  # fmt: skip


def decode_attention(t, batch=32, kv_heads=8, group=8, d=128, longest=4096):
    """One decode step of grouped-query attention (64 query heads on 8 KV heads, f16) over a paged cache:
    each sequence's tokens (1000 to 4096 of them) in scattered cache slots, found through a token table."""
    torch = t.torch
    lens = [1000 + (i * 997) % (longest - 1000 + 1) for i in range(batch)]
    slots = sum(lens)
    q = t.randn(batch, kv_heads * group, d, dtype="f16")
    k, v = t.randn(slots, kv_heads, d, dtype="f16"), t.randn(slots, kv_heads, d, dtype="f16")
    out = t.empty(batch, kv_heads * group, d, dtype="f16")
    table = _tensor(t, (batch, longest), "i32", lambda torch: torch.zeros(batch, longest, dtype=torch.int32,
                                                                          device="cuda"))  # fmt: skip
    seq = _tensor(t, (batch,), "i32", lambda torch: torch.tensor(lens, dtype=torch.int32, device="cuda"))
    if torch is not None:
        order = torch.randperm(slots, device="cuda", generator=torch.Generator("cuda").manual_seed(0)).int()
        ends = [sum(lens[: i + 1]) for i in range(batch)]
        for i, n in enumerate(lens):
            table[i, :n] = order[ends[i] - n : ends[i]]
    scale = d**-0.5

    def attend(dtype):
        outs = []
        for i, n in enumerate(lens):
            rows = table[i, :n].long()
            kk, vv = k[rows].to(dtype).transpose(0, 1), v[rows].to(dtype).transpose(0, 1)  # (kv heads, n, d)
            qq = q[i].to(dtype).view(kv_heads, group, d)
            outs.append(torch.softmax(qq @ kk.transpose(1, 2) * scale, -1) @ vv)
        return torch.stack(outs).view(batch, kv_heads * group, d)

    return Setup(
        K.decode_attention_kernel,
        lambda c: (q, k, v, table, seq, out, scale, kv_heads * group * d, d, kv_heads * d, d, kv_heads * d, d,
                   longest, kv_heads * group * d, d),
        lambda c: (batch, kv_heads),
        [cfg(4, 3, GROUP=group, BLOCK_H=16, BLOCK_N=64, HEAD_DIM=d), cfg(4, 2, GROUP=group, BLOCK_H=16, BLOCK_N=32,
         HEAD_DIM=d), cfg(8, 3, GROUP=group, BLOCK_H=16, BLOCK_N=128, HEAD_DIM=d)],
        [out], lambda: [attend(torch.float32).half()], lambda: attend(torch.float16),
        nbytes=2 * slots * kv_heads * d * 2 + 2 * batch * kv_heads * group * d * 2, tol=1e-2,
    )  # fmt: skip


def grouped_matmul(t, ms=(1536, 700, 2048, 1000, 1800, 512, 1300, 900), n=2816, k=4096):
    """A mixture of experts' eight expert GEMMs (f16, f32 accumulation) in one persistent launch: rows per
    expert from 512 to 2048 (tails), operands through int64 address tables, sizes and strides from int32 ones."""
    torch = t.torch
    a = [t.randn(m, k, dtype="f16") for m in ms]
    b = [t.randn(k, n, dtype="f16") for _ in ms]
    c = [t.empty(m, n, dtype="f16") for m in ms]

    def table(xs):
        return _tensor(t, (len(xs),), "i64", lambda torch: torch.tensor([x.data_ptr() for x in xs], device="cuda"))

    def ints(rows):
        return _tensor(t, (3 * len(rows),), "i32", lambda torch: torch.tensor(rows, dtype=torch.int32,
                                                                              device="cuda").flatten())  # fmt: skip

    tables = (table(a), table(b), table(c), ints([(m, n, k) for m in ms]), ints([(k, n, n) for _ in ms]))
    sms = torch.cuda.get_device_properties(0).multi_processor_count if torch is not None else 132
    configs = [cfg(8, 3, NUM_PROGRAMS=sms, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64),
               cfg(4, 3, NUM_PROGRAMS=sms, BLOCK_M=64, BLOCK_N=128, BLOCK_K=64),
               cfg(8, 4, NUM_PROGRAMS=sms, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64)]  # fmt: skip
    return Setup(
        K.grouped_matmul_kernel, lambda c_: (*tables, len(ms)), lambda c_: (c_["NUM_PROGRAMS"],), configs,
        c, lambda: [(x.float() @ y.float()).half() for x, y in zip(a, b)], lambda: [x @ y for x, y in zip(a, b)],
        nbytes=sum(m * k + k * n + m * n for m in ms) * 2, flops=2 * sum(ms) * n * k, tol=1e-2,
    )  # fmt: skip


def w4a16_matmul(t, m=2048, n=4096, k=4096, group=128):
    """f16 activations times GPTQ-packed 4-bit weights (eight per int32 along k; per group of 128 k a f16
    scale per column and a 4-bit zero); torch: the f16 matmul of the dequantized weights."""
    torch = t.torch
    a, c = t.randn(m, k, dtype="f16"), t.empty(m, n, dtype="f16")
    if torch is None:
        b, scales, zeros = Spec((k // 8, n), "i32"), Spec((k // group, n), "f16"), Spec((k // group, n // 8), "i32")
    else:

        def pack(nibbles, dim):  # eight 4-bit values along dim into one int32
            parts = nibbles.unflatten(dim, (-1, 8)).unbind(dim + 1)
            word = torch.zeros_like(parts[0])
            for j, part in enumerate(parts):
                word |= part << (4 * j)
            return word

        q = torch.randint(0, 16, (k, n), device="cuda", dtype=torch.int32)
        z = torch.randint(0, 16, (k // group, n), device="cuda", dtype=torch.int32)
        scales = (torch.rand(k // group, n, device="cuda") * 0.01 + 0.002).half()
        b, zeros = pack(q, 0), pack(z, 1)
        w = (q - z.repeat_interleave(group, 0)).float() * scales.float().repeat_interleave(group, 0)
        w16 = w.half()
    configs = [cfg(4, 3, GROUP_SIZE=group, BLOCK_M=64, BLOCK_N=128, BLOCK_K=64, GROUP_M=8),
               cfg(8, 3, GROUP_SIZE=group, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8),
               cfg(4, 4, GROUP_SIZE=group, BLOCK_M=64, BLOCK_N=64, BLOCK_K=128, GROUP_M=8)]  # fmt: skip
    return Setup(
        K.w4a16_matmul_kernel, lambda c_: (a, b, scales, zeros, c, m, n, k, k, n, n, n, n // 8),
        lambda c_: (cdiv(m, c_["BLOCK_M"]) * cdiv(n, c_["BLOCK_N"]),), configs,
        [c], lambda: [(a.double() @ w.double()).half()], lambda: a @ w16,
        nbytes=m * k * 2 + k * n // 2 + m * n * 2, flops=2 * m * n * k, tol=1e-2,
    )  # fmt: skip


def fp8_block_matmul(t, m=4000, n=4096, k=7168, block=128):
    """fp8 e4m3 ``a @ b.T`` with block scales (a: one f32 per row per 128 of k; b (N, K): one per 128 x 128
    block), bf16 out, ``m`` leaving a tail; torch: the bf16 matmul of the dequantized operands."""
    torch = t.torch
    a, b, c = t.randn(m, k, dtype="fp8e4"), t.randn(n, k, dtype="fp8e4"), t.empty(m, n, dtype="bf16")
    a_s = _tensor(t, (m, k // block), "f32", lambda torch: torch.rand(m, k // block, device="cuda") + 0.5)
    b_s = _tensor(t, (n // block, k // block), "f32",
                  lambda torch: torch.rand(n // block, k // block, device="cuda") * 0.01 + 0.005)  # fmt: skip
    if torch is not None:
        a_deq = a.float() * a_s.repeat_interleave(block, 1)
        b_deq = b.float() * b_s.repeat_interleave(block, 0).repeat_interleave(block, 1)
        a16, b16 = a_deq.bfloat16(), b_deq.bfloat16()
    configs = [cfg(8, 3, SCALE_BLOCK=block, BLOCK_M=128, BLOCK_N=128, BLOCK_K=128, GROUP_M=8),
               cfg(4, 3, SCALE_BLOCK=block, BLOCK_M=64, BLOCK_N=128, BLOCK_K=128, GROUP_M=8),
               cfg(8, 3, SCALE_BLOCK=block, BLOCK_M=128, BLOCK_N=256, BLOCK_K=128, GROUP_M=8)]  # fmt: skip
    return Setup(
        K.fp8_block_matmul_kernel, lambda c_: (a, b, a_s, b_s, c, m, n, k, k, k, n, k // block, k // block),
        lambda c_: (cdiv(m, c_["BLOCK_M"]) * cdiv(n, c_["BLOCK_N"]),), configs,
        [c], lambda: [(a_deq.double() @ b_deq.double().T).bfloat16()], lambda: a16 @ b16.T,
        nbytes=(m * k + n * k) + m * n * 2, flops=2 * m * n * k, tol=1e-2,
    )  # fmt: skip


def layernorm_bwd_locked(t, rows=16384, n=8000, groups=64):
    """Layer norm's backward of f16 rows, dw and db added into ``groups`` partial rows under spin locks (locks
    and counters zeroed before every launch, timed too); torch: autograd's backward of ``layer_norm``."""
    x, dy, dx = t.randn(rows, n, dtype="f16"), t.randn(rows, n, dtype="f16"), t.empty(rows, n, dtype="f16")
    w = t.randn(n, dtype="f16")
    dw_p, db_p, locks = t.empty(groups, n), t.empty(groups, n), t.zeros(2 * groups, dtype="i32")
    xf = x.float() if t.torch else None
    mean = xf.mean(1) if t.torch else t.empty(rows)
    rstd = (1 / (xf.var(1, unbiased=False) + 1e-5).sqrt()) if t.torch else t.empty(rows)
    F = t.torch.nn.functional if t.torch else None

    def ref():
        xr, wr = x.float().requires_grad_(), w.float().requires_grad_()
        br = t.torch.zeros(n, device=x.device, requires_grad=True)
        F.layer_norm(xr, (n,), wr, br, 1e-5).backward(dy.float())
        return [xr.grad.half(), wr.grad.unsqueeze(0), br.grad.unsqueeze(0)]

    def torch_fn():
        xr, wr = x.detach().requires_grad_(), w.detach().requires_grad_()
        br = t.torch.zeros(n, device=x.device, dtype=x.dtype, requires_grad=True)
        return t.torch.autograd.grad(F.layer_norm(xr, (n,), wr, br, 1e-5), (xr, wr, br), dy)

    configs = [cfg(8, 1, GROUP_M=groups, BLOCK=_p2(n)), cfg(16, 1, GROUP_M=groups, BLOCK=_p2(n)),
               cfg(4, 1, GROUP_M=groups, BLOCK=_p2(n))]  # fmt: skip
    return Setup(
        K.layernorm_bwd_locked_kernel, lambda c: (dx, dy, dw_p, db_p, x, w, mean, rstd, locks, n, n),
        lambda c: (rows,), configs, [dx, Summed(dw_p), Summed(db_p)], ref, torch_fn,
        before=lambda: locks.zero_(), nbytes=3 * rows * n * 2, tol=2e-2,
    )  # fmt: skip


def varlen_attention(t, lengths=(3000, 517, 4096, 1200, 2048, 3333, 800, 4000, 1536, 2900, 640, 3700), heads=16,
                     d=128, causal=True):  # fmt: skip
    """Causal attention over a prefill batch of packed f16 sequences of different lengths (tails in most), 16 heads
    of 128; torch: ``scaled_dot_product_attention`` on the batch padded to its longest sequence."""
    torch = t.torch
    tokens, longest = sum(lengths), max(lengths)
    q, k, v = (t.randn(tokens, heads, d, dtype="f16") for _ in range(3))
    o = t.empty(tokens, heads, d, dtype="f16")
    starts = [sum(lengths[:i]) for i in range(len(lengths) + 1)]
    cu = _tensor(t, (len(starts),), "i32", lambda torch: torch.tensor(starts, dtype=torch.int32, device="cuda"))
    scale = d**-0.5
    if torch is not None:
        F = torch.nn.functional

        def padded(x):
            out = x.new_zeros(len(lengths), longest, heads, d)
            for i, n in enumerate(lengths):
                out[i, :n] = x[starts[i] : starts[i + 1]]
            return out.transpose(1, 2)

        qp, kp, vp = padded(q), padded(k), padded(v)

    def ref():
        outs = []
        for lo, hi in zip(starts[:-1], starts[1:]):
            x, y, z = (a[lo:hi].float().transpose(0, 1) for a in (q, k, v))
            outs.append(F.scaled_dot_product_attention(x, y, z, is_causal=causal).transpose(0, 1))
        return [torch.cat(outs).half()]

    flops = sum(4 * n * n * d * heads // (2 if causal else 1) for n in lengths)
    configs = [cfg(8, 3, CAUSAL=causal, BLOCK_M=128, BLOCK_N=64, HEAD_DIM=d),
               cfg(8, 3, CAUSAL=causal, BLOCK_M=128, BLOCK_N=128, HEAD_DIM=d),
               cfg(4, 3, CAUSAL=causal, BLOCK_M=64, BLOCK_N=64, HEAD_DIM=d)]  # fmt: skip
    return Setup(
        K.varlen_attention_kernel, lambda c: (q, k, v, o, cu, scale, heads * d, d),
        lambda c: (cdiv(longest, c["BLOCK_M"]), heads, len(lengths)), configs,
        [o], ref, lambda: F.scaled_dot_product_attention(qp, kp, vp, is_causal=causal),
        nbytes=4 * tokens * heads * d * 2, flops=flops, tol=1e-2,
    )  # fmt: skip


def nf4_dequant(t, n=2**26 - 128, qblock=64):
    """QLoRA's NF4 weights (two 4-bit codes a byte, a 16-entry f32 codebook, an f32 absmax per 64) to bf16;
    torch: the same lookup by indexing."""
    torch = t.torch
    out = t.empty(n, dtype="bf16")
    q = _tensor(t, (n // 2,), "u8", lambda torch: torch.randint(0, 256, (n // 2,), device="cuda", dtype=torch.uint8))
    absmax = t.randn(-(-n // qblock)) if torch is None else torch.rand(-(-n // qblock), device="cuda") + 0.5
    code = t.randn(16) if torch is None else torch.sort(torch.randn(16, device="cuda")).values

    def lookup(dtype):
        codes = torch.stack((q >> 4, q & 15), -1).flatten().long()
        return (code[codes].to(dtype) * absmax.to(dtype).repeat_interleave(qblock)[:n]).bfloat16()

    configs = [cfg(4, 3, BLOCK=1024, QBLOCK=qblock), cfg(8, 3, BLOCK=2048, QBLOCK=qblock),
               cfg(4, 3, BLOCK=512, QBLOCK=qblock)]  # fmt: skip
    return Setup(
        K.nf4_dequant_kernel, lambda c: (q, absmax, code, out, n), lambda c: (cdiv(n // 2, c["BLOCK"]),), configs,
        [out], lambda: [lookup(torch.float64)], lambda: lookup(torch.float32),
        nbytes=n // 2 + n * 2 + -(-n // qblock) * 4, tol=1e-2,
    )  # fmt: skip


def fused_moe(t, tokens=4000, top_k=2, experts=8, n=14336, k=4096, block_m=64):
    """A mixture of experts' up projection as serving engines fuse it (f16; eight experts, two of them a token;
    (token, choice) pairs sorted by expert and padded to blocks of 64); torch: one matmul per expert of its
    gathered rows, scaled by the router weights."""
    torch = t.torch
    a, c = t.randn(tokens, k, dtype="f16"), t.empty(tokens * top_k, n, dtype="f16")
    w = t.randn(experts, n, k, dtype="f16")
    route = t.randn(tokens, top_k)
    blocks = cdiv(tokens * top_k + experts * (block_m - 1), block_m)  # the most any routing can take
    if torch is None:
        ids, owners, padded = Spec((blocks * block_m,), "i32"), Spec((blocks,), "i32"), Spec((1,), "i32")
    else:
        choice = torch.rand(tokens, experts, device="cuda").topk(top_k, 1).indices.flatten()
        ids, owners = [], []
        for e in range(experts):
            mine = (choice == e).nonzero().flatten().int()
            pad = cdiv(len(mine), block_m) * block_m - len(mine)
            ids.append(torch.cat([mine, mine.new_full((pad,), tokens * top_k)]))
            owners += [e] * ((len(mine) + pad) // block_m)
        ids = torch.cat(ids)
        owners = torch.tensor(owners, dtype=torch.int32, device="cuda")
        padded = torch.tensor([len(ids)], dtype=torch.int32, device="cuda")
        ids = torch.cat([ids, ids.new_full((blocks * block_m - len(ids),), tokens * top_k)])

    def experts_apply(dtype):
        out = torch.empty(tokens * top_k, n, dtype=dtype, device="cuda")
        for e in range(experts):
            pairs = (choice == e).nonzero().flatten()
            out[pairs] = (a[pairs // top_k].to(dtype) @ w[e].to(dtype).T) * route.flatten()[pairs, None].to(dtype)
        return out

    meta = {"TOP_K": top_k, "MUL_ROUTED_WEIGHT": True, "BLOCK_M": block_m, "BLOCK_K": 64, "GROUP_M": 8}
    configs = [cfg(8, 3, BLOCK_N=128, **meta), cfg(4, 4, BLOCK_N=64, **meta), cfg(8, 3, BLOCK_N=256, **meta)]
    return Setup(
        K.fused_moe_kernel,
        lambda c_: (a, w, c, route, ids, owners, padded, n, k, tokens * top_k, k, 1, n * k, k, 1, n, 1),
        lambda c_: (blocks * cdiv(n, c_["BLOCK_N"]),), configs,
        [c], lambda: [experts_apply(torch.float32).half()], lambda: experts_apply(torch.float16),
        nbytes=(tokens * k + experts * n * k + tokens * top_k * n) * 2, flops=2 * tokens * top_k * n * k, tol=1e-2,
    )  # fmt: skip


def int8_quant(t, rows=16384, n=7168):
    """Per-row symmetric int8 quantization of bf16 activations (rint, clamp, an f32 scale a row); torch: the same
    formula with ``torch.round`` (halves to even). The tolerance lets a quotient that ``/`` rounds differently
    (within 2 ulp on the GPU) land one step away."""
    torch = t.torch
    x, scale = t.randn(rows, n, dtype="bf16"), t.empty(rows)
    y = _tensor(t, (rows, n), "i8", lambda torch: torch.empty(rows, n, dtype=torch.int8, device="cuda"))

    def quantize():
        s = x.float().abs().amax(1, keepdim=True).clamp_min(1e-8) / 127.0
        return torch.round(x.float() / s).clamp(-128, 127).to(torch.int8), s.flatten()

    configs = [cfg(8, 3, BLOCK=8192), cfg(16, 3, BLOCK=8192), cfg(4, 3, BLOCK=8192)]
    return Setup(
        K.int8_quant_kernel, lambda c: (x, y, scale, n, n), lambda c: (rows,), configs,
        [y, scale], lambda: list(quantize()), lambda: quantize(), nbytes=rows * n * 3 + rows * 4, tol=1e-2,
    )  # fmt: skip


#: the probe's kernels by the names ``benchmarks/probe/run.py`` gives them
def tail_mass(t, rows=16384, n=1000):
    """Suffix sums of f32 rows (a top-p sampler's tail mass over sorted probabilities): a reverse scan of
    unaligned, masked rows, one element a thread a step."""
    x, out = t.randn(rows, n), t.empty(rows, n)
    torch = t.torch

    def suffix(v):
        return torch.flip(torch.cumsum(torch.flip(v, (1,)), 1), (1,))

    return Setup(
        K.tail_mass_kernel, lambda c: (x, out, x.stride(0), n), lambda c: (rows,),
        [cfg(4, BLOCK=1024), cfg(8, BLOCK=1024), cfg(2, BLOCK=1024)],
        [out], lambda: [suffix(x.double())], lambda: suffix(x), nbytes=2 * rows * n * 4, tol=1e-4,
    )  # fmt: skip


def dropout_add_layernorm(t, rows=16384, n=4000, p=0.1, eps=1e-5):
    """``y = layer_norm(dropout(x) + residual)`` of bf16 rows with f32 weight and bias, the kept mask saved as
    bytes; the reference applies the saved mask (and checks that about ``1 - p`` of it is kept)."""
    torch = t.torch
    x, r, w, b = t.randn(rows, n, dtype="bf16"), t.randn(rows, n, dtype="bf16"), t.randn(n), t.randn(n)
    y = t.empty(rows, n, dtype="bf16")
    keep = _tensor(t, (rows, n), "i8", lambda torch: torch.empty(rows, n, dtype=torch.int8, device="cuda"))
    F = torch.nn.functional if torch else None

    def ref():
        kept = keep != 0
        assert abs(kept.float().mean().item() - (1 - p)) < 0.01, "dropout keeps about 1 - p"
        h = torch.where(kept, x.float() / (1 - p), 0.0) + r.float()
        return [F.layer_norm(h, (n,), w, b, eps).to(y.dtype), keep]

    def torch_fn():
        return F.layer_norm((F.dropout(x, p) + r).float(), (n,), w, b, eps).to(y.dtype)

    return Setup(
        K.dropout_add_layernorm_kernel, lambda c: (x, r, w, b, y, keep, 1234, p, x.stride(0), n, eps),
        lambda c: (rows,), [cfg(8, BLOCK=4096), cfg(4, BLOCK=4096), cfg(16, BLOCK=4096)],
        [y, keep], ref, torch_fn, nbytes=rows * n * (2 + 2 + 2 + 1) + 2 * n * 4, tol=2e-2,
    )  # fmt: skip


def expert_histogram(t, n=2**25 - 40, experts=256):
    """Tokens per expert: ``tl.histogram`` of int32 ids per block, added atomically into the global counts (zeroed
    before every launch, timed too); torch: ``bincount``."""
    ids = t.randint(experts, (n,))
    counts = t.zeros(experts, dtype="i32")

    def ref():
        return [t.torch.bincount(ids, minlength=experts).to(t.torch.int32)]

    return Setup(
        K.expert_histogram_kernel, lambda c: (ids, counts, n), lambda c: (cdiv(n, c["BLOCK"]),),
        [cfg(4, BINS=experts, BLOCK=4096), cfg(8, BINS=experts, BLOCK=8192), cfg(4, BINS=experts, BLOCK=2048)],
        [counts], ref, lambda: t.torch.bincount(ids, minlength=experts), before=lambda: counts.zero_(),
        nbytes=n * 4, tol=0,
    )  # fmt: skip


def _row_major_matmul(kernel, a, b, c, configs, elem_bytes, tol):
    """The probe's tutorial-style matmuls of row-major ``a @ b`` into ``c``: launch, grid, float64 reference, torch's
    ``a @ b``; bytes and flops counted from the shapes."""
    (m, k), n = a.shape, b.shape[1]
    return Setup(
        kernel, lambda c_: (a, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0)),
        lambda c_: (cdiv(m, c_["BLOCK_M"]), cdiv(n, c_["BLOCK_N"])), configs,
        [c], lambda: [(a.double() @ b.double()).to(c.dtype)], lambda: a @ b,
        nbytes=(m * k + k * n + m * n) * elem_bytes, flops=2 * m * n * k, tol=tol,
    )  # fmt: skip


def f16_acc_matmul(t, m=8192, n=8192, k=1024):
    """``a @ b`` of f16 with an f16 accumulator (``out_dtype=tl.float16``), ``b`` scaled by ``k ** -0.5`` so the
    sums stay well inside f16; torch: ``a @ b`` (cuBLAS, f32 accumulation). The tolerance is f16 accumulation's:
    Triton's wgmma rounds the sum to f16 after every 16 products of K (tilelab once, after the loop)."""
    a, b, c = t.randn(m, k, dtype="f16"), t.randn(k, n, dtype="f16"), t.empty(m, n, dtype="f16")
    if t.torch is not None:
        b.mul_(k**-0.5)
    configs = [cfg(8, 3, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, ACC_IN_DOT=True),
               cfg(8, 3, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, ACC_IN_DOT=True),
               cfg(4, 4, BLOCK_M=128, BLOCK_N=64, BLOCK_K=64, ACC_IN_DOT=True)]  # fmt: skip
    return _row_major_matmul(K.f16_acc_matmul_kernel, a, b, c, configs, elem_bytes=2, tol=3e-2)


def tf32x3_matmul(t, m=4096, n=4096, k=4096):
    """``a @ b`` of f32 in ``tf32x3`` (near-f32 sums on tf32 tensor cores); torch: ``a @ b`` with tf32 off, cuBLAS's
    f32 GEMM (the torch default), the exact sums this precision stands in for."""
    a, b, c = t.randn(m, k), t.randn(k, n), t.empty(m, n)
    configs = [cfg(8, 3, BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, PRECISION="tf32x3"),
               cfg(4, 3, BLOCK_M=128, BLOCK_N=64, BLOCK_K=32, PRECISION="tf32x3"),
               cfg(4, 3, BLOCK_M=64, BLOCK_N=128, BLOCK_K=32, PRECISION="tf32x3")]  # fmt: skip
    return _row_major_matmul(K.precision_matmul_kernel, a, b, c, configs, elem_bytes=4, tol=1e-4)


def ieee_matmul(t, m=2048, n=2048, k=2048):
    """``a @ b`` of f32 in full f32 products (``input_precision="ieee"``, ``allow_tf32=False``: no tensor core);
    torch: ``a @ b`` with tf32 off (cuBLAS's f32 GEMM, the torch default)."""
    a, b, c = t.randn(m, k), t.randn(k, n), t.empty(m, n)
    configs = [cfg(4, 3, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, PRECISION="ieee"),
               cfg(8, 3, BLOCK_M=128, BLOCK_N=64, BLOCK_K=32, PRECISION="ieee"),
               cfg(8, 3, BLOCK_M=128, BLOCK_N=128, BLOCK_K=16, PRECISION="ieee")]  # fmt: skip
    return _row_major_matmul(K.precision_matmul_kernel, a, b, c, configs, elem_bytes=4, tol=1e-4)


def weight_grad(t, tokens=8190, d_in=4096, d_out=4096):
    """``dW = x.T @ dy`` of bf16 (a linear layer's backward), ``x`` and ``dy`` as the forward kept them (tokens
    first, row-major), f32 sums rounded to bf16; ``tokens`` leaves a tail. torch: ``x.t() @ dy`` (cuBLAS)."""
    x, dy, dw = (
        t.randn(tokens, d_in, dtype="bf16"),
        t.randn(tokens, d_out, dtype="bf16"),
        t.empty(d_in, d_out, dtype="bf16"),
    )
    if t.torch is not None:
        dy.mul_(tokens**-0.5)
    configs = [cfg(8, 3, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64), cfg(8, 3, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64),
               cfg(4, 4, BLOCK_M=128, BLOCK_N=64, BLOCK_K=64)]  # fmt: skip
    return Setup(
        K.weight_grad_kernel, lambda c: (x, dy, dw, tokens, d_in, d_out, x.stride(0), dy.stride(0), dw.stride(0)),
        lambda c: (cdiv(d_in, c["BLOCK_M"]), cdiv(d_out, c["BLOCK_N"])), configs,
        [dw], lambda: [(x.double().t() @ dy.double()).to(dw.dtype)], lambda: x.t() @ dy,
        nbytes=(tokens * (d_in + d_out) + d_in * d_out) * 2, flops=2 * tokens * d_in * d_out, tol=1e-2,
    )  # fmt: skip


def attention_bias(t, bh=64, n=2000, d=64):
    """Attention forward with an f16 bias per head (``scores + bias``), f16 q, k, v of ``bh`` heads, ``n`` tokens
    (a tail), the bias loaded with ``other=-inf`` (keys past its length masked out); torch:
    ``scaled_dot_product_attention`` with the bias as its float ``attn_mask``."""
    q, k, v = (t.randn(bh, n, d, dtype="f16") for _ in range(3))
    bias, o = t.randn(bh, n, n, dtype="f16"), t.empty(bh, n, d, dtype="f16")
    scale = d**-0.5
    F = t.torch.nn.functional if t.torch else None
    configs = [cfg(4, 3, OTHER=float("-inf"), BLOCK_M=64, BLOCK_N=64, HEAD_DIM=d),
               cfg(8, 3, OTHER=float("-inf"), BLOCK_M=128, BLOCK_N=64, HEAD_DIM=d),
               cfg(8, 3, OTHER=float("-inf"), BLOCK_M=128, BLOCK_N=128, HEAD_DIM=d)]  # fmt: skip

    def ref():
        return [F.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=bias.double()).half()]

    return Setup(
        K.attention_bias_kernel, lambda c: (q, k, v, bias, o, scale, n, n),
        lambda c: (cdiv(n, c["BLOCK_M"]), bh), configs,
        [o], ref, lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=bias),
        nbytes=(4 * bh * n * d + bh * n * n) * 2, flops=4 * bh * n * n * d, tol=1e-2,
    )  # fmt: skip


CASES = {
    "gelu f16": gelu,
    "embedding gather": embedding,
    "column sums": col_sum,
    "residual add + rmsnorm bf16": add_rmsnorm,
    "softmax backward": softmax_bwd,
    "int4 dequant (interleave)": int4_dequant,
    "rope pairs (split / join)": rope_pairs,
    "argmax": argmax,
    "fp8 row quantization": fp8_quant,
    "column cumsum": colcumsum,
    "softmax keep_dims": softmax_keep,
    "gemv bf16": gemv,
    "welford layernorm": welford_layernorm,
    "online softmax": online_softmax,
    "swiglu backward": swiglu_bwd,
    "w8a16 matmul": w8a16_matmul,
    "linear + gelu epilogue": linear_gelu,
    "conv2d 3x3 nhwc (implicit gemm)": conv2d_nhwc,
    "embedding backward (atomics)": embedding_bwd,
    "linear recurrence (chunked scan)": linear_scan,
    "moe router softmax + top-2": moe_router,
    "group norm f16": group_norm,
    "decode attention (paged, GQA)": decode_attention,
    "grouped matmul (address tables)": grouped_matmul,
    "w4a16 matmul (gptq nibbles)": w4a16_matmul,
    "fp8 block-scaled matmul": fp8_block_matmul,
    "layer norm backward (spin locks)": layernorm_bwd_locked,
    "varlen attention (packed sequences)": varlen_attention,
    "nf4 dequant (codebook gather)": nf4_dequant,
    "fused moe (sorted token ids)": fused_moe,
    "int8 row quantization (libdevice rint)": int8_quant,
    "tail mass (reverse cumsum)": tail_mass,
    "dropout + residual + layer norm": dropout_add_layernorm,
    "f16-accumulate matmul": f16_acc_matmul,
    "f32 matmul in tf32x3": tf32x3_matmul,
    "f32 matmul in ieee (FMA)": ieee_matmul,
    "expert histogram (tl.histogram)": expert_histogram,
    "weight gradient (x.T @ dy)": weight_grad,
    "attention with a bias": attention_bias,
}
