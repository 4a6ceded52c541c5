"""Hopper tensor cores: ``tt.dot`` -> ``ttng.warp_group_dot`` -> ``wgmma.mma_async`` on sm_90a.

Compile-only tests (need ``ptxas``, which ``tilelab.compile`` runs and which rejects bad
wgmma code) cover the tile shapes and warp counts, the ring slots a pipelined dot reads
(aligned, inside the shared memory, named by the right descriptor in each iteration: the
PTX is evaluated) and, where a disassembler exists, the descriptors' high words in the
SASS (a ptxas miscompile lost them); the value tests (marker ``gpu``) compare
with numpy on random inputs: square and ragged shapes with masked K tails, f16 and bf16,
4 and 8 warps, one and three pipeline stages, and attention's two chained dots.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tilelab
import tilelab.language as tl
from tests.support.gpu_kernels import (
    ATTENTION,
    SHIFTED,
    attention_kernel,
    masked_matmul_bt_kernel,
    masked_matmul_kernel,
    shifted_exp_matmul_kernel,
    shifted_exp_matmul_reference,
)
from tilelab.compiler.backends.cuda import find_tool
from tilelab.compiler.backends.cuda.lower_wgmma import operand_of, plan, warpgroup_offsets
from tilelab.compiler.ir.ops import DotOp, MemDescIndexOp, WarpGroupDotOp

needs_ptxas = pytest.mark.skipif(find_tool("ptxas") is None, reason="ptxas not found")
F16 = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32"}
BF16 = {**F16, "a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*bf16"}


@pytest.fixture(autouse=True)
def arch_in_module(monkeypatch, tmp_path):
    """The wgmma switch on (``TILELAB_CUDA_WGMMA=1``) and a fresh disk cache for each test.

    The runtime's options carry their target's arch (``CompileOptions.arch``), which ``accelerate-dot``
    reads; ``compile_for(state, None, ...)`` compiles with the switch off instead.
    """
    monkeypatch.setenv("TILELAB_CUDA_WGMMA", "1")
    monkeypatch.setenv("TILELAB_CACHE_DIR", str(tmp_path))
    return {"monkeypatch": monkeypatch}


def compile_for(state, arch: str | None, kernel, signature, constants, num_warps=4, num_stages=1):
    """Compile for ``cuda:<arch>`` (``sm_90a`` with the wgmma switch off when ``arch`` is None)."""
    if arch is None:
        state["monkeypatch"].setenv("TILELAB_CUDA_WGMMA", "0")
    target = f"cuda:{arch or 'sm_90a'}"
    return tilelab.compile(
        kernel, signature, constants, target=target, num_warps=num_warps, num_stages=num_stages, cache=False
    )


matmul_kernel = masked_matmul_kernel  # any M, N, K: rows, columns and the K tail are masked
ATTN = ATTENTION


def ops_of(ck, cls):
    return [op for op in ck.module.walk() if isinstance(op, cls)]


# --------------------------------------------------------------------------- compile only


@needs_ptxas
@pytest.mark.parametrize("num_warps", [4, 8])
@pytest.mark.parametrize("bm", [64, 128])
@pytest.mark.parametrize("bn", [64, 128, 256])
@pytest.mark.parametrize("bk", [32, 64])
def test_matmul_shapes_assemble_with_wgmma(arch_in_module, num_warps, bm, bn, bk):
    ck = compile_for(arch_in_module, "sm_90a", matmul_kernel, F16, {"BM": bm, "BN": bn, "BK": bk}, num_warps)
    ptx = ck.asm["ptx"]
    assert len(ops_of(ck, WarpGroupDotOp)) == 1 and not ops_of(ck, DotOp)
    assert ptx.count("wgmma.mma_async") >= bk // 16 and "mma.sync" not in ptx
    assert "fence.proxy.async.shared::cta" in ptx and "wgmma.wait_group.sync.aligned 0" in ptx
    assert ck.metadata["registers"] is not None  # ptxas accepted it


@needs_ptxas
def test_accumulator_struct_is_spelled_once(arch_in_module):
    """The wgmma outputs' struct (64 floats per instruction, 128 through fence and wait) is a named type:
    written once in the LLVM IR, not in each of the hundreds of ``extractvalue`` that read it."""
    ck = compile_for(arch_in_module, "sm_90a", matmul_kernel, F16, {"BM": 128, "BN": 128, "BK": 64}, 4)
    llir = ck.asm["llir"]
    declared = re.findall(r"^%\"?(regs\d+)\"? = type \{ float(?:, float)* \}$", llir, re.M)
    assert sorted(declared) == ["regs0", "regs1"]  # 128 floats (fence, wait), 64 (one wgmma)
    assert llir.count("{ float, float") == 2
    assert len(re.findall(r"extractvalue %\"?regs\d", llir)) >= 128


@needs_ptxas
@pytest.mark.parametrize("stages", [2, 3, 4])
def test_pipelined_operands_feed_the_warp_group_dot_from_their_rings(arch_in_module, stages):
    from tilelab.compiler.ir.ops import AsyncCopyGlobalToLocalOp, MemDescIndexOp

    tiles = {"BM": 128, "BN": 128, "BK": 32}
    ck = compile_for(arch_in_module, "sm_90a", matmul_kernel, F16, tiles, num_warps=8, num_stages=stages)
    (wgd,) = ops_of(ck, WarpGroupDotOp)
    assert all(isinstance(v.defining_op, MemDescIndexOp) for v in wgd.operands[:2])  # read straight from a ring
    assert len(ops_of(ck, AsyncCopyGlobalToLocalOp)) == 2 * stages  # prologue: S-1 stages of A and B, loop: one
    ptx = ck.asm["ptx"]
    assert "cp.async" in ptx and "wgmma.mma_async" in ptx and ck.metadata["registers"] is not None
    assert ck.metadata["spills"] == 0


# --------------------------------------------------------------------------- descriptors of ring slots

RING_TILES = [(128, 128, 32, 8), (128, 128, 64, 4), (64, 128, 32, 4), (64, 32, 16, 4), (128, 256, 32, 8)]
#: ``(tiles, kernel)``: every ring tile with an N-major B, three with a K-major B (``a @ b.T``)
RING_CASES = [(t, matmul_kernel) for t in RING_TILES] + [
    pytest.param(t, masked_matmul_bt_kernel, id=f"{t}-bt") for t in RING_TILES[:3] + RING_TILES[3:4]
]


def operand_buffers(wgd):
    """``(alloc, Operand)`` of A and B of a ``warp_group_dot`` (the ring's alloc when pipelined)."""
    out = []
    for index, v in enumerate(wgd.operands[:2]):
        op = v.defining_op
        alloc = op.ring.defining_op if isinstance(op, MemDescIndexOp) else op
        out.append((alloc, operand_of(v.type.layout, v.type.shape, v.type.element.itemsize, index)))
    return out


@needs_ptxas
@pytest.mark.parametrize("stages", [1, 2, 3, 4])
@pytest.mark.parametrize("tile, kernel", RING_CASES)
def test_operand_slots_are_aligned_and_inside_the_shared_memory(arch_in_module, stages, tile, kernel):
    """Every stage of an operand buffer starts on its swizzle repeat and ends within the launch's shared bytes.

    The swizzle XORs absolute address bits 4-6 with bits 7-9: the dynamic shared memory itself
    is declared 1024-byte aligned.
    """
    bm, bn, bk, num_warps = tile
    tiles = {"BM": bm, "BN": bn, "BK": bk}
    ck = compile_for(arch_in_module, "sm_90a", kernel, F16, tiles, num_warps, num_stages=stages)
    (wgd,) = ops_of(ck, WarpGroupDotOp)
    assert re.search(r"\.extern \.shared \.align 1024 \.b8 \w+\[\]", ck.asm["ptx"])
    for alloc, operand in operand_buffers(wgd):
        assert alloc.stages == stages
        for slot in range(stages):
            start = alloc.attrs["offset"] + slot * alloc.stage_bytes
            assert start % (8 * operand.swizzle) == 0
            assert start + alloc.stage_bytes <= ck.metadata["shared"]


PTX_DEF = re.compile(r"^\s*([a-z][\w.]*)\s+(%\w+),\s*(.*);$")
PTX_WGMMA = re.compile(r"wgmma\.mma_async\S*\s+\{[^}]*\},\s*(%rd\d+),\s*(%rd\d+)")


class Carried(Exception):
    """The value read is the loop-carried register ``args[0]``: its iteration decides it."""


class PtxValues:
    """The values of PTX registers, from the integer instructions that compute them (a descriptor's slice).

    ``%tid.x`` and the loop-carried registers come from ``env``; the shared memory starts at 0.
    A register defined in several places is read from its latest definition before the use,
    unless a later one in a loop around the use reaches it (a loop-carried value: ``Carried``).
    """

    def __init__(self, ptx: str):
        self.defs, labels, self.loops = {}, {}, []
        for i, line in enumerate(ptx.splitlines()):
            if m := PTX_DEF.match(line):
                self.defs.setdefault(m.group(2), []).append((i, m.group(1), [a.strip() for a in m.group(3).split(",")]))
            elif m := re.match(r"^(\$\w+):", line):
                labels[m.group(1)] = i
            elif (m := re.search(r"\bbra(?:\.uni)?\s+(\$\w+);", line)) and labels.get(m.group(1), i) < i:
                self.loops.append((labels[m.group(1)], i))

    def value(self, reg: str, at: int, env: dict) -> int:
        if not reg.startswith("%"):
            return int(reg, 0)
        if reg in env:
            return env[reg]
        defs = self.defs[reg]
        if any(head <= at < line <= end for line, _, _ in defs for head, end in self.loops) and len(defs) > 1:
            raise Carried(reg)
        return self.apply(max(d for d in defs if d[0] < at), env)

    def apply(self, definition, env: dict) -> int:
        line, opcode, args = definition
        parts = opcode.split(".")
        bits = 1 if parts[0] == "setp" else int(parts[-1][1:])
        if args == ["%tid.x"]:
            return env["tid"]
        if args == ["tilelab_smem"]:
            return 0
        v = [self.value(a, line, env) for a in args]
        if parts[0] == "cvt" and parts[-1][0] == "s" and v[0] >> (int(parts[-1][1:]) - 1) & 1:
            v[0] -= 1 << int(parts[-1][1:])  # sign-extend
        ops = {
            "mov": lambda: v[0],
            "cvt": lambda: v[0],
            "add": lambda: v[0] + v[1],
            "mul": lambda: v[0] * v[1],
            "shl": lambda: v[0] << v[1],
            "shr": lambda: v[0] >> v[1],
            "and": lambda: v[0] & v[1],
            "or": lambda: v[0] | v[1],
            "xor": lambda: v[0] ^ v[1],
            "bfe": lambda: v[0] >> v[1] & (1 << v[2]) - 1,
            "selp": lambda: v[0] if v[2] else v[1],
            "shfl": lambda: v[0],  # shfl.sync.idx from lane 0: the threads evaluated here are lane 0
            "setp": lambda: {"eq": v[0] == v[1], "ne": v[0] != v[1], "lt": v[0] < v[1], "ge": v[0] >= v[1]}[parts[1]],
        }
        out_bits = 64 if parts[0] == "mul" and parts[1] == "wide" else bits
        return int(ops[parts[0]]()) & (1 << out_bits) - 1

    def iterations(self, reg: str, count: int) -> list[int]:
        """The values of the loop-carried ``reg`` in the loop's first ``count`` iterations."""
        (head, end) = next(loop for loop in self.loops if any(loop[0] <= d[0] <= loop[1] for d in self.defs[reg]))
        (init,) = [d for d in self.defs[reg] if d[0] < head][-1:]
        (update,) = [d for d in self.defs[reg] if head <= d[0] <= end]
        values = [self.apply(init, {})]
        while len(values) < count:
            values.append(self.apply(update, {reg: values[-1]}))
        return values


def expected_descriptors(wgd, slot: int, warp: int) -> list[tuple[int, int]]:
    """``(A, B)`` descriptors of each instruction of ``wgd`` in warp ``warp`` when it reads ring slot ``slot``."""
    acc = wgd.result.type.layout
    (a_alloc, a), (b_alloc, b) = operand_buffers(wgd)
    a_bits, b_bits = warpgroup_offsets(acc, a, b)

    def start(alloc, bits, offset):
        return (
            alloc.attrs["offset"]
            + slot * alloc.stage_bytes
            + sum(v for i, v in enumerate(bits) if warp >> i & 1)
            + offset
        )

    return [
        (
            a.descriptor(start(a_alloc, a_bits, ins.a_offset)).encode(),
            b.descriptor(start(b_alloc, b_bits, ins.b_offset)).encode(),
        )
        for ins in plan(acc, a, b)
    ]


def ptx_descriptors(values: PtxValues, uses, tid: int, iterations: int) -> list[list[int]]:
    """The registers ``uses`` (``(register, line)``) in thread ``tid``, per loop iteration (once if none is carried)."""
    try:
        return [[values.value(r, line, {"tid": tid}) for r, line in uses]]
    except Carried as carried:
        slot = carried.args[0]
    return [
        [values.value(r, line, {"tid": tid, slot: s}) for r, line in uses] for s in values.iterations(slot, iterations)
    ]


@needs_ptxas
@pytest.mark.parametrize("stages", [1, 2, 3, 4])
@pytest.mark.parametrize("tile, kernel", RING_CASES)
def test_descriptors_name_the_slot_each_iteration_reads(arch_in_module, stages, tile, kernel):
    """The PTX descriptors, evaluated per warpgroup and loop iteration: iteration ``i`` reads ring slot ``i % S``.

    (Two rounds of the ring; from the descriptor's registers back to ``%tid.x`` and the
    loop-carried slot, against the model's descriptors of that slot's slices.)

    Each is a zero-extended 32-bit low word or-ed with a constant high word (SBO, swizzle mode),
    the form that ptxas 12.9 and 13.0 do not miscompile (a 64-bit add did).
    """
    bm, bn, bk, num_warps = tile
    tiles = {"BM": bm, "BN": bn, "BK": bk}
    ck = compile_for(arch_in_module, "sm_90a", kernel, F16, tiles, num_warps, num_stages=stages)
    (wgd,) = ops_of(ck, WarpGroupDotOp)
    ptx = ck.asm["ptx"]
    values = PtxValues(ptx)
    uses = [(r, i) for i, line in enumerate(ptx.splitlines()) for m in PTX_WGMMA.finditer(line) for r in m.groups()]
    assert len(uses) == 2 * len(plan(wgd.result.type.layout, *[o for _, o in operand_buffers(wgd)]))
    for reg, _ in uses:  # the low word or-ed with the constant fields (the high word), not a 64-bit add
        ((_, opcode, (_, constant)),) = values.defs[reg]
        assert opcode == "or.b64" and re.fullmatch(r"-?\d+", constant)
    for warp in range(0, num_warps, 4):
        got = ptx_descriptors(values, uses, 32 * warp, 2 * stages)
        assert len(got) == (2 * stages if stages > 1 else 1)
        for i, descs in enumerate(got):
            want = [d for pair in expected_descriptors(wgd, i % stages, warp) for d in pair]
            assert [hex(d) for d in descs] == [hex(d) for d in want], f"warp {warp}, iteration {i}"


needs_disassembler = pytest.mark.skipif(
    find_tool("ptxas") is None or not (find_tool("nvdisasm") or find_tool("cuobjdump")),
    reason="needs ptxas, and nvdisasm or cuobjdump",
)
SASS_INSTR = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Z][\w.]*)\s+([^;]*);")


