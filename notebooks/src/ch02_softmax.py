"""02: reductions and the fused softmax."""

from .cells import code, exercise, md, setup
from .cells import notebook as _notebook

FILENAME = "02_fused_softmax.ipynb"


def notebook():
    return _notebook(
        [
            md("""
        # 02 · Fused softmax and reductions

        `softmax(x)` row by row is three passes in numpy (max, exp-and-sum, divide), each reading the matrix
        from memory. A kernel that holds one row in registers reads it **once** and writes it once: that is
        *fusion*, and for memory-bound work it is most of the speed-up.
        """),
            setup(),
            md("""
        ## Reductions over a tile

        `tl.sum(t, axis=0)`, `tl.max`, `tl.min` fold a tile to a scalar (or a smaller tile). On a GPU the
        compiler lowers them thread → warp shuffles → shared memory; here we only say *what*.
        Masked-off lanes must be neutral: `other=0.0` for a sum, `other=-inf` for a max.
        """),
            code("""
        @tilelab.jit
        def softmax(x, out, n_cols, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            cols = tl.arange(0, BLOCK)
            values = tl.load(x + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
            shifted = values - tl.max(values, axis=0)  # exp of large numbers overflows: subtract the max
            e = tl.exp(shifted)
            tl.store(out + row * n_cols + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)


        def softmax_ref(x):
            e = np.exp(x - x.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)


        m, n = 64, 200
        x = rng.standard_normal((m, n)).astype(np.float32)
        out = np.full_like(x, np.nan)
        softmax[(m,)](x, out, n, BLOCK=tilelab.next_power_of_2(n), target=TARGET)
        assert_close(out, softmax_ref(x))
        """),
            md("""
        **Question.** One program normalizes one row of 256 columns. In the layouts tab, pick the
        `tt.load` tile: which warps hold a row, and how many elements does each lane hold? Since all
        warps share the row, `tl.max` must combine values across warps: find the shared-memory scratch
        it needs in the Resources tab.
        """),
            code("""
        from tilelab.viz import inspect

        inspect(softmax, {"x": "*fp32", "out": "*fp32", "n_cols": "i32"}, {"BLOCK": 256}, target=TARGET, show="layouts")
        """),
            md("""
        ## How much memory does fusion save?

        numpy reads `x` for the max, reads it again for `exp`, writes `e`, reads `e` for the sum, reads it
        again for the division and writes the result: about 6 passes over the matrix. The fused kernel moves
        2 (one read, one write). `count_flops_bytes` counts the kernel's bytes from its IR.
        """),
            code("""
        from tilelab.compiler.analysis import count_flops_bytes

        compiled = tilelab.compile(softmax, signature={"x": "*fp32", "out": "*fp32", "n_cols": "i32"},
                                   constants={"BLOCK": 256}, target=TARGET)
        cost = count_flops_bytes(compiled.module, grid=(m, 1, 1))
        print(f"kernel moves {cost.bytes:,} bytes (tiles are padded to 256 columns); "
              f"numpy moves about {6 * x.nbytes:,}")
        """),
            *exercise(
                """
            Write `row_sum_loop`: the sum of each row of a matrix **wider than the block**. One program per row
            loops over the columns `BLOCK` at a time and carries the partial sum in a tile.
            """,
                """
            import tilelab.puzzles as puzzles

            @tilelab.jit
            def row_sum_loop(x, out, m, n, BLOCK: tl.constexpr):
                row = tl.program_id(0)
                acc = tl.zeros([BLOCK], dtype=tl.float32)
                # YOUR CODE HERE: for start in range(0, n, BLOCK): ...
                tl.store(out + row, tl.sum(acc, axis=0))
            """,
                """
            puzzles.check(row_sum_loop)
            """,
                """
            @tilelab.jit
            def row_sum_loop(x, out, m, n, BLOCK: tl.constexpr):
                row = tl.program_id(0)
                acc = tl.zeros([BLOCK], dtype=tl.float32)
                for start in range(0, n, BLOCK):
                    cols = start + tl.arange(0, BLOCK)
                    acc += tl.load(x + row * n + cols, mask=cols < n, other=0.0)
                tl.store(out + row, tl.sum(acc, axis=0))

            puzzles.check(row_sum_loop, strict=True)
            """,
            ),
        ]
    )
