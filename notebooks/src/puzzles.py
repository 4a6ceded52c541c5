"""The puzzles notebook: every puzzle of ``tilelab.puzzles`` with a stub, its check and a hidden solution."""

import inspect

import tilelab.puzzles as puzzles
from tilelab.puzzles import solutions

from .cells import code, exercise, md, setup
from .cells import notebook as _notebook

FILENAME = "puzzles.ipynb"


def _stub(p) -> str:
    case = p.make(__import__("numpy").random.default_rng(0))
    params = list(case.args) + [f"{c}: tl.constexpr" for c in p.constants]
    return f"@tilelab.jit\ndef {p.name}({', '.join(params)}):\n    pass  # YOUR CODE HERE\n"


#: after a puzzle, the lab on its solution compiled for the GPU, and a question the picture answers
PICTURES = {
    "transpose": [
        md("""
        **Question.** The solution reads `x` along rows and writes `out` along columns. Open the
        coalescing tab (the solution compiled for an sm_90 GPU: no GPU needed): which access is
        UNCOALESCED, and how many 32-byte sectors does one warp request touch for it against the
        ideal? In the memory line below the table, what do neighbouring lanes write? (The matmul
        chapter shows the fix: a transpose through shared memory, `tl.trans`.)
        """),
        code("""
        from tilelab.puzzles import solutions
        from tilelab.viz import inspect

        inspect(solutions.transpose, {"x": "*fp32", "out": "*fp32", "m": "i32", "n": "i32"},
                {"BM": 32, "BN": 32}, show="coalescing")
        """),
    ],
}


def _cells(name: str) -> list:
    p = puzzles.get(name)
    solution = inspect.getsource(getattr(solutions, name))
    return [
        md(f"## {name} (level {p.level})"),
        code(f'puzzles.show("{name}")'),
        *exercise(
            p.statement.splitlines()[0],
            _stub(p),
            f"puzzles.check({name})",
            f"{solution}\n\npuzzles.check({name}, strict=True)",
        ),
        *PICTURES.get(name, []),
    ]


def notebook():
    cells = [
        md("""
        # Tile puzzles

        Fourteen small kernels, from a copy to flash attention. Each puzzle gives a **numpy spec** (what to
        compute) and the launch (arguments, constants, grid); you write the kernel body. `puzzles.check(kernel)`
        runs it on fresh random sizes with the sanitizer on, and says exactly what is wrong: which elements
        have wrong values, which access went out of bounds (and on which line), which outputs were never
        written. Outputs start poisoned (NaN), so nothing passes by accident.

        Solutions are in collapsed cells: try first.
        """),
        setup("import tilelab.puzzles as puzzles"),
    ]
    for name in puzzles.names():
        cells += _cells(name)
    return _notebook(cells)