def sass_immediate(instrs, i: int, reg: str) -> int | None:
    """The immediate ``reg`` holds at instruction ``i`` (through moves, searching back), or None when computed."""
    for j in range(i - 1, -1, -1):
        pred, opcode, args = instrs[j]
        dst = re.fullmatch(r"(U?R)(\d+)", args[0])
        pair = dst and (".64" in opcode or "WIDE" in opcode) and reg == f"{dst.group(1)}{int(dst.group(2)) + 1}"
        if args[0] != reg and not pair:
            continue
        if pred or pair:
            return None
        src = {"UMOV": 1, "MOV": 1, "R2UR": 1}.get(opcode)
        if opcode == "IMAD.MOV.U32" and args[1:3] == ["RZ", "RZ"]:
            src = 3
        if src is None:
            return None
        if re.fullmatch(r"-?(0x[0-9a-f]+|\d+)", args[src]):
            return int(args[src], 0) & 0xFFFFFFFF
        return sass_immediate(instrs, j, args[src])
    return None


def hgmma_high_words(sass: str) -> list[tuple[int | None, int | None]]:
    """For each ``HGMMA`` (wgmma), the immediate high words of its A and B descriptors (None: computed)."""
    instrs = [(m.group(1), m.group(2), [a.strip() for a in m.group(3).split(",")]) for m in SASS_INSTR.finditer(sass)]
    out = []
    for i, (_, opcode, args) in enumerate(instrs):
        if opcode.startswith("HGMMA"):
            ur = int(re.search(r"gdesc\[UR(\d+)\]", ",".join(args)).group(1))
            out.append((sass_immediate(instrs, i, f"UR{ur + 1}"), sass_immediate(instrs, i, f"UR{ur + 3}")))
    return out


