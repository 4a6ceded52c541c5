"""04: layer norm: loops over columns, and fusing the normalisation with the affine transform."""

from .cells import code, exercise, md, setup
from .cells import notebook as _notebook

FILENAME = "04_layer_norm.ipynb"


def notebook():
    return _notebook(
        [
            md("""
        # 04 · Layer norm

        `y = (x - mean(x)) / sqrt(var(x) + eps) * w + b`, per row. Rows can be longer than one tile, so the
        kernel **loops over columns**: a first loop accumulates the sum and the sum of squares, a second one
        normalises and writes. The scale `w` and shift `b` are *fused* into the second loop: no extra pass.
        """),
            setup(),
            code("""
        @tilelab.jit
        def layer_norm(x, y, w, b, n_cols, eps, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            acc = tl.zeros([BLOCK], dtype=tl.float32)
            acc_sq = tl.zeros([BLOCK], dtype=tl.float32)
            for start in range(0, n_cols, BLOCK):
                cols = start + tl.arange(0, BLOCK)
                v = tl.load(x + row * n_cols + cols, mask=cols < n_cols, other=0.0)
                acc += v
                acc_sq += v * v
            mean = tl.sum(acc, axis=0) / n_cols
            rstd = 1.0 / tl.sqrt(tl.sum(acc_sq, axis=0) / n_cols - mean * mean + eps)
            for start in range(0, n_cols, BLOCK):
                cols = start + tl.arange(0, BLOCK)
                mask = cols < n_cols
                v = tl.load(x + row * n_cols + cols, mask=mask, other=0.0)
                out = (v - mean) * rstd * tl.load(w + cols, mask=mask) + tl.load(b + cols, mask=mask)
                tl.store(y + row * n_cols + cols, out, mask=mask)


        def layer_norm_ref(x, w, b, eps):
            mean = x.mean(axis=1, keepdims=True)
            return (x - mean) / np.sqrt(x.var(axis=1, keepdims=True) + eps) * w + b


        m, n = 32, 300
        x = rng.standard_normal((m, n)).astype(np.float32)
        w, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        y = np.full_like(x, np.nan)
        layer_norm[(m,)](x, y, w, b, n, 1e-5, BLOCK=128, target=TARGET)
        assert_close(y, layer_norm_ref(x, w, b, 1e-5), atol=1e-4, rtol=1e-4)
        """),
            md("""
        **Question.** The kernel reads each row twice (statistics, then output). On the roofline tab,
        how many bytes does one program move per row of 300 floats, and what makes it more than 2 x 300
        x 4 (the weights)?
        """),
            code("""
        from tilelab.viz import inspect

        inspect(layer_norm, {"x": "*fp32", "y": "*fp32", "w": "*fp32", "b": "*fp32", "n_cols": "i32", "eps": "fp32"},
                {"BLOCK": 128}, target=TARGET, show="roofline")
        """),
            md("""
        ## The numerics of one pass

        `E[x²] - E[x]²` subtracts two large numbers when the mean is large compared with the spread: float32
        loses the variance. Try rows with a mean of 1000:
        """),
            code("""
        shifted = x + 1000.0
        layer_norm[(m,)](shifted, y, w, b, n, 1e-5, BLOCK=128, target=TARGET)
        error = np.abs(y - layer_norm_ref(shifted.astype(np.float64), w, b, 1e-5)).max()
        print(f"largest error with mean 1000: {error:.3g}")
        """),
            *exercise(
                """
            Make the kernel robust: compute the mean in the first loop, then the variance as the mean of
            `(x - mean)²` in a second loop (three loops in all). Check it on `shifted`.
            """,
                """
            layer_norm_stable = layer_norm  # YOUR CODE HERE: a @tilelab.jit kernel with three loops
            """,
                """
            layer_norm_stable[(m,)](shifted, y, w, b, n, 1e-5, BLOCK=128, target=TARGET)
            print("largest error:", np.abs(y - layer_norm_ref(shifted.astype(np.float64), w, b, 1e-5)).max())
            """,
                """
            @tilelab.jit
            def layer_norm_stable(x, y, w, b, n_cols, eps, BLOCK: tl.constexpr):
                row = tl.program_id(0)
                acc = tl.zeros([BLOCK], dtype=tl.float32)
                for start in range(0, n_cols, BLOCK):
                    cols = start + tl.arange(0, BLOCK)
                    acc += tl.load(x + row * n_cols + cols, mask=cols < n_cols, other=0.0)
                mean = tl.sum(acc, axis=0) / n_cols
                acc = tl.zeros([BLOCK], dtype=tl.float32)
                for start in range(0, n_cols, BLOCK):
                    cols = start + tl.arange(0, BLOCK)
                    v = tl.load(x + row * n_cols + cols, mask=cols < n_cols, other=0.0)
                    d = tl.where(cols < n_cols, v - mean, 0.0)
                    acc += d * d
                rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
                for start in range(0, n_cols, BLOCK):
                    cols = start + tl.arange(0, BLOCK)
                    mask = cols < n_cols
                    v = tl.load(x + row * n_cols + cols, mask=mask, other=0.0)
                    out = (v - mean) * rstd * tl.load(w + cols, mask=mask) + tl.load(b + cols, mask=mask)
                    tl.store(y + row * n_cols + cols, out, mask=mask)

            layer_norm_stable[(m,)](shifted, y, w, b, n, 1e-5, BLOCK=128, target=TARGET)
            assert_close(y, layer_norm_ref(shifted.astype(np.float64), w, b, 1e-5), atol=1e-3, rtol=1e-3)
            """,
            ),
        ]
    )
