"""Basic blocks reordered for registers: the docstring's example, every dependence kept, ptxas's count (no GPU)."""

from __future__ import annotations

import re

import pytest

import tilelab
import tilelab.language as tl
from benchmarks.corpus import kernels as corpus
from tilelab.compiler.backends.cuda import find_tool, ptx_order
from tilelab.compiler.backends.cuda.emit import ptx_to_cubin
from tilelab.compiler.backends.cuda.ptx_order import order_for_registers

HAS_PTXAS = find_tool("ptxas") is not None


def _docstring_example() -> tuple[str, str]:
    doc = ptx_order.__doc__
    before, after = doc.split("before:")[1].split("after:")
    after = after.split("(with")[0]
    lines = lambda text: [re.sub(r"\s+", " ", ln.strip()) for ln in text.strip().splitlines()]  # noqa: E731
    return lines(before), lines(after)


def _entry(lines: list[str]) -> str:
    return ".visible .entry k()\n{\n" + "".join(f"\t{ln}\n" for ln in lines) + "\tret;\n}\n"


def test_the_docstring_example():
    before, after = _docstring_example()
    out = order_for_registers(_entry(before), group=1, min_block=1)
    assert out == _entry(after)


def test_an_order_that_needs_no_fewer_registers_is_kept():
    before, _ = _docstring_example()
    two_chains = _entry([ln for ln in before if not re.search(r"%r(12|22|32)\b", ln)])  # one chain less: no gain
    assert order_for_registers(two_chains, group=1, min_block=1) == two_chains