@needs_disassembler
@pytest.mark.parametrize("stages", [1, 3])
@pytest.mark.parametrize("tile, kernel", RING_CASES)
def test_sass_descriptor_high_words_are_immediates(arch_in_module, stages, tile, kernel):
    """In the SASS, every wgmma's descriptors get their high words (SBO, swizzle mode) as immediates.

    ptxas 12.9 and 13.0 miscompiled a descriptor built with a 64-bit add in the pipelined
    loop (128 x 128 x 32, 8 warps, 3 stages): the A descriptor's high word came from a
    register holding a shared-memory address, and the wgmma read far outside its buffer.
    """
    bm, bn, bk, num_warps = tile
    tiles = {"BM": bm, "BN": bn, "BK": bk}
    ck = compile_for(arch_in_module, "sm_90a", kernel, F16, tiles, num_warps, num_stages=stages)
    (wgd,) = ops_of(ck, WarpGroupDotOp)
    want = {(a >> 32, b >> 32) for a, b in expected_descriptors(wgd, 0, 0)}
    got = hgmma_high_words(ck.asm["sass"])
    assert len(got) == len(expected_descriptors(wgd, 0, 0)) and set(got) == want


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_89", "sm_90"])
def test_other_archs_keep_mma_sync(arch_in_module, arch):
    ck = compile_for(arch_in_module, arch, matmul_kernel, F16, {"BM": 128, "BN": 128, "BK": 32}, 8)
    assert not ops_of(ck, WarpGroupDotOp)
    assert "mma.sync.aligned.m16n8k16" in ck.asm["ptx"] and "wgmma.mma_async" not in ck.asm["ptx"]


