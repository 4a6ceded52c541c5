"""06: inside the compiler, pass by pass."""

from .cells import code, exercise, md, setup
from .cells import notebook as _notebook

FILENAME = "06_inside_the_compiler.ipynb"


def notebook():
    return _notebook(
        [
            md("""
        # 06 · Inside the compiler, pass by pass

        A kernel goes Python AST → tile IR → passes → LLVM IR → machine code. `tilelab.compile(...,
        snapshots=True)` keeps the IR after every pass in `.passes`, so each step can be read and diffed.
        """),
            setup(),
            code("""
        @tilelab.jit
        def scale_add(x, out, n, alpha, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            two = 1.0 + 1.0                    # plain Python numbers: the IR only ever sees 2.0
            v = tl.load(x + offs, mask=mask) * 1.0  # times one: canonicalize folds it away
            unused = v * 3.0                   # dead code: canonicalize erases it (nothing uses it)
            tl.store(out + offs, v * alpha * two + v * alpha * two, mask=mask)  # a repeat: cse shares it


        compiled = tilelab.compile(scale_add, signature={"x": "*fp32", "out": "*fp32", "n": "i32", "alpha": "fp32"},
                                   constants={"BLOCK": 128}, target=TARGET, snapshots=True)
        for record in compiled.passes:
            print(f"{record.name:14} changed={record.changed!s:5} {record.seconds * 1e3:6.2f} ms")
        """),
            md("""
        ## The IR before any pass

        Each line is one SSA op; `tensor<128xf32>` is a tile. `tt.*` ops are tile ops (program id, ranges,
        loads); `arith.*` are elementwise.
        """),
            code("""
        import re


        def without_locs(ir):
            return re.sub(r" loc\\(.*?\\)$", "", ir, flags=re.M)


        print(without_locs(compiled.passes[0].ir_before))
        """),
            md("""
        ## What each pass changed

        The lines each pass removed (`-`) and added (`+`). Ops are matched across the two snapshots by their
        identity (`Op.uid`), not by their text: when an op goes away, every later SSA name shifts by one, and a
        text diff would show all those lines as changed. Here only what the pass did is shown.
        """),
            code("""
        from tilelab.viz.models import pass_diff_rows

        for record in compiled.passes:
            if record.changed:
                print(f"--- {record.name}")
                for row in pass_diff_rows(record):
                    if row.kind != "same":
                        print("+" if row.kind == "add" else "-", row.text.strip())
        """),
            md("""
        Note that `dce` finds nothing left to do: `canonicalize` already erased `unused` (it drops pure ops
        whose results nobody uses as it simplifies), so the dead-code pass reports "unchanged". And
        `1.0 + 1.0` never reaches the IR as an addition: the frontend evaluates Python numbers itself, so
        the IR starts with the constant `2.0`.
        """),
            md("""
        ## After the passes: LLVM IR

        The final tile IR is lowered to LLVM IR (`compiled.asm["llir"]` on the CPU and CUDA targets), which
        LLVM optimises and turns into machine code (`asm`) or PTX (`ptx`).
        """),
            code("""
        print(sorted(compiled.asm))
        llir = compiled.asm.get("llir", "")
        print("\\n".join(llir.splitlines()[:25]))
        """),
            md("""
        ## The GPU passes, on any machine

        Compiling for `target="cuda:sm_90"` needs no GPU: the passes, the LLVM IR and the PTX are all made
        here (SASS too when `ptxas` is installed). The CUDA pipeline adds the passes that place every tile
        on threads (`assign-layouts`, `coalesce`), compute index tiles again in each layout instead of moving
        them between threads (`rematerialize`), stage the dot's operands in swizzled shared memory for the
        tensor cores (`accelerate-dot`, `convert-through-shared`) and overlap the loop's loads with its math
        (`software-pipeline`), then place the shared buffers and the barriers.
        """),
            code("""
        @tilelab.jit
        def small_matmul(a, b, c, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
            rm = tl.arange(0, BM)
            rn = tl.arange(0, BN)
            rk = tl.arange(0, BK)
            acc = tl.zeros((BM, BN), dtype=tl.float32)
            for k in range(0, K, BK):
                x = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
                y = tl.load(b + (k + rk)[:, None] * BN + rn[None, :])
                acc += tl.dot(x, y)
            tl.store(c + rm[:, None] * BN + rn[None, :], acc)


        MATMUL_SIG = {"a": "*fp16", "b": "*fp16", "c": "*fp32", "K": "i32"}
        MATMUL_TILES = {"BM": 64, "BN": 64, "BK": 32}
        gpu = tilelab.compile(small_matmul, signature=MATMUL_SIG, constants=MATMUL_TILES, target="cuda:sm_90",
                              num_stages=3, snapshots=True)
        for record in gpu.passes:
            print(f"{record.name:26} changed={record.changed!s:5} {record.seconds * 1e3:6.2f} ms")
        """),
            md("""
        ## Software pipelining

        Without it, every iteration waits for its tiles to arrive from memory before the tensor cores can
        start. `software-pipeline` gives each operand a *ring* of `num_stages` shared buffers: before the loop
        it starts the copies (`cp.async`) for the first `num_stages - 1` iterations; in iteration `i` it waits
        for the oldest copy, starts the copy for iteration `i + num_stages - 1` into the slot just freed, and
        computes on stage `i`. One barrier per iteration is all the ring needs. Here are the ops of the final
        loop (types left out):
        """),
            code("""
        final = without_locs(gpu.asm["tile"])
        loop = final[final.index("scf.for"):]
        for line in loop.splitlines():
            if re.search(r"ttg\\.|scf\\.|tt\\.dot|gpu\\.barrier", line):
                print(line.split(" : ")[0][:110])
            if "scf.yield" in line:
                break
        """),
            *exercise(
                """
            Each stage of the rings holds one 64x32 tile of `a` and one 32x64 tile of `b`, both f16. How many
            bytes of shared memory does `small_matmul` take with `num_stages` 1, 2, 3 and 4
            (`compiled.metadata["shared"]`)? Predict first. Why are 1 and 2 stages the same? (Hint: the
            epilogue converts the 64x64 f32 accumulator through shared memory after the loop, and
            `allocate-shared-memory` lets buffers that are never alive together share bytes.)
            """,
                """
            shared_bytes = {}  # YOUR CODE HERE: num_stages -> bytes
            """,
                """
            print(shared_bytes)
            """,
                """
            shared_bytes = {
                s: tilelab.compile(small_matmul, signature=MATMUL_SIG, constants=MATMUL_TILES, target="cuda:sm_90",
                                   num_stages=s).metadata["shared"]
                for s in (1, 2, 3, 4)
            }
            print(shared_bytes)  # the 16 KB epilogue buffer reuses the rings' bytes after the loop
            assert shared_bytes[4] - shared_bytes[3] == 64 * 32 * 2 + 32 * 64 * 2
            assert shared_bytes[1] == shared_bytes[2] == 64 * 64 * 4
            """,
            ),
            md("""
        The inspector shows all of this side by side: the **Passes** tab has the same diffs, and choosing a
        kernel line highlights the IR it became. Here a kernel that asks for the same range twice:

        **Question.** Open the `cse` pass: how many lines did it remove, and why did none of the later
        lines, whose SSA numbers all moved, count as a change? Tick "show locations": which cell line did
        the removed op come from?
        """),
            code("""
        from tilelab.viz import inspect


        @tilelab.jit
        def twice(x, out, BLOCK: tl.constexpr):
            a = tl.arange(0, BLOCK)
            b = tl.arange(0, BLOCK)  # the same range again: cse keeps one
            tl.store(out + a, tl.load(x + b) * 2.0)


        inspect(twice, {"x": "*fp32", "out": "*fp32"}, {"BLOCK": 128}, target=TARGET, show="passes:cse")
        """),
            *exercise(
                """
            Which pass removed the line `unused = v * 3.0`? Find it from `compiled.passes` in code: the first
            pass whose `ir_before` has more `arith.mul` ops than its `ir_after`.
            """,
                """
            remover = None  # YOUR CODE HERE
            """,
                """
            print("removed by:", remover)
            """,
                """
            remover = next(r.name for r in compiled.passes
                           if r.ir_before.count("arith.mul") > r.ir_after.count("arith.mul"))
            print(remover)
            assert remover == "canonicalize"
            """,
            ),
        ]
    )
