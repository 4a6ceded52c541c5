"""08: debugging: the sanitizer, device_print, reading errors."""

from .cells import code, exercise, md, setup
from .cells import notebook as _notebook

FILENAME = "08_debugging.ipynb"


def notebook():
    return _notebook(
        [
            md("""
        # 08 · Debugging

        Three tools: **compile errors** that name your line, the **sanitizer** (`sanitize=True`) that stops an
        out-of-bounds access with the line, program and element, and **`tl.device_print`** to look inside.
        """),
            setup(),
            md("""
        ## Reading a compile error

        Shapes must agree (or broadcast). The message is short and points at the line:
        """),
            code("""
        from tilelab.compiler.frontend import CompilationError


        @tilelab.jit
        def shapes(x, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            wrong = offs + tl.arange(0, 64)
            tl.store(x + offs, wrong)


        try:
            shapes[(1,)](np.zeros(128, np.int32), BLOCK=128, target=TARGET)
        except CompilationError as error:
            print(error)
        """),
            md("""
        ## The sanitizer

        A missing mask reads past the end of the array. On a GPU that is silent garbage (or a crash far away);
        with `sanitize=True` the launch stops at the faulting access:
        """),
            code("""
        from tilelab.compiler.interpreter import KernelRuntimeError


        @tilelab.jit
        def copy_unmasked(x, out, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(out + offs, tl.load(x + offs))


        x = rng.standard_normal(1000).astype(np.float32)
        out = np.empty_like(x)
        try:
            copy_unmasked[(tilelab.cdiv(1000, 256),)](x, out, 1000, BLOCK=256, target=TARGET, sanitize=True)
        except KernelRuntimeError as error:
            print(error)
        """),
            md("""
        ## Looking inside with `device_print`

        `tl.device_print(prefix, tile)` prints every element with its program id and index. Keep the tile small.
        """),
            code("""
        @tilelab.jit
        def peek(x, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.device_print("x", tl.load(x + offs, mask=offs < n, other=0.0))


        _ = peek[(1,)](np.arange(4, dtype=np.float32), 4, BLOCK=4, target=TARGET)
        """),
            md("""
        ## Unwritten outputs

        Fill outputs with NaN before a launch: an element the kernel never writes stays NaN, where zeros would
        hide it. The puzzle checker does this for you and says where.
        """),
            code("""
        import tilelab.puzzles as puzzles


        @tilelab.jit
        def copy(x, out, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)  # bug: forgets the program id
            mask = offs < n
            tl.store(out + offs, tl.load(x + offs, mask=mask), mask=mask)


        puzzles.check(copy)
        """),
            md("""
        **Question.** In the coalescing tab, set program x to 1: do its addresses differ from program
        0's? That is the bug the checker found: every program copies the same block.
        """),
            code("""
        from tilelab.viz import inspect

        inspect(copy, {"x": "*fp32", "out": "*fp32", "n": "i32"}, {"BLOCK": 128}, target=TARGET, show="coalescing")
        """),
            *exercise(
                """
            Fix `copy` above (one line) so that the checker passes.
            """,
                """
            # YOUR CODE HERE: redefine copy
            """,
                """
            puzzles.check(copy)
            """,
                """
            @tilelab.jit
            def copy(x, out, n, BLOCK: tl.constexpr):
                offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
                mask = offs < n
                tl.store(out + offs, tl.load(x + offs, mask=mask), mask=mask)

            puzzles.check(copy, strict=True)
            """,
            ),
        ]
    )
