"""05: flash attention: the online softmax."""

from .cells import code, exercise, md, setup
from .cells import notebook as _notebook

FILENAME = "05_flash_attention.ipynb"


def notebook():
    return _notebook(
        [
            md("""
        # 05 · Flash attention

        `softmax(Q Kᵀ / √d) V` materialises an `n x n` score matrix. Flash attention never stores it: each
        program takes a block of queries and streams the keys and values block by block, keeping a running
        maximum `m`, a running denominator `l` and an unnormalised output. When a new block raises the max,
        the old sums are rescaled by `exp(m_old - m_new)`. That is the **online softmax**.
        """),
            setup(),
            md("""
        ## The online softmax in numpy first

        The trick is independent of GPUs: here it is on one vector, in blocks of 4.
        """),
            code("""
        s = rng.standard_normal(10)
        m_run, l_run = -np.inf, 0.0
        for block in np.split(s, [4, 8]):
            m_new = max(m_run, block.max())
            l_run = l_run * np.exp(m_run - m_new) + np.exp(block - m_new).sum()
            m_run = m_new
        print("online:", np.exp(s - m_run) / l_run)
        print("direct:", np.exp(s - s.max()) / np.exp(s - s.max()).sum())
        """),
            code("""
        @tilelab.jit
        def attention(q, k, v, out, n, scale, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
            rows = tl.program_id(0) * BM + tl.arange(0, BM)
            dims = tl.arange(0, D)
            q_t = tl.load(q + rows[:, None] * D + dims[None, :], mask=rows[:, None] < n, other=0.0)
            m_i = tl.full([BM], -float("inf"), tl.float32)
            l_i = tl.zeros([BM], dtype=tl.float32)
            acc = tl.zeros([BM, D], dtype=tl.float32)
            for start in range(0, n, BN):
                keys = start + tl.arange(0, BN)
                k_t = tl.load(k + keys[:, None] * D + dims[None, :], mask=keys[:, None] < n, other=0.0)
                v_t = tl.load(v + keys[:, None] * D + dims[None, :], mask=keys[:, None] < n, other=0.0)
                s = tl.where(keys[None, :] < n, tl.dot(q_t, tl.trans(k_t)) * scale, -float("inf"))
                m_new = tl.maximum(m_i, tl.max(s, axis=1))
                p = tl.exp(s - m_new[:, None])
                alpha = tl.exp(m_i - m_new)
                l_i = l_i * alpha + tl.sum(p, axis=1)
                acc = acc * alpha[:, None] + tl.dot(p, v_t)
                m_i = m_new
            tl.store(out + rows[:, None] * D + dims[None, :], acc / l_i[:, None], mask=rows[:, None] < n)


        def attention_ref(q, k, v):
            s = q @ k.T / np.sqrt(q.shape[1])
            p = np.exp(s - s.max(axis=1, keepdims=True))
            return p / p.sum(axis=1, keepdims=True) @ v


        n, D = 100, 32
        q, k, v = (rng.standard_normal((n, D)).astype(np.float32) for _ in range(3))
        out = np.full((n, D), np.nan, dtype=np.float32)
        attention[(tilelab.cdiv(n, 32),)](q, k, v, out, n, 1 / np.sqrt(D), BM=32, BN=32, D=D, target=TARGET)
        assert_close(out, attention_ref(q, k, v), atol=1e-2, rtol=1e-2)
        """),
            md("""
        **Question.** `acc` stays in registers for the whole loop. In the layouts tab, pick the `tt.dot`
        tile of 32x32: which lanes hold row 0 of the accumulator, and why does `alpha[:, None]` (one
        value per row) then need no data exchange between lanes?
        """),
            code("""
        from tilelab.viz import inspect

        inspect(attention, {"q": "*fp32", "k": "*fp32", "v": "*fp32", "out": "*fp32", "n": "i32", "scale": "fp32"},
                {"BM": 32, "BN": 32, "D": 32}, target=TARGET, show="layouts")
        """),
            md("""
        ## Memory: what was never stored

        The naive version writes and reads the `n x n` scores. For a sequence of 8192 and float32 that is
        256 MiB per head; flash attention's extra memory is `m` and `l`: two floats per query row.
        """),
            code("""
        for seq in (1024, 8192):
            print(f"n={seq}: scores {seq * seq * 4 / 2**20:7.1f} MiB vs running stats {2 * seq * 4 / 2**10:5.1f} KiB")
        """),
            *exercise(
                """
            Causal attention: query `i` may only look at keys `j <= i`. Change the mask of the scores (and, for
            speed, stop the key loop after the last block a program needs). Compare with the reference below.
            """,
                """
            causal_attention = attention  # YOUR CODE HERE: a @tilelab.jit kernel with a causal mask

            def causal_ref(q, k, v):
                s = q @ k.T / np.sqrt(q.shape[1])
                s = np.where(np.tril(np.ones((len(q), len(k)), bool)), s, -np.inf)
                p = np.exp(s - s.max(axis=1, keepdims=True))
                return p / p.sum(axis=1, keepdims=True) @ v
            """,
                """
            causal_attention[(tilelab.cdiv(n, 32),)](q, k, v, out, n, 1 / np.sqrt(D), BM=32, BN=32, D=D, target=TARGET)
            print("largest error:", np.abs(out - causal_ref(q, k, v)).max())
            """,
                """
            @tilelab.jit
            def causal_attention(q, k, v, out, n, scale, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
                rows = tl.program_id(0) * BM + tl.arange(0, BM)
                dims = tl.arange(0, D)
                q_t = tl.load(q + rows[:, None] * D + dims[None, :], mask=rows[:, None] < n, other=0.0)
                m_i = tl.full([BM], -float("inf"), tl.float32)
                l_i = tl.zeros([BM], dtype=tl.float32)
                acc = tl.zeros([BM, D], dtype=tl.float32)
                for start in range(0, tl.minimum(n, (tl.program_id(0) + 1) * BM), BN):
                    keys = start + tl.arange(0, BN)
                    k_t = tl.load(k + keys[:, None] * D + dims[None, :], mask=keys[:, None] < n, other=0.0)
                    v_t = tl.load(v + keys[:, None] * D + dims[None, :], mask=keys[:, None] < n, other=0.0)
                    keep = (keys[None, :] < n) & (keys[None, :] <= rows[:, None])
                    s = tl.where(keep, tl.dot(q_t, tl.trans(k_t)) * scale, -float("inf"))
                    m_new = tl.maximum(m_i, tl.max(s, axis=1))
                    p = tl.exp(s - m_new[:, None])
                    alpha = tl.exp(m_i - m_new)
                    l_i = l_i * alpha + tl.sum(p, axis=1)
                    acc = acc * alpha[:, None] + tl.dot(p, v_t)
                    m_i = m_new
                tl.store(out + rows[:, None] * D + dims[None, :], acc / l_i[:, None], mask=rows[:, None] < n)

            causal_attention[(tilelab.cdiv(n, 32),)](q, k, v, out, n, 1 / np.sqrt(D), BM=32, BN=32, D=D, target=TARGET)
            assert_close(out, causal_ref(q, k, v), atol=1e-2, rtol=1e-2)
            """,
            ),
        ]
    )
