"""03: matrix multiplication: tiling, grouped ordering, tensor cores, shared-memory swizzles."""

from .cells import code, exercise, md, setup
from .cells import notebook as _notebook

FILENAME = "03_matmul.ipynb"


def notebook():
    return _notebook(
        [
            md("""
        # 03 · Matrix multiplication

        `C = A @ B` does `2·M·N·K` FLOPs on `(M·K + K·N + M·N)` elements: plenty of reuse, if the kernel keeps
        tiles close to the cores. This notebook builds the tiled kernel, then looks at the three things that
        make it fast on a GPU: the order of the programs (L2 reuse), tensor cores, and shared-memory layouts
        without bank conflicts.
        """),
            setup(),
            md("""
        ## Tiling

        Program `(pid_m, pid_n)` owns a `BM x BN` tile of `C`. It walks `K` in steps of `BK`, loading a
        `BM x BK` tile of `A` and a `BK x BN` tile of `B`, and accumulates their `tl.dot` in float32.
        Each element of `A` is now read `N / BN` times instead of `N` times.
        """),
            code("""
        @tilelab.jit
        def matmul(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
            rows = tl.program_id(0) * BM + tl.arange(0, BM)
            cols = tl.program_id(1) * BN + tl.arange(0, BN)
            acc = tl.zeros([BM, BN], dtype=tl.float32)
            for k0 in range(0, K, BK):
                ks = k0 + tl.arange(0, BK)
                a_mask = (rows[:, None] < M) & (ks[None, :] < K)
                b_mask = (ks[:, None] < K) & (cols[None, :] < N)
                a_t = tl.load(a + rows[:, None] * K + ks[None, :], mask=a_mask, other=0.0)
                b_t = tl.load(b + ks[:, None] * N + cols[None, :], mask=b_mask, other=0.0)
                acc += tl.dot(a_t, b_t)
            tl.store(c + rows[:, None] * N + cols[None, :], acc, mask=(rows[:, None] < M) & (cols[None, :] < N))


        M, N, K = 96, 80, 72
        a = rng.standard_normal((M, K)).astype(np.float32)
        b = rng.standard_normal((K, N)).astype(np.float32)
        c = np.full((M, N), np.nan, dtype=np.float32)
        matmul[(tilelab.cdiv(M, 32), tilelab.cdiv(N, 32))](a, b, c, M, N, K, BM=32, BN=32, BK=16, target=TARGET)
        assert_close(c, a @ b, atol=5e-2, rtol=1e-2)  # tl.dot on float32 uses TF32, like tensor cores
        """),
            md("""
        **Question.** Compiled for an sm_90 GPU (no GPU needed), the loads of `a` and `b` go through shared
        memory to feed the tensor cores. In the shared-memory tab, how many wavefronts does warp 0's first load
        of the `a` buffer take with the compiler's swizzle, and how many without it (the grid on the right)?
        """),
            code("""
        from tilelab.viz import inspect

        sig = {"a": "*fp32", "b": "*fp32", "c": "*fp32", "M": "i32", "N": "i32", "K": "i32"}
        inspect(matmul, sig, {"BM": 32, "BN": 32, "BK": 16}, target=TARGET, show="shared memory")
        """),
            md("""
        ## Grouped ordering for L2

        Programs run roughly in launch order. Row-major order walks a whole row of `C` tiles: every program
        needs a different column block of `B`, and `B` falls out of the L2 cache before it is reused. Grouping
        `GROUP` rows of tiles together makes consecutive programs share both `A` and `B` tiles. Count the
        distinct tiles of `A` and `B` that the first 16 programs touch:
        """),
            code("""
        def tile_of(pid, grid_m, grid_n, group):
            if group is None:
                return pid // grid_n, pid % grid_n
            width = group * grid_n
            first_m = (pid // width) * group
            size = min(grid_m - first_m, group)
            return first_m + (pid % width) % size, (pid % width) // size

        grid_m = grid_n = 16
        for group in (None, 4):
            tiles = [tile_of(p, grid_m, grid_n, group) for p in range(16)]
            a_tiles, b_tiles = {t[0] for t in tiles}, {t[1] for t in tiles}
            print(f"group={group}: first 16 programs read {len(a_tiles)} row blocks of A and {len(b_tiles)} "
                  f"column blocks of B -> {len(a_tiles) + len(b_tiles)} tiles")
        """),
            md("""
        ## Tensor cores and their layouts

        `mma.sync.m16n8k16` multiplies a 16x16 by a 16x8 tile in one warp instruction. It fixes which lane
        holds which element of the accumulator: a *layout*, here a linear map from (register, lane, warp) bits
        to (row, column) bits. `owner_of` answers which thread holds an element.
        """),
            code("""
        from tilelab.compiler.layouts import mma_m16n8k16_accumulator
        from tilelab.viz import draw_layout

        acc_layout = mma_m16n8k16_accumulator([16, 8], warps_per_cta=[1, 1])
        for element in ([0, 0], [0, 1], [0, 2], [8, 0]):
            warp, lane, register = (int(v[0]) for v in acc_layout.owner_of([element]))
            print(f"C{element} is in warp {warp}, lane {lane}, register {register}")
        draw_layout(acc_layout, "mma m16n8k16 accumulator")
        """),
            md("""
        **Question.** Each cell says `warp:lane:register`. Which elements does lane 5 hold, and what do its
        register 0 and register 2 have in common? Read the bases under the grid: which bit of the lane index
        moves an element down a row?
        """),
            md("""
        ## Shared memory and bank conflicts

        Tiles of `A` and `B` are staged in shared memory, which has 32 banks of 4 bytes. When a warp's 32 lanes
        hit 32 different words in one bank, the access takes 32 *wavefronts* instead of 1. Reading a row-major
        32x32 float tile **by columns** does exactly that; an XOR *swizzle* of the column by the row spreads a
        column over all banks.
        """),
            code("""
        from tilelab.compiler.layouts import bank_conflicts, blocked, row_major_shared, swizzled_shared

        by_rows = blocked([32, 32], [1, 1], [1, 32], [4, 1], [1, 0])     # a warp reads along a row
        by_cols = blocked([32, 32], [1, 1], [32, 1], [1, 4], [0, 1])     # a warp reads down a column
        plain = row_major_shared([32, 32])
        swizzled = swizzled_shared([32, 32], vec=1, per_phase=1, max_phase=32, order=[1, 0])
        for name, shared in (("row-major", plain), ("swizzled", swizzled)):
            print(f"{name:9}: by rows {bank_conflicts(shared, by_rows, 4).wavefronts} wavefront(s), "
                  f"by columns {bank_conflicts(shared, by_cols, 4).wavefronts}")
        """),
            md("""
        The same column read, drawn: rows are wavefronts, columns the 32 banks, each cell the lanes a bank
        serves in that wavefront (red rows: the extra wavefronts of a conflict). Swizzled on the left,
        row-major on the right.

        **Question.** Without the swizzle, which bank serves all 32 lanes? With it, why does every bank get
        exactly one lane?
        """),
            code("""
        from tilelab.viz import draw_banks

        draw_banks([32, 32], 4, reader=by_cols, swizzle=(1, 1, 32))
        """),
            *exercise(
                """
            A padded layout is the other classic fix: make each row 33 floats long. Without building a layout,
            compute the bank of element `(r, 0)` for `r = 0..31` with a row pitch of 32 and of 33 words
            (`bank = word % 32`) and count the largest number of lanes that share a bank.
            """,
                """
            def worst_bank_sharing(pitch):
                banks = [(r * pitch) % 32 for r in range(32)]
                return None  # YOUR CODE HERE: the largest count of equal banks
            """,
                """
            print("pitch 32:", worst_bank_sharing(32), " pitch 33:", worst_bank_sharing(33))
            """,
                """
            def worst_bank_sharing(pitch):
                banks = [(r * pitch) % 32 for r in range(32)]
                return max(banks.count(b) for b in banks)

            assert worst_bank_sharing(32) == 32 and worst_bank_sharing(33) == 1
            """,
            ),
        ]
    )
