"""01: vector add, programs and blocks, masks, and memory coalescing."""

from .cells import code, exercise, md, setup
from .cells import notebook as _notebook

FILENAME = "01_vector_add.ipynb"


def notebook():
    return _notebook(
        [
            md("""
        # 01 · Vector add and memory coalescing

        A GPU runs many copies of one function at once. In a *tile* language you write the function for one
        **program** that handles a whole block (a *tile*) of elements; the compiler decides which thread owns
        which element. Here: `out = x + y` for vectors of any length, then *why* the order in which threads touch
        memory matters (coalescing).
        """),
            setup(),
            md("""
        ## One program, one block

        `tl.program_id(0)` says which program this is; `tl.arange(0, BLOCK)` is the tile `[0, 1, ..., BLOCK-1]`.
        Their combination is the tile of indices this program owns. The last block runs past `n`, so every load
        and store takes a **mask**: lanes where it is false touch no memory.
        """),
            code("""
        %load_ext tilelab
        """),
            code("""
        %%tile_kernel --signature "x=*fp32, y=*fp32, out=*fp32, n=i32" --const BLOCK=256 --show coalescing
        def add(x, y, out, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)
        """),
            md("""
        The inspector shows the kernel, the IR after each compiler pass, and the generated code, here for the
        CPU that runs it *and* for an NVIDIA sm_90 GPU (PTX, coalescing, layouts: no GPU needed to compile).

        **Question.** The coalescing tab draws the memory line of warp 0's first request of `x`: the 32-byte
        sectors it touches and the lanes in each. How many bytes does one lane move, how many lanes share a
        sector, and is any byte wasted (grey)? (Its title gives the sectors per request and the efficiency.)

        The launch looks like Triton: the grid (how many programs) in brackets, then the arguments.
        """),
            code("""
        n = 10_000
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        out = np.full(n, np.nan, dtype=np.float32)  # NaN: an element the kernel forgets stays visible
        grid = (tilelab.cdiv(n, 256),)
        add[grid](x, y, out, n, BLOCK=256, target=TARGET)
        assert_close(out, x + y)
        print(f"{grid[0]} programs of 256 elements cover n = {n}")
        """),
            md("""
        ## Coalescing: which bytes a warp asks for

        On an NVIDIA GPU 32 threads (a **warp**) issue each load together, and memory answers in 32-byte
        **sectors**. When neighbouring threads read neighbouring addresses, one request moves exactly the bytes
        asked for; when they are far apart, each thread drags in a whole sector for 4 useful bytes.

        `tilelab.compiler.analysis.access_model` computes this from a **layout** (which thread holds which
        element) and the addresses. Below: a tile of 1024 floats over 4 warps, read with stride 1, 2 and 32.
        """),
            code("""
        from tilelab.compiler.analysis import AxisInfo, access_model
        from tilelab.compiler.analysis.memory_access import affine_addresses
        from tilelab.compiler.layouts import blocked

        layout = blocked([1024], size_per_thread=[1], threads_per_warp=[32], warps_per_cta=[4], order=[0])
        for stride in (1, 2, 32):
            info = AxisInfo((1024 if stride == 1 else 1,), (16,), (1,))  # contiguity, divisibility, constancy
            m = access_model(info, layout, 4, affine_addresses([1024], [stride], elem_bytes=4))
            print(f"stride {stride:2}: {m.sectors_per_request:4.0f} sectors per warp request, "
                  f"{m.efficiency:.0%} of the moved bytes are used")
        """),
            md("""
        With `size_per_thread=[4]` each thread owns 4 consecutive floats and can move them with one 16-byte
        vector instruction: fewer, wider requests. The `coalesce` pass of the GPU pipeline picks this from the
        axis info (contiguity and alignment) of the pointer.
        """),
            code("""
        wide = blocked([1024], size_per_thread=[4], threads_per_warp=[32], warps_per_cta=[4], order=[0])
        m = access_model(AxisInfo((1024,), (16,), (1,)), wide, 4, affine_addresses([1024], [1], elem_bytes=4))
        print(f"{m.vector_bytes}-byte vectors, {m.requests} requests, {m.sectors_per_request:.0f} sectors each, "
              f"efficiency {m.efficiency:.0%}")
        """),
            *exercise(
                """
            Write `axpy`: `out = a * x + y` where `a` is a scalar argument. Check it with the puzzle checker,
            which runs random sizes with the sanitizer on.
            """,
                """
            import tilelab.puzzles as puzzles

            @tilelab.jit
            def axpy(a, x, y, out, n, BLOCK: tl.constexpr):
                offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
                # YOUR CODE HERE: load x and y (masked), store a * x + y
            """,
                """
            puzzles.check(axpy)
            """,
                """
            @tilelab.jit
            def axpy(a, x, y, out, n, BLOCK: tl.constexpr):
                offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
                mask = offs < n
                tl.store(out + offs, a * tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)

            puzzles.check(axpy, strict=True)
            """,
            ),
            *exercise(
                """
            Predict, then compute: how many sectors per request does a stride-8 read of `float32` take with the
            1-element-per-thread layout above? And a stride-1 read of `float16` (2 bytes)?
            """,
                """
            # YOUR PREDICTION HERE
            prediction = {"f32 stride 8": None, "f16 stride 1": None}
            """,
                """
            def sectors(stride, elem_bytes):
                info = AxisInfo((1024 if stride == 1 else 1,), (16,), (1,))
                addr = affine_addresses([1024], [stride], elem_bytes=elem_bytes)
                return access_model(info, layout, elem_bytes, addr).sectors_per_request

            print("f32 stride 8:", sectors(8, 4), " f16 stride 1:", sectors(1, 2), " you said:", prediction)
            """,
                """
            # 32 lanes x 8 floats apart = 32 B apart: one sector per lane. 32 lanes x 2 B = 64 B: 2 sectors.
            assert sectors(8, 4) == 32 and sectors(1, 2) == 2
            """,
            ),
        ]
    )