@needs_ptxas
def test_without_arch_the_mma_sync_path_stays(arch_in_module):
    ck = compile_for(arch_in_module, None, matmul_kernel, F16, {"BM": 64, "BN": 64, "BK": 32}, 4)
    assert not ops_of(ck, WarpGroupDotOp) and "mma.sync" in ck.asm["ptx"]


@needs_ptxas
def test_small_tiles_keep_mma_sync_on_hopper(arch_in_module):
    """M = 32 does not fill a 64-row warpgroup tile: mma.sync stays."""
    ck = compile_for(arch_in_module, "sm_90a", matmul_kernel, F16, {"BM": 32, "BN": 64, "BK": 32}, 4)
    assert not ops_of(ck, WarpGroupDotOp) and "mma.sync" in ck.asm["ptx"]


@needs_ptxas
@pytest.mark.parametrize("num_warps, bn, d", [(4, 64, 64), (8, 128, 128), (8, 64, 128)])
def test_attention_assembles_with_warp_group_dots(arch_in_module, num_warps, bn, d):
    """Both dots use wgmma, also a 128x64 one over two warpgroups stacked along M (n64 instructions)."""
    ck = compile_for(arch_in_module, "sm_90a", attention_kernel, ATTN, {"D": d, "BM": 128, "BN": bn}, num_warps)
    assert len(ops_of(ck, WarpGroupDotOp)) == 2 and not ops_of(ck, DotOp)
    assert ck.asm["ptx"].count("wgmma.commit_group") == 2


