"""Copies narrower than a run of contiguous addresses take each address as the run's first plus a constant.

The axis analysis proves which registers' addresses follow one another; where the copy to shared memory is
split narrower (a K-major shared operand copied 4 bytes at a time), the lowering rebuilds the later addresses
of a run from its first instead of each from an offset of its own. No GPU needed.
"""

import re

import tilelab
import tilelab.language as tl
from tilelab.compiler.backends.cuda.kernel import build_llvm_module


@tilelab.jit
def tutorial_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_bn, stride_cm,
                    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):  # fmt: skip
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = (pid_m * BM + tl.arange(0, BM)) % M
    rn = (pid_n * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    cm = pid_m * BM + tl.arange(0, BM)
    cn = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + cm[:, None] * stride_cm + cn[None, :], acc, mask=(cm[:, None] < M) & (cn[None, :] < N))


def _lowered(kernel, sig, consts, div, num_warps=4, num_stages=3):
    ck = tilelab.compile(kernel, sig, consts, target="cuda:sm_90a", num_warps=num_warps, num_stages=num_stages,
                         divisibility=div, cache=False, snapshots=False)  # fmt: skip
    return str(build_llvm_module(ck.module, ck.options)[0])


def _matmul_ir(stride_bn):
    sig = {n: "*fp32" for n in ("a_ptr", "b_ptr", "c_ptr")} | {
        n: "i32" for n in ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")
    }
    consts = {"BM": 128, "BN": 128, "BK": 32}
    if stride_bn == 1:
        consts["stride_bn"] = 1  # a contiguous torch tensor's unit stride, specialized as a launch does
    else:
        sig["stride_bn"] = "i32"
    return _lowered(tutorial_matmul, sig, consts, {n: 16 for n in sig})


def _sources(text, copy):
    """The global address operand of each ``copy`` inline-PTX call, and the defining line of each value."""
    defs = dict(re.findall(r"^\s+(%\S+) = (.*)$", text, re.M))
    srcs = re.findall(copy + r'.*?ptr addrspace\(1\) noundef (%"?[\w.]+"?)', text)
    return srcs, defs


def test_a_k_major_tf32_operand_copied_4_bytes_at_a_time_steps_from_each_run_first():
    srcs, defs = _sources(_matmul_ir(stride_bn=1), r'"cp\.async\.ca\.shared\.global \[\$0\], \[\$1\], 4')
    assert srcs
    stepped = [s for s in srcs if re.match(r"getelementptr \w+, ptr addrspace\(1\) %\S+, i32 [123] ", defs[s])]
    assert len(stepped) * 4 == len(srcs) * 3  # B's rows of 4 contiguous floats: the first of each its own


def test_negative_a_runtime_stride_proves_no_run():
    srcs, defs = _sources(_matmul_ir(stride_bn=None), r'"cp\.async\.ca\.shared\.global \[\$0\], \[\$1\], 4')
    assert srcs
    assert not [s for s in srcs if re.search(r", i32 [123] ", defs[s])]
