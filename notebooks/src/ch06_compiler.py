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
            two = 1.0 + 1.0                    # a constant the canonicalizer folds
            v = tl.load(x + offs, mask=mask)
            unused = v * 3.0                   # dead code: dce removes it
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

        A unified diff of the IR before and after each pass that changed something.
        """),
            code("""
        import difflib

        for record in compiled.passes:
            if record.changed:
                before, after = without_locs(record.ir_before), without_locs(record.ir_after)
                diff = difflib.unified_diff(before.splitlines(), after.splitlines(),
                                            "before " + record.name, "after " + record.name, lineterm="", n=0)
                print("\\n".join(diff), end="\\n\\n")
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
        The inspector shows all of this side by side: the **Passes** tab has the same diffs, and choosing a
        kernel line highlights the IR it became.
        """),
            code("""
        from tilelab.viz import Inspector

        Inspector(compiled, show="passes")
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
            assert remover in {"canonicalize", "cse", "dce"}
            """,
            ),
        ]
    )
