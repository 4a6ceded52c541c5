"""The wait after a pipelined wgmma loop, and ptxas's serialized wgmmas (``lower_control.lower_for``).

A wgmma loop's accumulator is waited for after the loop. LLVM rotates the loop into a guard and a body,
and where the two meet the guard's path sets the results to their initial values, in the registers the
wgmmas accumulate in: on some kernels (the probe's GPTQ matmul) ptxas then finds non-wgmma writes of
accumulator registers inside a pipeline stage and makes every wgmma wait for the previous one (its message
C7515; 20% of that kernel's time on an H100). ``compile_kernel`` then compiles the kernel again with such
loops rotated by the lowering, the wait in an exit block only the loop reaches. The values of the kernels
involved are checked on the GPU in ``tests/kernels/test_probe_values.py``.
"""

from __future__ import annotations

import re

import pytest

import tilelab
import tilelab.compiler.backends.cuda as cuda
import tilelab.language as tl
from benchmarks.probe import kernels as K
from tilelab.compiler.backends.cuda import SERIALIZED_WGMMA, find_tool
from tilelab.compiler.backends.cuda.emit import ptx_to_cubin

HAS_PTXAS = find_tool("ptxas") is not None
SIG = {
    "a_ptr": "*fp16", "b_ptr": "*i32", "scales_ptr": "*fp16", "zeros_ptr": "*i32", "c_ptr": "*fp16", "M": "i32",
    "N": "i32", "K": "i32", "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32", "stride_sg": "i32",
    "stride_zg": "i32",
}  # fmt: skip
META = {"GROUP_SIZE": 128, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}


def _compile(warps=8):
    div = {n: 16 for n in SIG}
    return tilelab.compile(tilelab.jit(K.w4a16_matmul_kernel), SIG, META, target="cuda:sm_90a", num_warps=warps,
                           num_stages=3, divisibility=div, snapshots=False, cache=False)  # fmt: skip


def _blocks(llir: str) -> dict[str, tuple[list[str], str]]:
    """Each block of the kernel's LLVM IR: its predecessors (LLVM's ``; preds =`` comment) and its text."""
    out, name, preds, text = {}, None, [], []
    for line in llir.splitlines():
        head = re.match(r"^([\w.]+):\s*(?:;\s*preds = (.*))?$", line)
        if head:
            if name is not None:
                out[name] = (preds, "\n".join(text))
            name, text = head.group(1), []
            preds = [p.strip().lstrip("%") for p in (head.group(2) or "").split(",") if p.strip()]
        elif name is not None:
            text.append(line)
    if name is not None:
        out[name] = (preds, "\n".join(text))
    return out


def _reachable(blocks: dict, start: str) -> set[str]:
    succ = {n: set(re.findall(r"label %([\w.]+)", text)) for n, (_, text) in blocks.items()}
    seen, todo = set(), [start]
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo += succ.get(n, ())
    return seen


def test_the_rotated_loop_waits_in_an_exit_only_the_loop_reaches(monkeypatch):
    compile_to_ptx = cuda.compile_to_ptx
    monkeypatch.setattr(cuda, "compile_to_ptx", lambda m, o, s=None, **_: compile_to_ptx(m, o, s, True))
    blocks = _blocks(_compile().asm["llir"])
    waits = [n for n, (_, text) in blocks.items() if "wgmma.wait_group.sync.aligned 0;" in text]
    assert len(waits) == 1
    (latch,) = blocks[waits[0]][0]  # one predecessor: the loop's last block, which branches back or out
    branch = re.search(r"br i1 %[\w.]+, label %([\w.]+), label %([\w.]+)", blocks[latch][1])
    assert branch and waits[0] in branch.groups()
    (back,) = set(branch.groups()) - {waits[0]}
    assert latch in _reachable(blocks, back)


@pytest.mark.skipif(not HAS_PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("warps", [4, 8])
def test_ptxas_keeps_the_wgmmas_asynchronous(warps):
    compiled = _compile(warps)
    assert SERIALIZED_WGMMA not in ptx_to_cubin(compiled.asm["ptx"], "sm_90a", sass=False).log
    again = [n for n in compiled.metadata["notes"] if "C7515" in n]
    assert len(again) <= 1  # when the first compile was serialized, the note says the kernel was compiled again


@pytest.mark.skipif(not HAS_PTXAS, reason="ptxas not found")
@pytest.mark.parametrize(
    "message, compiles",
    [
        ("(C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized due to non wgmma "
         "instructions defining accumulator registers of a wgmma between start and end of the pipeline stage", 2),
        ("(C7512) Potential Performance Loss: wgmma.mma_async instructions are serialized due to insufficient "
         "register resources for the wgmma pipeline", 1),
    ],
)  # fmt: skip
def test_only_moves_into_the_accumulators_compile_the_kernel_again(monkeypatch, message, compiles):
    """ptxas's C7515 (moves into accumulator registers) is what a rotated loop changes; its C7512 (too few
    registers for the pipeline) is not: such a kernel is compiled once."""
    calls = []
    compile_to_ptx, assemble = cuda.compile_to_ptx, cuda.assemble_in_better_order

    def counted(*args, **kwargs):
        calls.append(kwargs.get("rotate_waited_loops", False))
        return compile_to_ptx(*args, **kwargs)

    def warned(ptx, *args):
        ptx, result = assemble(ptx, *args)
        result.log += f"ptxas info    : {message} in the function 'k'\n"
        return ptx, result

    monkeypatch.setattr(cuda, "compile_to_ptx", counted)
    monkeypatch.setattr(cuda, "assemble_in_better_order", warned)
    tilelab.compile(tilelab.jit(_add), {"x": "*fp32", "y": "*fp32", "n": "i32"}, {"BLOCK": 256},
                    target="cuda:sm_90a", num_warps=4, snapshots=False, cache=False)  # fmt: skip
    assert calls == [False, True][:compiles]


def _add(x, y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + offs, tl.load(x + offs, mask=offs < n), mask=offs < n)