def _rand_kernel(y_ptr, seed, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    offs = row * stride + cols
    tl.store(y_ptr + offs, tl.rand(seed, offs), mask=cols < n_cols)


def _dropout_rows(x_ptr, r_ptr, y_ptr, seed, stride, n_cols, p, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    offs = row * stride + cols
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    keep = tl.rand(seed, offs) > p
    h = tl.where(keep, x / (1 - p), 0.0) + tl.load(r_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(h, axis=0) / n_cols
    d = tl.where(mask, h - mean, 0.0)
    rstd = 1 / tl.sqrt(tl.sum(d * d, axis=0) / n_cols + 1e-5)
    tl.store(y_ptr + offs, (d * rstd).to(y_ptr.dtype.element_ty), mask=mask)


RAND_SIG = {"y_ptr": "*f32", "seed": "i32", "stride": "i32", "n_cols": "i32"}
DROPOUT_SIG = {"x_ptr": "*bf16", "r_ptr": "*bf16", "y_ptr": "*bf16", "seed": "i32", "stride": "i32", "n_cols": "i32",
               "p": "fp32"}  # fmt: skip
MM = {n: "i32" for n in ["M", "N", "K", "stride_am", "stride_bk", "stride_cm"]}
MM_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", **MM}
MM_META = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "HINTS": False,
           "stride_ak": 1, "stride_bn": 1, "stride_cn": 1}  # fmt: skip


def _compile(kernel, sig, consts, arch="sm_90a", warps=8, order=True, monkeypatch=None):
    if not order:
        monkeypatch.setattr(
            "tilelab.compiler.backends.cuda.assemble_in_better_order", lambda ptx, asm, *_: (ptx, asm(ptx))
        )
    div = {n: 16 for n in sig if n not in ("seed", "p")}
    return tilelab.compile(tilelab.jit(kernel), sig, consts, target=f"cuda:{arch}", num_warps=warps, num_stages=3,
                           divisibility=div, snapshots=False, cache=False)  # fmt: skip


def _ptx(kernel, sig, consts, arch="sm_90a", warps=8, order=True, monkeypatch=None):
    return _compile(kernel, sig, consts, arch, warps, order, monkeypatch).asm["ptx"]


KERNELS = {
    "rand": (_rand_kernel, RAND_SIG, {"BLOCK": 4096}, "sm_90a"),
    "dropout rows": (_dropout_rows, DROPOUT_SIG, {"BLOCK": 4096}, "sm_90a"),
    "matmul sm_80": (corpus.matmul_kernel, MM_SIG, MM_META, "sm_80"),
    "matmul sm_90a": (corpus.matmul_kernel, MM_SIG, MM_META, "sm_90a"),
}


def _reaching(ptx: str) -> tuple[list[str], list[tuple[str, int]], list[tuple[str, str, str]]]:
    """The side effects but loads in order, each load with the count of those before it, and for each read of
    a register the instruction whose write it reads (by text), block by block: what a reordering must leave
    as it was."""
    effects, loads, reads = [], [], []
    last: dict[str, str] = {}
    for raw in ptx.splitlines():
        line = raw.strip()
        if re.match(r"^[$\w]+:", line) or re.match(r"^(@!?%\w+\s+)?(bra|ret)\b", line):
            last = {}
            effects.append(line)
            continue
        m = re.match(r"^(@!?(%\w+)\s+)?([a-z][\w.]*)\s+(.*);$", line)
        if not m or line.startswith("//"):
            continue
        op, rest = m.group(3), m.group(4)
        if rest.startswith(("[", "{")) and op.startswith(("st", "red", "cp", "bar")) or op.startswith(("bar", "st")):
            defs, uses = [], re.findall(r"%\w+", rest)
        elif rest.startswith("{"):
            defs, uses = re.findall(r"%\w+", rest[: rest.index("}")]), re.findall(r"%\w+", rest[rest.index("}") :])
        else:
            first, _, others = rest.partition(",")
            defs, uses = re.findall(r"%\w+", first), re.findall(r"%\w+", others)
        if m.group(2):
            uses.append(m.group(2))
        reads.extend((line, r, last.get(r, "<entry>")) for r in uses)
        if load := re.search(r"(^|;\s*)(@!?%\w+\s+)?ld\.(global|shared|const|local)\.(?!volatile)", line):
            loads.append((line, sum(_orders_load(e, load.group(3)) for e in effects)))
        elif re.match(r"(ld|st|atom|red|bar|shfl|vote|membar|fence|cp|wgmma|mbarrier|call)\.", op):
            if not op.startswith("ld.param"):
                effects.append(line)
        for r in defs:
            last[r] = line
    return effects, sorted(loads), sorted(reads)


def _orders_load(effect: str, space: str) -> bool:
    """Whether a load of ``space`` must stay on its side of ``effect`` (a line): all but shuffles and votes,
    and stores or atomics to another state space, must."""
    if re.match(r"(@!?%\w+\s+)?(shfl|vote|match|redux|activemask)\.", effect):
        return False
    store = re.match(r"(@!?%\w+\s+)?(st|atom|red)\.(\w+\.)*?(global|shared|local)\.", effect)
    return not (store and store.group(4) != space)


def _source_lines(ptx: str) -> list[tuple[str, str | None]]:
    """Each line but the ``.loc`` ones, with the ``.loc`` in force for it."""
    out, loc = [], None
    for line in ptx.splitlines():
        if line.strip().startswith(".loc"):
            loc = line.strip()
        else:
            out.append((line, loc))
    return sorted(out, key=str)


@pytest.mark.parametrize("name", list(KERNELS))
def test_every_dependence_and_side_effect_is_kept(name, monkeypatch):
    kernel, sig, consts, arch = KERNELS[name]
    before = _ptx(kernel, sig, consts, arch, order=False, monkeypatch=monkeypatch)
    for group, loads in [(1, "in place"), (2, "in place"), (4, "in place")] + [(2, mode) for mode in ptx_order.LOADS]:
        after = order_for_registers(before, group=group, loads=loads)
        assert _source_lines(after) == _source_lines(before)
        assert _reaching(after) == _reaching(before)


@pytest.mark.parametrize("name, marks", [("matmul sm_90a", "wgmma.fence"), ("matmul sm_80", "mma.sync")])
def test_blocks_feeding_the_tensor_cores_are_left_alone(name, marks, monkeypatch):
    kernel, sig, consts, arch = KERNELS[name]
    before = _ptx(kernel, sig, consts, arch, order=False, monkeypatch=monkeypatch)
    after = order_for_registers(before, group=1)
    loop = lambda ptx: ptx[ptx.rindex(":", 0, ptx.index(marks)) : ptx.index("bra", ptx.index(marks))]  # noqa: E731
    assert loop(after) == loop(before)


def test_unreadable_ptx_is_returned_unchanged():
    ptx = _entry(["mystery op %r1, %r2;"] + ["add.s32 %r3, %r2, 1;"] * 30 + ["st.global.b32 [%rd1], %r3;"])
    assert order_for_registers(ptx, min_block=1) == ptx


@pytest.mark.skipif(not HAS_PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("name, most", [("rand", 40), ("dropout rows", 40)])
def test_ptxas_allocates_fewer_registers(name, most, monkeypatch):
    kernel, sig, consts, arch = KERNELS[name]
    before = ptx_to_cubin(_ptx(kernel, sig, consts, arch, order=False, monkeypatch=monkeypatch), arch, sass=False)
    monkeypatch.undo()
    compiled = _compile(kernel, sig, consts, arch)
    after = ptx_to_cubin(compiled.asm["ptx"], arch, sass=False)
    assert after.registers <= most < before.registers
    assert after.spill_stores == 0
    assert compiled.metadata["registers"] == after.registers  # the kept PTX is the one assembled
    assert f"{before.registers} -> {after.registers}" in " ".join(compiled.metadata["notes"])


class _Assembled:
    def __init__(self, registers, spills=0, cubin=b"elf"):
        self.registers, self.spill_stores, self.spill_loads, self.cubin = registers, spills, 0, cubin
        self.shared_static, self.notes = 0, []


@pytest.mark.parametrize(
    "original, reordered, keeps",
    [
        (_Assembled(79), _Assembled(32), "reordered"),
        (_Assembled(54), _Assembled(72), "original"),
        (_Assembled(40), _Assembled(40), "original"),  # a tie: the order LLVM gave
        (_Assembled(40), _Assembled(32, spills=8), "original"),  # fewer registers but spills
        (_Assembled(None, cubin=None), _Assembled(None, cubin=None), "original"),  # no ptxas: the driver assembles
    ],
)
def test_ptxas_decides_which_order_is_kept(original, reordered, keeps):
    n = 8  # the docstring's example with eight elements, long enough to be reordered
    ptx = _entry([f"add.s32 %r{10 + i}, %r1, {i};" for i in range(n)]
                 + [f"mul.hi.u32 %r{20 + i}, %r{10 + i}, -766435501;" for i in range(n)]
                 + [f"xor.b32 %r{30 + i}, %r{20 + i}, %r2;" for i in range(n)]
                 + [f"st.global.b32 [%rd1+{4 * i}], %r{30 + i};" for i in range(n)])  # fmt: skip
    assert order_for_registers(ptx) != ptx
    results = {ptx: original, order_for_registers(ptx): reordered}
    text, result = ptx_order.assemble_in_better_order(ptx, results.__getitem__)
    assert (text, result) == ((ptx, original) if keeps == "original" else (order_for_registers(ptx), reordered))


def _loads_then_chains(n: int, space: str) -> list[str]:
    """After a barrier, ``n`` words loaded, each mixed with a hash of its index and stored to ``space``."""
    return (["bar.sync 0;"] + [f"ld.global.b32 %r{50 + i}, [%rd3+{4 * i}];" for i in range(n)]
            + [f"add.s32 %r{10 + i}, %r1, {i};" for i in range(n)]
            + [f"mul.hi.u32 %r{20 + i}, %r{10 + i}, -766435501;" for i in range(n)]
            + [f"xor.b32 %r{30 + i}, %r{20 + i}, %r{50 + i};" for i in range(n)]
            + [f"st.{space}.b32 [%rd1+{4 * i}], %r{30 + i};" for i in range(n)])  # fmt: skip


def _chain(i: int, space: str) -> list[str]:
    return [f"add.s32 %r{10 + i}, %r1, {i};", f"mul.hi.u32 %r{20 + i}, %r{10 + i}, -766435501;",
            f"xor.b32 %r{30 + i}, %r{20 + i}, %r{50 + i};", f"st.{space}.b32 [%rd1+{4 * i}], %r{30 + i};"]  # fmt: skip


def test_loads_move_to_where_they_are_needed():
    ptx = _entry(_loads_then_chains(4, "shared"))
    load = [f"ld.global.b32 %r{50 + i}, [%rd3+{4 * i}];" for i in range(4)]
    kept = ["bar.sync 0;"] + load + sum((_chain(i, "shared") for i in range(4)), [])
    moved = ["bar.sync 0;"] + sum(([load[i]] + _chain(i, "shared") for i in range(4)), [])
    assert order_for_registers(ptx, group=1, min_block=1) == _entry(kept)
    assert order_for_registers(ptx, group=1, min_block=1, loads="between writes") == _entry(moved)


@pytest.mark.parametrize("loads, space", [("between writes", "global"), ("between side effects", "shared")])
def test_loads_do_not_pass_a_store_to_their_space_or_a_barrier(loads, space):
    ptx = order_for_registers(_entry(_loads_then_chains(4, space)), group=1, min_block=1, loads=loads)
    lines = ptx.splitlines()
    loads_at = [k for k, ln in enumerate(lines) if "ld.global" in ln]
    assert lines.index("\tbar.sync 0;") < min(loads_at)
    assert max(loads_at) < lines.index(f"\tst.{space}.b32 [%rd1+0], %r30;")
    assert lines.index("\tld.global.b32 %r51, [%rd3+4];") > lines.index("\txor.b32 %r30, %r20, %r50;")


@pytest.mark.parametrize("registers, keeps", [((64, 48, 44, 40), 3), ((64, 40, 44, 40), 1), ((40, 48, 40, 40), 0)])
def test_ptxas_decides_among_the_orders(registers, keeps):
    ptx = _entry(_loads_then_chains(8, "shared"))
    texts = [ptx] + [order_for_registers(ptx, loads=mode) for mode in ptx_order.LOADS]
    assert len(set(texts)) == 4
    results = {text: _Assembled(r) for text, r in zip(texts, registers)}
    assert ptx_order.assemble_in_better_order(ptx, results.__getitem__) == (texts[keeps], results[texts[keeps]])
    mode = ("original",) + ptx_order.LOADS
    notes = [f"PTX reordered for registers (loads {mode[keeps]}): 64 -> 40"] if keeps else []
    assert results[texts[keeps]].notes == notes


@pytest.mark.parametrize(
    "registers, warps, shared, keeps",
    [
        ((64, 56, 64, 64), 8, 0, 0),  # 64 and 56 registers: 4 programs of 8 warps an SM
        ((64, 56, 40, 48), 8, 0, 2),  # 40 registers: 6 programs, 48: 5
        ((64, 40, 40, 40), 8, 200 * 1024, 0),  # shared memory lets one program reside, whatever the registers
        ((40, 40, 39, 33), 4, 0, 0),  # 33-40 registers take the same 5 * 256 a warp
    ],
)
def test_registers_count_where_they_let_more_warps_reside(registers, warps, shared, keeps):
    ptx = _entry(_loads_then_chains(8, "shared"))
    texts = [ptx] + [order_for_registers(ptx, loads=mode) for mode in ptx_order.LOADS]
    results = {text: _Assembled(r) for text, r in zip(texts, registers)}
    kept = ptx_order.assemble_in_better_order(ptx, results.__getitem__, warps, shared, "sm_90a")
    assert kept == (texts[keeps], results[texts[keeps]])
