"""The puzzles, easy to hard: each a numpy spec (what to compute) and a maker of random cases.

Level 1 is one load and one store; level 5 is flash attention. Sizes are drawn at random and
are rarely a multiple of the block, so every kernel needs its masks. The kernel takes the
case's arguments in order, then the constants as constexpr keywords, on the case's grid.
"""

from __future__ import annotations

import numpy as np

from .spec import Case, cdiv, puzzle


def _f32(rng, *shape) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def _out(*shape, dtype=np.float32) -> np.ndarray:
    return np.empty(shape, dtype=dtype)


# ----------------------------------------------------------------------------- level 1: one tile


@puzzle(level=1, outputs=("out",), constants={"BLOCK": 128})
def copy(x, n):
    """Copy a vector: ``out[i] = x[i]`` for ``i < n``.

    Program ``pid`` handles elements ``pid * BLOCK ... pid * BLOCK + BLOCK - 1``; ``n`` is not a multiple
    of ``BLOCK``, so mask the last block.
    """
    return {"out": x.copy()}


@copy.maker
def _(rng):
    n = int(rng.integers(300, 1000))
    return Case({"x": _f32(rng, n), "out": _out(n), "n": n}, grid=(cdiv(n, 128),))


@puzzle(level=1, outputs=("out",), constants={"BLOCK": 128})
def axpy(a, x, y, n):
    """Scale and add: ``out = a * x + y``, where ``a`` is a scalar argument."""
    return {"out": (a * x + y).astype(np.float32)}


@axpy.maker
def _(rng):
    n = int(rng.integers(300, 1000))
    args = {"a": float(rng.uniform(-2, 2)), "x": _f32(rng, n), "y": _f32(rng, n), "out": _out(n), "n": n}
    return Case(args, grid=(cdiv(n, 128),))


@puzzle(level=1, outputs=("out",), constants={"BLOCK": 128})
def flip(x, n):
    """Reverse a vector: ``out[i] = x[n - 1 - i]``."""
    return {"out": x[::-1].copy()}


@flip.maker
def _(rng):
    n = int(rng.integers(300, 1000))
    return Case({"x": _f32(rng, n), "out": _out(n), "n": n}, grid=(cdiv(n, 128),))


# ----------------------------------------------------------------------------- level 2: 2-D tiles, reductions


@puzzle(level=2, outputs=("out",), constants={"BM": 16, "BN": 32})
def outer_add(x, y, m, n):
    """Outer sum: ``out[i, j] = x[i] + y[j]``, ``out`` is ``m x n`` row-major.

    The grid is 2-D: program ``(pid_m, pid_n)`` writes the ``BM x BN`` tile at rows ``pid_m * BM``
    and columns ``pid_n * BN``. Broadcast with ``[:, None]`` and ``[None, :]``.
    """
    return {"out": x[:, None] + y[None, :]}


@outer_add.maker
def _(rng):
    m, n = (int(v) for v in rng.integers(20, 70, size=2))
    args = {"x": _f32(rng, m), "y": _f32(rng, n), "out": _out(m, n), "m": m, "n": n}
    return Case(args, grid=(cdiv(m, 16), cdiv(n, 32)))


@puzzle(level=2, outputs=("out",), constants={"BM": 16, "BN": 16})
def transpose(x, m, n):
    """Transpose: ``x`` is ``m x n`` row-major, ``out`` is ``n x m`` row-major, ``out[j, i] = x[i, j]``.

    Grid ``(cdiv(m, BM), cdiv(n, BN))``; each program moves one ``BM x BN`` tile of ``x``.
    """
    return {"out": x.T.copy()}


@transpose.maker
def _(rng):
    m, n = (int(v) for v in rng.integers(20, 60, size=2))
    return Case({"x": _f32(rng, m, n), "out": _out(n, m), "m": m, "n": n}, grid=(cdiv(m, 16), cdiv(n, 16)))


@puzzle(level=2, outputs=("out",), constants={"BLOCK": 64})
def row_sum(x, m, n):
    """Sum each row: ``out[i] = x[i, :].sum()``; ``x`` is ``m x n`` row-major with ``n <= BLOCK``.

    One program per row: load the whole row as one masked tile and reduce it with ``tl.sum``.
    """
    return {"out": x.sum(axis=1, dtype=np.float32)}


@row_sum.maker
def _(rng):
    m, n = int(rng.integers(3, 12)), int(rng.integers(10, 64))
    return Case({"x": _f32(rng, m, n), "out": _out(m), "m": m, "n": n}, grid=(m,))


# ----------------------------------------------------------------------------- level 3: loops, scans, atomics


@puzzle(level=3, outputs=("out",), constants={"BLOCK": 128, "K": 4})
def conv1d(x, w, n):
    """1-D convolution: ``out[i] = sum(w[k] * x[i + k] for k < K)``, with ``x[j] = 0`` for ``j >= n``.

    ``w`` holds ``K`` taps. A ``for k in tl.static_range(K)`` loop loads a shifted tile of ``x`` per tap.
    """
    padded = np.concatenate([x, np.zeros(len(w), np.float32)])
    return {"out": sum(w[k] * padded[k : k + n] for k in range(len(w))).astype(np.float32)}


@conv1d.maker
def _(rng):
    n = int(rng.integers(300, 800))
    return Case({"x": _f32(rng, n), "w": _f32(rng, 4), "out": _out(n), "n": n}, grid=(cdiv(n, 128),))


