"""A small CompiledKernel stand-in for the lab tests: the attributes the inspector reads, nothing else.

The IR texts are generated with random value numbers and column offsets so that the tests
check behaviour (which lines link, which diff rows are marked), not one frozen string.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

SOURCE = """def add(x, y, out, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)
"""

FIRST_LINE = 10  # the kernel starts at line 10 of add.py: IR locs name file lines, not source indices


@dataclass
class FakePassRecord:
    name: str
    seconds: float
    changed: bool
    ir_before: str | None
    ir_after: str | None


@dataclass
class FakeCompiled:
    name: str = "add"
    target: str = "cpu"
    source: str = SOURCE
    filename: str = "/home/user/add.py"
    first_line: int = FIRST_LINE
    asm: dict = field(default_factory=dict)
    metadata: dict = field(default_factory=dict)
    passes: list = field(default_factory=list)


def _loc(line: int, rng: random.Random) -> str:
    return f'loc("add.py":{FIRST_LINE + line}:{rng.randrange(4, 40)})'


def make_ir(rng: random.Random, folded: bool) -> str:
    """IR of the fake kernel; ``folded`` drops the duplicated `arith.muli` (what a pass would change)."""
    b = rng.randrange(64, 4096)
    ops = [
        (1, f"%0 = tt.get_program_id {{axis = 0}} : i32 {_loc(1, rng)}"),
        (2, f"%1 = arith.muli %0, %c{b} : i32 {_loc(2, rng)}"),
        (2, f"%2 = tt.make_range {{end = {b}, start = 0}} : tensor<{b}xi32> {_loc(2, rng)}"),
        (3, f"%3 = arith.cmp slt %2, %n : tensor<{b}xi1> {_loc(3, rng)}"),
        (4, f"%4 = tt.load %x, %3 : tensor<{b}xf32> {_loc(4, rng)}"),
        (4, f"%5 = tt.load %y, %3 : tensor<{b}xf32> {_loc(4, rng)}"),
        (4, f"%6 = arith.addf %4, %5 : tensor<{b}xf32> {_loc(4, rng)}"),
        (4, f"tt.store %out, %6, %3 : tensor<{b}xf32> {_loc(4, rng)}"),
    ]
    if not folded:
        ops.insert(2, (2, f"%9 = arith.muli %0, %c{b} : i32 {_loc(2, rng)}"))
    body = "\n".join(f"  {text}" for _, text in ops)
    return f"tt.func @add(%x: !ptr<f32>, %y: !ptr<f32>, %out: !ptr<f32>, %n: i32) {{\n{body}\n}}\n"


def make_llir() -> str:
    return (
        "define void @add(ptr %x, ptr %y) !dbg !3 {\n"
        "  %1 = call i32 @tl_program_id(i32 0), !dbg !7\n"
        "  %2 = mul i32 %1, 1024, !dbg !8\n"
        "  ret void\n"
        "}\n"
        f"!7 = !DILocation(line: {FIRST_LINE + 1}, column: 10, scope: !3)\n"
        f"!8 = !DILocation(line: {FIRST_LINE + 2}, column: 11, scope: !3)\n"
    )


def make_compiled(seed: int | None = None, target: str = "cpu") -> FakeCompiled:
    """A fake compiled `add` with three passes (the middle one changes the IR) and LLVM IR."""
    rng = random.Random(seed)
    before = make_ir(rng, folded=False)
    after = before.replace(before.splitlines()[3] + "\n", "")
    passes = [
        FakePassRecord("inline", rng.uniform(1e-4, 1e-3), False, before, before),
        FakePassRecord("cse", rng.uniform(1e-4, 1e-3), True, before, after),
        FakePassRecord("dce", rng.uniform(1e-4, 1e-3), False, after, after),
    ]
    asm = {"tile": after, "llir": make_llir()}
    if target.startswith("cuda"):
        asm["ptx"] = f".visible .entry add()\n{{\n\t.loc 1 {FIRST_LINE + 1} 4\n\tmov.u32 %r1, %ctaid.x;\n\tret;\n}}\n"
    metadata = {"compile_seconds": rng.uniform(0.01, 0.2), "num_warps": 4, "shared": 0, "registers": 40}
    return FakeCompiled(target=target, asm=asm, metadata=metadata, passes=passes)