@needs_ptxas
@pytest.mark.parametrize(
    "num_warps, bm, bn, d", [(4, 64, 64, 64), (4, 128, 64, 64), (8, 128, 128, 128), (8, 128, 64, 128)]
)
def test_attention_p_feeds_the_second_wgmma_from_registers(arch_in_module, num_warps, bm, bn, d):
    """``p @ v`` takes ``p`` as wgmma's register A (``{a0, a1, a2, a3}``): no store or barrier for it.

    Pipelined (k and v arrive by ``cp.async``), nothing goes through shared memory between the
    first dot's wait and the second dot's fence.
    """
    constants = {"D": d, "BM": bm, "BN": bn}
    ck = compile_for(arch_in_module, "sm_90a", attention_kernel, ATTN, constants, num_warps, num_stages=3)
    first, second = ops_of(ck, WarpGroupDotOp)
    assert not first.a_in_registers and second.a_in_registers
    ptx = ck.asm["ptx"]
    register_a = (
        rf"wgmma\.mma_async\.sync\.aligned\.m64n{d}k16\.f32\.f16\.f16 {{[^}}]*}}, {{%r\d+(, %r\d+){{3}}}}, %rd\d+,"
    )
    assert len(re.findall(register_a, ptx)) == (bm // 64 // (num_warps // 4)) * bn // 16
    lines = ptx.splitlines()
    fences = [i for i, line in enumerate(lines) if "wgmma.fence.sync.aligned" in line]
    waits = [i for i, line in enumerate(lines) if "wgmma.wait_group" in line]
    between = lines[waits[0] : fences[1]]
    assert not [line for line in between if "st.shared" in line or "bar.sync" in line]
    assert ck.metadata["spills"] == 0


@needs_ptxas
def test_attention_waits_once_per_iteration_for_both_dots(arch_in_module):
    """``q @ k`` waits with ``wait_group 0``, which also completes the previous ``p @ v`` (one wait, not two).

    ``p @ v`` itself only commits (``wait_group 1``: the group before it is done); the loop's result
    is waited for after the loop.
    """
    constants = {"D": 64, "BM": 128, "BN": 64}
    ck = compile_for(arch_in_module, "sm_90a", attention_kernel, ATTN, constants, 8, num_stages=3)
    ptx = ck.asm["ptx"]
    waits = re.findall(r"wgmma\.wait_group\.sync\.aligned (\d+);", ptx)
    assert waits == ["0", "1", "0"]
    # in the loop: the copies' wait, one barrier, then q @ k (no second barrier, no proxy fence)
    head = ptx[ptx.index("cp.async.wait_group 1") : ptx.index("wgmma.fence.sync.aligned")]
    assert head.count("bar.sync") == 1 and "fence.proxy.async" not in head


# --------------------------------------------------------------------------- values on a GPU


def _device_arrays(*arrays):
    torch = pytest.importorskip("torch")
    return [torch.from_numpy(np.ascontiguousarray(x)).cuda() for x in arrays]


def run_matmul(state, m, n, k, dtype, bm, bn, bk, num_warps, num_stages, rng, bt=False):
    """``a @ b`` (or, with ``bt``, ``a @ b.T`` of a row-major ``(n, k)`` b: B K-major) against numpy."""
    import ml_dtypes
    import torch

    np_dtype = np.float16 if dtype == "f16" else ml_dtypes.bfloat16
    sig = F16 if dtype == "f16" else BF16
    kernel = masked_matmul_bt_kernel if bt else matmul_kernel
    ck = compile_for(state, "sm_90a", kernel, sig, {"BM": bm, "BN": bn, "BK": bk}, num_warps, num_stages)
    assert ops_of(ck, WarpGroupDotOp) and "wgmma.mma_async" in ck.asm["ptx"]
    (wgd,) = ops_of(ck, WarpGroupDotOp)
    assert wgd.operands[1].type.layout.params["order"] == ((0, 1) if bt else (1, 0))
    a = rng.standard_normal((m, k)).astype(np_dtype)
    b = rng.standard_normal((k, n)).astype(np_dtype)
    tdt = torch.float16 if dtype == "f16" else torch.bfloat16
    a_d = torch.from_numpy(a.astype(np.float32)).to(tdt).cuda()
    b_d = torch.from_numpy(np.ascontiguousarray(b.T if bt else b).astype(np.float32)).to(tdt).cuda()
    c_d = torch.full((m, n), float("nan"), dtype=tdt, device="cuda")
    ck[(-(-m // bm), -(-n // bn))](a_d, b_d, c_d, m, n, k)
    got = c_d.float().cpu().numpy()
    want = a.astype(np.float32) @ b.astype(np.float32)
    tol = 2e-2 if dtype == "f16" else 6e-2
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(k))


@pytest.mark.gpu
@pytest.mark.parametrize(
    "m, n, k, dtype, bm, bn, bk, num_warps",
    [
        (256, 256, 256, "f16", 128, 128, 32, 8),  # the benchmark's tiles
        (512, 384, 320, "f16", 128, 128, 64, 4),  # M repeats in registers, 128B A
        (200, 136, 100, "f16", 64, 128, 32, 4),  # ragged: masked rows, columns and K tail
        (192, 256, 96, "bf16", 64, 128, 32, 8),  # two warpgroups side by side along N
        (256, 512, 128, "f16", 128, 256, 32, 8),  # n256 instructions
        (128, 96, 72, "bf16", 64, 32, 16, 4),  # narrow: 32B swizzles, n32
        (256, 128, 64, "f16", 128, 64, 32, 8),  # two warpgroups stacked along M, n64 instructions
    ],
)
@pytest.mark.parametrize("num_stages", [1, 3])
def test_matmul_values(arch_in_module, rng, m, n, k, dtype, bm, bn, bk, num_warps, num_stages):
    pytest.importorskip("torch")
    run_matmul(arch_in_module, m, n, k, dtype, bm, bn, bk, num_warps, num_stages, rng)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "m, n, k, dtype, bm, bn, bk, num_warps",
    [
        (256, 256, 256, "f16", 128, 128, 32, 8),  # 64B rows along K, two warpgroups stacked
        (200, 136, 100, "f16", 64, 128, 64, 4),  # ragged, 128B rows along K
        (192, 256, 96, "bf16", 64, 128, 32, 8),  # two warpgroups side by side along N
        (128, 96, 72, "bf16", 64, 32, 16, 4),  # narrow: 32B rows, n32
        (256, 128, 256, "f16", 128, 64, 128, 8),  # rows of two atoms along K (attention's q @ k)
    ],
)
@pytest.mark.parametrize("num_stages", [1, 3])
def test_matmul_with_k_major_b_values(arch_in_module, rng, m, n, k, dtype, bm, bn, bk, num_warps, num_stages):
    """``a @ b.T``: B loaded K-contiguous is stored K-major and read with ``imm-trans-b = 0``."""
    pytest.importorskip("torch")
    run_matmul(arch_in_module, m, n, k, dtype, bm, bn, bk, num_warps, num_stages, rng, bt=True)


@needs_ptxas
def test_accumulator_is_not_written_between_fence_and_wgmma(arch_in_module):
    """PTX: registers a wgmma accumulates into must be written before its ``wgmma.fence``.

    Attention's first dot starts from zeros every iteration; their moves must come before the fence.
    """
    ck = compile_for(arch_in_module, "sm_90a", attention_kernel, ATTN, {"D": 64, "BM": 64, "BN": 64}, 4)
    lines = ck.asm["ptx"].splitlines()
    fences = [i for i, line in enumerate(lines) if "wgmma.fence.sync.aligned" in line]
    assert len(fences) == 2
    for start in fences:
        end = next(i for i in range(start, len(lines)) if "wgmma.mma_async" in lines[i])
        acc = set(re.search(r"\{(%r\d+(?:, %r\d+)*)\}", lines[end]).group(1).split(", "))
        written = {m.group(1) for line in lines[start + 1 : end] if (m := re.match(r"\s*\S+\s+(%r\d+),", line))}
        assert not acc & written


@pytest.mark.gpu
@pytest.mark.parametrize(
    "num_warps, bm, bn, d",
    [(4, 64, 64, 64), (8, 128, 64, 64), (8, 64, 64, 64), (8, 128, 64, 128)],
)
def test_attention_values(arch_in_module, rng, num_warps, bm, bn, d):
    """Values of attention with both dots on wgmma, over one warpgroup, two side by side and two stacked along M."""
    torch = pytest.importorskip("torch")
    heads, s = 2, 256
    q, k, v = (rng.standard_normal((heads, s, d)).astype(np.float16) for _ in range(3))
    scale = 1 / np.sqrt(d)
    ck = compile_for(arch_in_module, "sm_90a", attention_kernel, ATTN, {"D": d, "BM": bm, "BN": bn}, num_warps)
    assert len(ops_of(ck, WarpGroupDotOp)) == 2 and not ops_of(ck, DotOp)
    q_d, k_d, v_d = _device_arrays(q, k, v)
    o_d = torch.full((heads, s, d), float("nan"), dtype=torch.float16, device="cuda")
    ck[(s // bm, heads)](q_d, k_d, v_d, o_d, s, scale)
    logits = q.astype(np.float32) @ k.astype(np.float32).transpose(0, 2, 1) * scale
    p = np.exp(logits - logits.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ v.astype(np.float32)
    np.testing.assert_allclose(o_d.float().cpu().numpy(), want, rtol=2e-2, atol=2e-2)


def _wgmma_loop(ptx: str) -> str:
    """The PTX block that holds the wgmma instructions (the K loop's body)."""
    return next(b for b in re.split(r"\n(?=\$L__BB)", ptx) if "wgmma.mma_async" in b)


@needs_ptxas
def test_pipelined_loop_keeps_one_barrier_and_no_fence(arch_in_module):
    """cp.async ring: ``wait_group; bar.sync; wgmma`` then ``bar.sync`` before the refill; the fence is before the loop.

    The barrier ``insert-barriers`` placed after the wait already orders every thread's
    copied bytes. Copied bytes need no proxy fence (``hoist-fences``): it was a ``MEMBAR.ALL.CTA``
    and a ``FENCE.VIEW.ASYNC.S`` each iteration (attention's forward loop ran 4% faster without it on
    an H100; this matmul's loop the same).
    """
    consts = {"BM": 128, "BN": 128, "BK": 64}
    ck = compile_for(arch_in_module, "sm_90a", matmul_kernel, F16, consts, num_warps=8, num_stages=3)
    ptx = ck.asm["ptx"]
    body = _wgmma_loop(ptx)
    assert body.count("bar.sync") == 2 and "fence.proxy.async" not in body
    assert "bar.sync" in body[: body.index("wgmma.mma_async")]
    assert ptx.count("fence.proxy.async") == 1 and ptx.index("fence.proxy.async") < ptx.index(body)


@needs_ptxas
def test_negative_operands_stored_from_registers_keep_their_barrier(arch_in_module):
    """One stage: the operands go registers -> ``st.shared``; a barrier still separates those stores from the dot."""
    consts = {"BM": 64, "BN": 64, "BK": 32}
    ck = compile_for(arch_in_module, "sm_90a", matmul_kernel, F16, consts, num_warps=4, num_stages=1)
    body = _wgmma_loop(ck.asm["ptx"])
    last_store, first_mma = body.rindex("st.shared"), body.index("wgmma.mma_async")
    assert last_store < first_mma and "bar.sync" in body[last_store:first_mma]


@needs_ptxas
def test_epilogue_stores_share_base_registers(arch_in_module):
    """The 128x256 epilogue's ``stmatrix`` (accumulator -> store layout) use a few bases plus immediates.

    Each row address is the thread's XOR constant; constant bits no thread sets are added,
    written into the instruction (``[%r + 128]``) instead of one address register per store.
    Sixteen ``stmatrix.x4`` write the 128 f16 a thread holds (64 ``st.shared.b32`` before).
    """
    consts = {"BM": 128, "BN": 256, "BK": 64}
    ck = compile_for(arch_in_module, "sm_90a", matmul_kernel, F16, consts, num_warps=8, num_stages=3)
    ptx = ck.asm["ptx"]
    epilogue = ptx[ptx.rindex("wgmma.wait_group.sync.aligned 0") :]
    stores = [line for line in epilogue.splitlines() if "stmatrix" in line or "st.shared" in line]
    assert len(stores) == 16 and all("stmatrix.sync.aligned.m8n8.x4.shared.b16" in line for line in stores)
    bases = {re.search(r"\[(%r\w+)", line).group(1) for line in stores}
    assert len(bases) <= len(stores) // 4


@tilelab.jit
def block_ptr_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """The block-pointer matmul: ``tl.advance`` moves both operands along K."""
    a_block = tl.make_block_ptr(a_ptr, (M, K), (K, 1), (tl.program_id(0) * BM, 0), (BM, BK), (1, 0))
    b_block = tl.make_block_ptr(b_ptr, (K, N), (N, 1), (0, tl.program_id(1) * BN), (BK, BN), (1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, K, BK):
        acc += tl.dot(tl.load(a_block, boundary_check=(0, 1)), tl.load(b_block, boundary_check=(0, 1)))
        a_block = tl.advance(a_block, (0, BK))
        b_block = tl.advance(b_block, (BK, 0))
    c_block = tl.make_block_ptr(c_ptr, (M, N), (N, 1), (tl.program_id(0) * BM, tl.program_id(1) * BN), (BM, BN), (1, 0))
    tl.store(c_block, acc.to(tl.float16), boundary_check=(0, 1))


@needs_ptxas
def test_block_pointer_loop_moves_only_the_corner(arch_in_module):
    """The K loop adds ``off * stride`` to one scalar; the rows' i64 products were made before the loop."""
    consts = {"BM": 128, "BN": 128, "BK": 64}
    aligned = {name: 16 for name in F16}  # pointers and sizes multiples of 16: 16-byte copies
    ck = tilelab.compile(
        block_ptr_matmul_kernel, F16, consts, target="cuda:sm_90a", num_warps=8, num_stages=3,
        divisibility=aligned, cache=False,
    )  # fmt: skip
    body = _wgmma_loop(ck.asm["ptx"])
    assert body.count("cp.async.cg") == 8  # (128x64 + 64x128) f16 over 256 threads, 16 bytes each
    assert body.count("mul.lo.s64") + body.count("mul.wide") <= 2  # a scalar corner per operand, no row products


@needs_disassembler
def test_sass_descriptors_stay_in_uniform_registers(arch_in_module):
    """The warp index comes from a ``shfl.sync.idx`` broadcast: ptxas keeps the descriptors on the uniform datapath.

    With ``tid >> 5`` ptxas cannot tell the warpgroup's descriptor offset is one value per
    warp: it builds each descriptor in ordinary registers and moves it (``R2UR``) before
    every ``HGMMA``.
    """
    consts = {"BM": 128, "BN": 256, "BK": 64}
    ck = compile_for(arch_in_module, "sm_90a", matmul_kernel, F16, consts, num_warps=8, num_stages=3)
    assert "shfl.sync.idx" in ck.asm["ptx"]
    opcodes = [m.group(2) for m in SASS_INSTR.finditer(ck.asm["sass"])]
    start = opcodes.index("WARPGROUP.ARRIVE")
    end = max(i for i, op in enumerate(opcodes) if op.startswith("HGMMA"))
    assert sum(op.startswith("HGMMA") for op in opcodes[start : end + 1]) == 4
    assert "R2UR" not in opcodes[start:end]


# --------------------------------------------------------------------------- transposed operands

TWO_WAYS = {"x_ptr": "*fp16", "w_ptr": "*fp16", "y_ptr": "*fp32", "z_ptr": "*fp32"}


@tilelab.jit
def plain_and_transposed_kernel(x_ptr, w_ptr, y_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    """``y = x @ w.T``, ``z = y @ w``: one loaded tile as a transposed and as a plain B operand."""
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])  # [M, N]
    w = tl.load(w_ptr + rm[:, None] * N + rn[None, :])  # [M, N]
    y = tl.dot(x, tl.trans(w))  # [M, M]: B is w transposed
    z = tl.dot(y.to(tl.float16), w)  # [M, N]: B is w itself
    tl.store(y_ptr + rm[:, None] * M + rm[None, :], y)
    tl.store(z_ptr + rm[:, None] * N + rn[None, :], z)


@needs_ptxas
@pytest.mark.parametrize("num_warps", [4, 8])
def test_plain_and_transposed_reads_share_one_buffer(arch_in_module, num_warps):
    """``w`` and ``tl.trans(w)`` are one buffer, the second read through ``ttg.memdesc_trans``; stores stay wide.

    Before, the transposed tile went through a swizzled buffer back into registers, then into its
    own operand buffer one 16-bit element at a time (``st.shared.b16``, attention backward's
    STS.U16); then it had its own buffer, stored from a free transpose, and a load read both ways
    could not be copied asynchronously (its user was the transpose, not one store).
    """
    ck = compile_for(arch_in_module, "sm_90a", plain_and_transposed_kernel, TWO_WAYS, {"M": 128, "N": 64}, num_warps)
    assert len(ops_of(ck, WarpGroupDotOp)) == 2
    stores = re.findall(r"st\.shared\.(\S+)", ck.asm["ptx"])
    assert stores and not [s for s in stores if s in ("b16", "u16")], sorted(set(stores))
    allocs = [str(op.result.type) for op in ck.module.walk() if op.name == "ttg.local_alloc"]
    operands = [a for a in allocs if "nvmma_shared" in a]
    assert len(operands) == 2  # x and w (the second dot reads its A, y, from registers)
    assert len(allocs) == 4  # and the two output tiles' conversions for the stores: nothing else on the way
    (view,) = [op for op in ck.module.walk() if op.name == "ttg.memdesc_trans"]
    assert view.src.defining_op.name == "ttg.local_alloc" and view.src.type.shape == (128, 64)


@pytest.mark.gpu
@pytest.mark.parametrize("num_warps", [4, 8])
def test_transposed_operand_values(arch_in_module, rng, num_warps):
    torch = pytest.importorskip("torch")
    m, n = 128, 64
    x, w = (rng.standard_normal((m, n)).astype(np.float16) for _ in range(2))
    ck = compile_for(arch_in_module, "sm_90a", plain_and_transposed_kernel, TWO_WAYS, {"M": m, "N": n}, num_warps)
    x_d, w_d = _device_arrays(x, w)
    y_d = torch.full((m, m), float("nan"), dtype=torch.float32, device="cuda")
    z_d = torch.full((m, n), float("nan"), dtype=torch.float32, device="cuda")
    ck[(1,)](x_d, w_d, y_d, z_d)
    xf, wf = x.astype(np.float32), w.astype(np.float32)
    y = xf @ wf.T
    np.testing.assert_allclose(y_d.cpu().numpy(), y, rtol=1e-2, atol=1e-2)
    z = y.astype(np.float16).astype(np.float32) @ wf
    np.testing.assert_allclose(z_d.cpu().numpy(), z, rtol=2e-2, atol=5e-2 * np.abs(z).max())


@needs_ptxas
def test_a_loop_of_copied_operands_fences_before_it_and_a_stored_one_per_iteration(arch_in_module):
    """Attention's two dots read copied bytes (and ``p`` from registers): no ``fence.proxy.async`` in the loop.

    The loop stores nothing to shared memory from registers, so its fence goes before the loop
    (``hoist-fences``). A loop that does store its operands keeps one fence per iteration, between
    the stores and the dot (one stage: registers -> ``st.shared``).
    """
    constants = {"D": 64, "BM": 128, "BN": 64}
    ck = compile_for(arch_in_module, "sm_90a", attention_kernel, ATTN, constants, 8, num_stages=3)
    body = _wgmma_loop(ck.asm["ptx"])
    assert body.count("wgmma.commit_group") >= 2 and body.count("fence.proxy.async") == 0
    assert ck.asm["ptx"].count("fence.proxy.async") == 1
    one_stage = compile_for(arch_in_module, "sm_90a", matmul_kernel, F16, {"BM": 64, "BN": 64, "BK": 32}, 4)
    stored = _wgmma_loop(one_stage.asm["ptx"])
    assert stored.index("st.shared") < stored.index("fence.proxy.async") < stored.index("wgmma.mma_async")


@needs_ptxas
def test_a_zero_accumulator_is_not_written(arch_in_module):
    """``qk = tl.dot(q, k)`` starts from zeros: its first wgmma per accumulator tile reads none (``scale-d`` 0).

    No register is zeroed for it (16 ``CS2R`` a loop iteration in the attention backward before);
    ``acc += tl.dot(p, v)`` reads its accumulator in every instruction.
    """
    ck = compile_for(arch_in_module, "sm_90a", attention_kernel, ATTN, {"D": 64, "BM": 64, "BN": 64}, 4, num_stages=3)
    ptx = ck.asm["ptx"]
    scales = re.findall(r"setp\.ne\.b32 p, (\d), 0; wgmma\.mma_async", ptx)
    assert scales == ["0", "1", "1", "1"] + ["1"] * 4  # q @ k: 4 K steps of one m64n64 tile; then p @ v
    loop = _wgmma_loop(ptx)
    zeros = re.findall(r"mov\.(?:b32|f32)\s+%[rf]\d+, (?:0f00000000|0);", loop)
    assert len(zeros) < 8  # the accumulator's 32 registers are not zeroed in the loop


@needs_ptxas
def test_a_statistic_is_copied_once_per_element(arch_in_module):
    """The per-column ``s`` of ``exp2(a - s[None, :]) @ b``, 64 f32 on 128 threads, is copied by 64 of them.

    The other threads hold copies of the same elements in the copy's layout and skip the
    instruction (``@p``); a zero-filling ``cp.async`` of theirs would race with the owner's.
    """
    constants = {"BM": 64, "BN": 64, "BK": 64, "A_COLUMNS": False}
    ck = compile_for(arch_in_module, "sm_90a", shifted_exp_matmul_kernel, SHIFTED, constants, 4, num_stages=3)
    ptx = ck.asm["ptx"]
    owned = re.findall(r"@%p\d+ cp\.async\.ca\.shared\.global \[%r\d+\], \[%rd\d+\], 4", ptx)
    assert len(owned) == 3  # two in the prologue, one in the loop
    assert ck.metadata["spills"] == 0


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k", [(64, 64, 256), (200, 136, 150)])
@pytest.mark.parametrize("num_warps, num_stages", [(4, 1), (4, 3), (8, 4)])
def test_shifted_exp_matmul_values(arch_in_module, rng, m, n, k, num_warps, num_stages):
    """The statistic and the operand computed from it, copied iterations ahead, against numpy (ragged sizes too)."""
    torch = pytest.importorskip("torch")
    constants = {"BM": 64, "BN": 64, "BK": 64, "A_COLUMNS": False}
    ck = compile_for(arch_in_module, "sm_90a", shifted_exp_matmul_kernel, SHIFTED, constants, num_warps, num_stages)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    s = rng.uniform(-1, 1, k).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float16)
    a_d, s_d, b_d = _device_arrays(a, s, b)
    c_d = torch.full((m, n), float("nan"), dtype=torch.float32, device="cuda")
    ck[(-(-m // 64), -(-n // 64))](a_d, s_d, b_d, c_d, m, n, k)
    np.testing.assert_allclose(c_d.cpu().numpy(), shifted_exp_matmul_reference(a, s, b), rtol=2e-2, atol=2e-2)