@puzzle(level=3, outputs=("out",), constants={"BLOCK": 64})
def row_sum_loop(x, m, n):
    """Sum each row of a wide matrix: ``out[i] = x[i, :].sum()`` where ``n`` is larger than ``BLOCK``.

    One program per row; loop over the columns ``BLOCK`` at a time, carrying the partial sum.
    """
    return {"out": x.sum(axis=1, dtype=np.float32)}


@row_sum_loop.maker
def _(rng):
    m, n = int(rng.integers(3, 8)), int(rng.integers(100, 400))
    return Case({"x": _f32(rng, m, n), "out": _out(m), "m": m, "n": n}, grid=(m,))


@puzzle(level=3, outputs=("out",), constants={"BLOCK": 64})
def softmax(x, m, n):
    """Row-wise softmax: ``out[i] = exp(x[i] - max(x[i])) / sum(exp(x[i] - max(x[i])))``, ``n <= BLOCK``.

    One program per row. Masked-off lanes must not win the max: load them as ``-inf``.
    """
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"out": (e / e.sum(axis=1, keepdims=True)).astype(np.float32)}


@softmax.maker
def _(rng):
    m, n = int(rng.integers(3, 12)), int(rng.integers(10, 64))
    return Case({"x": _f32(rng, m, n), "out": _out(m, n), "m": m, "n": n}, grid=(m,))


@puzzle(level=3, outputs=("out",), constants={"BLOCK": 256}, atol=1e-4)
def cumsum(x, n):
    """Prefix sum: ``out[i] = x[0] + ... + x[i]``, one program, ``n <= BLOCK`` (see ``tl.cumsum``)."""
    return {"out": np.cumsum(x, dtype=np.float32)}


@cumsum.maker
def _(rng):
    n = int(rng.integers(50, 256))
    return Case({"x": _f32(rng, n), "out": _out(n), "n": n}, grid=(1,))


@puzzle(level=3, outputs=("counts",), constants={"BLOCK": 128, "BINS": 16}, zeroed=("counts",))
def histogram(x, n):
    """Histogram: ``counts[b]`` = how many ``x[i] == b`` (``x`` holds int32 values in ``0 .. BINS-1``).

    Many programs add into the same bins: use ``tl.atomic_add``. ``counts`` is zero before the
    launch (the only output that is not poisoned).
    """
    return {"counts": np.bincount(x, minlength=16).astype(np.int32)}


@histogram.maker
def _(rng):
    n = int(rng.integers(300, 1000))
    x = rng.integers(0, 16, size=n).astype(np.int32)
    return Case({"x": x, "counts": np.zeros(16, np.int32), "n": n}, grid=(cdiv(n, 128),))


# ----------------------------------------------------------------------------- level 4-5: dot products


@puzzle(level=4, outputs=("out",), constants={"BM": 16, "BN": 32}, atol=1e-4)
def matvec(a, x, m, n):
    """Matrix-vector product: ``out = a @ x``, ``a`` is ``m x n`` row-major.

    Program ``pid`` owns ``BM`` rows; loop over the columns ``BN`` at a time, multiply a
    ``BM x BN`` tile of ``a`` by ``x[None, :]`` and sum along axis 1.
    """
    return {"out": (a @ x).astype(np.float32)}


@matvec.maker
def _(rng):
    m, n = int(rng.integers(20, 60)), int(rng.integers(40, 120))
    return Case({"a": _f32(rng, m, n), "x": _f32(rng, n), "out": _out(m), "m": m, "n": n}, grid=(cdiv(m, 16),))


@puzzle(level=4, outputs=("c",), constants={"BM": 16, "BN": 16, "BK": 16}, atol=2e-2, rtol=1e-2)
def matmul(a, b, m, n, k):
    """Matrix multiply: ``c = a @ b`` with ``a`` ``m x k``, ``b`` ``k x n``, all row-major.

    Program ``(pid_m, pid_n)`` owns a ``BM x BN`` tile of ``c``: loop over ``k`` in steps of ``BK``,
    accumulate ``tl.dot`` of the two tiles in float32, store once at the end. ``tl.dot`` multiplies
    float32 inputs in TF32 (10 mantissa bits), as tensor cores do, so the check allows ~1e-2.
    """
    return {"c": (a @ b).astype(np.float32)}


@matmul.maker
def _(rng):
    m, n, k = (int(v) for v in rng.integers(20, 50, size=3))
    args = {"a": _f32(rng, m, k), "b": _f32(rng, k, n), "c": _out(m, n), "m": m, "n": n, "k": k}
    return Case(args, grid=(cdiv(m, 16), cdiv(n, 16)))


@puzzle(level=5, outputs=("out",), constants={"BM": 16, "BN": 16, "D": 16}, atol=1e-2, rtol=1e-2)
def attention(q, k, v, n):
    """Attention, one head: ``out = softmax(q @ k.T / sqrt(D)) @ v``; ``q, k, v`` are ``n x D``.

    Program ``pid`` owns ``BM`` query rows and walks the keys ``BN`` at a time, keeping a running
    max ``m_i``, a running denominator ``l_i`` and an unnormalised accumulator (online softmax):
    the ``n x n`` score matrix is never stored.
    """
    s = q @ k.T / np.sqrt(q.shape[1])
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return {"out": ((p / p.sum(axis=1, keepdims=True)) @ v).astype(np.float32)}


@attention.maker
def _(rng):
    n = int(rng.integers(20, 60))
    args = {"q": _f32(rng, n, 16), "k": _f32(rng, n, 16), "v": _f32(rng, n, 16), "out": _out(n, 16), "n": n}
    return Case(args, grid=(cdiv(n, 16),))
